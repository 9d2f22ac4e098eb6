"""gridbench's vLLM command lines through vLLM's own ``vllm serve`` parser (bench/vllm_cli_check.py).

The parser check runs where vLLM is importable: in this interpreter, or in the one
``GRIDBENCH_VLLM_PYTHON`` names (for instance an environment ``bench/vllm_cli_check.py --install``
made). Elsewhere, as in CI, which does not install vLLM, it is skipped; what the check covers is
tested everywhere.
"""

import importlib.util
import os
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import vllm_cli_check as check  # noqa: E402

from orchestrator.sweep import SWEEPS_DIR  # noqa: E402


def vllm_python() -> str:
    named = os.environ.get("GRIDBENCH_VLLM_PYTHON")
    if named:
        return named
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed in this interpreter (CI does not install it): "
                    "bench/vllm_cli_check.py runs this check in throwaway environments, "
                    "or set GRIDBENCH_VLLM_PYTHON to a Python that has vllm")
    return sys.executable


@pytest.fixture(scope="module")
def commands() -> list[check.ServeCommand]:
    return check.serve_commands()


def test_the_check_covers_every_vllm_served_model_and_test_spec(commands):
    sources = " ".join(c.source for c in commands)
    # read the sweep files directly, not through the code under test
    for path in sorted(SWEEPS_DIR.glob("*.yaml")):
        for entry in yaml.safe_load(path.read_text())["models"]:
            if (entry.get("serve") or {}).get("engine") == "vllm":
                assert f"orchestrator/sweeps/{path.name} ({entry['name']})" in sources
    assert "docs/cluster.md:" in sources and "bench/gpu_vllm_check.sh (vllm-small)" in sources
    specs, opaque = check.literal_test_specs()
    assert not opaque, f"serve specs in tests that are not literals, so never checked: {opaque}"
    assert "tests/serving/test_serving_command_lines.py" in " ".join(where for where, _ in specs)
    # every way vllm_command can shape a command line is among them
    flags = {a for c in commands for a in c.argv}
    for flag in ("--distributed-executor-backend", "--no-enable-prefix-caching", "--enable-prefix-caching",
                 "--reasoning-parser", "--max-model-len", "--limit-mm-per-prompt", "--generation-config", "--dtype"):
        assert flag in flags, flag
    assert all(c.argv[:2] == ["vllm", "serve"] for c in commands)


def test_the_checked_versions_start_at_the_extras_floor():
    # pytest's own dependency
    from packaging.requirements import Requirement
    from packaging.version import Version

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["vllm"]
    (requirement,) = [Requirement(r) for r in extra if Requirement(r).name == "vllm"]
    (floor,) = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    checked = [Version(v) for v in check.CHECKED_VERSIONS]
    assert min(checked) == floor  # 0.10 == 0.10.0
    assert all(requirement.specifier.contains(v) for v in checked)


@pytest.mark.slow  # about a minute: vLLM's imports
def test_every_command_line_passes_vllms_own_parser(commands):
    python = vllm_python()
    real = commands[0]
    with_parser = next(c for c in commands if "--reasoning-parser" in c.argv)
    at = with_parser.argv.index("--reasoning-parser") + 1
    # each layer of the check must be able to say no
    probes = [
        replace(real, source="probe: unknown flag", argv=[*real.argv, "--no-such-flag"]),
        replace(with_parser, source="probe: unknown reasoning parser",
                argv=[*with_parser.argv[:at], "no-such-parser", *with_parser.argv[at + 1:]]),
        replace(real, source="probe: wrong meaning", expected={**real.expected, "seed": real.expected["seed"] + 1}),
    ]
    version, results = check.run_check(python, [*commands, *probes])
    assert version
    said = {c.source: r for c, r in zip([*commands, *probes], results, strict=True)}
    rejected = {s: f"{r['stage']}: {r['message']}" for s, r in said.items()
                if not r["accepted"] and not s.startswith("probe:")}
    assert not rejected, f"vLLM {version} rejects: {rejected}"
    assert not said["probe: unknown flag"]["accepted"] and "--no-such-flag" in said["probe: unknown flag"]["message"]
    assert not said["probe: unknown reasoning parser"]["accepted"]
    assert "no-such-parser" in said["probe: unknown reasoning parser"]["message"]
    assert said["probe: wrong meaning"]["stage"] == "meaning" and not said["probe: wrong meaning"]["accepted"]
