"""Every vLLM command line gridbench builds, fed to vLLM's own ``vllm serve`` argument parser, and
every request body it sends to vLLM, validated by vLLM's own ``ChatCompletionRequest``.

    python bench/vllm_cli_check.py [--install] [--vllm VERSION ...] [--venvs DIR]

No GPU and no model weights are needed. Each vLLM version lives in its own throwaway virtual
environment, ``DIR/vllm-VERSION`` (default DIR: ``gridbench-vllm-cli`` in the system's temporary
folder), made with the Python running this script and ``pip install vllm==VERSION`` from PyPI
(8-10 GB and a few minutes each). ``--install`` makes the missing ones; without it a version
whose environment is missing is reported as skipped, so ``bench/run_all.py`` stays quick until
someone opts in by installing once.

The command lines (``serve_commands``): the ``serve:`` entries of the shipped sweeps and of the
sweeps written out in docs/*.md, README.md and bench/gpu_vllm_check.sh, resolved by
``ServerPool.for_sweep`` exactly as ``gridbench run`` resolves them, and every literal vLLM serve
spec in tests/ that ``parse_serve`` accepts, resolved for the default protocol and concurrency.
Each one goes, as the exact argv ``vllm_command`` builds, through vLLM's own CLI entry point
(``vllm.entrypoints.cli.main.main``) with only the serve subcommand's dispatch replaced, so
parsing and ``ServeSubcommand.validate`` run as for ``vllm serve``; then the reasoning parser is
looked up in vLLM's registry, ``AsyncEngineArgs.from_cli_args`` builds the engine arguments
(no engine, no model download), and the values vLLM ended up with are compared with the spec.
vLLM is told it runs on its CPU platform, the way its own ``vllm bench`` does on machines
without an accelerator (the parser's defaults need a device type, and CUDA's platform cannot
load without a driver).

The request bodies (``request_bodies``): the first turn's body of every vLLM-served model entry of
the shipped sweeps under each of its conditions, as the openai client posts it, and the same with
a ``thinking_token_budget`` (which no shipped sweep sends, but a sweep may). Each goes through
vLLM's ``ChatCompletionRequest`` (the pydantic model of its OpenAI-compatible server); a body it
rejects, or a top-level field it does not declare (vLLM ignores such fields, with a debug log
line only), fails the check.

One line per command line or body and version: accepted, or rejected with vLLM's message. Exit
code 1 when any is rejected.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_results import record

ROOT = Path(__file__).resolve().parent.parent
# the oldest release the `vllm` extra admits (pyproject.toml) and the newest checked
CHECKED_VERSIONS = ("0.20.0", "0.33.0")
DEFAULT_VENVS = Path(tempfile.gettempdir()) / "gridbench-vllm-cli"
# a served litellm model string for specs that come without one (the tests' literal specs)
PLACEHOLDER_MODEL = "hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct"
# what Ray would report as a node's address for `host: node-ip` (the check runs without Ray)
PLACEHOLDER_NODE_IP = "10.0.0.2"
INSTALL_TIMEOUT_S = 3600
CHECK_TIMEOUT_S = 1200


@dataclass(frozen=True)
class ServeCommand:
    source: str  # where the spec comes from: file and model entry or line
    argv: list[str]  # exactly what ``vllm_command`` builds, executable first
    expected: dict[str, Any]  # engine-argument values the spec means, by vLLM's argument name


# ---- the command lines (gridbench's interpreter) ------------------------------------------------
# Project imports live inside these functions: the `--inside` mode runs in the throwaway
# environment, which holds vLLM but not gridbench's dependencies.

def serve_commands() -> list[ServeCommand]:
    """Every vLLM command line the shipped sweeps, the documented sweeps and the tests give."""
    commands = []
    for source, sweep in _sweeps():
        commands += _commands_of_sweep(source, sweep)
    commands += _commands_of_test_specs()
    # one check per distinct command line, naming every place that gives it
    by_argv: dict[tuple[str, ...], ServeCommand] = {}
    for c in commands:
        seen = by_argv.get(tuple(c.argv))
        by_argv[tuple(c.argv)] = c if seen is None else ServeCommand(f"{seen.source}, {c.source}", c.argv, c.expected)
    return list(by_argv.values())


def _sweeps() -> list[tuple[str, Any]]:
    import yaml

    from orchestrator.sweep import load_sweep, parse_sweep, shipped_sweeps

    out = [(f"orchestrator/sweeps/{name}.yaml", load_sweep(name)) for name in shipped_sweeps()]
    documents = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
    for path in documents:
        text = path.read_text(encoding="utf-8")
        for fence in re.finditer(r"```yaml\n(.*?)```", text, re.S):
            if "engine: vllm" not in fence.group(1):
                continue
            data = yaml.safe_load(fence.group(1))
            if isinstance(data, dict) and "models" in data:  # a whole sweep, not a snippet of one
                line = text.count("\n", 0, fence.start()) + 1
                source = f"{path.relative_to(ROOT)}:{line}"
                out.append((source, parse_sweep(data, source)))
    out.append(("bench/gpu_vllm_check.sh", parse_sweep(yaml.safe_load(_gpu_check_sweep()), "bench/gpu_vllm_check.sh")))
    return out


def _gpu_check_sweep() -> str:
    """The sweep bench/gpu_vllm_check.sh writes, with its default model and the eval mazes."""
    script = (ROOT / "bench" / "gpu_vllm_check.sh").read_text(encoding="utf-8")
    model = re.search(r'^MODEL="\$\{1:-([^}]+)\}"', script, re.M)
    body = re.search(r"<<YAML\n(.*?)^YAML$", script, re.S | re.M)
    if model is None or body is None:
        raise ValueError("bench/gpu_vllm_check.sh: no MODEL default or no <<YAML sweep found")
    return body.group(1).replace("$MODEL", model.group(1)).replace("[$MAZES]", "eval")


def _commands_of_sweep(source: str, sweep: Any) -> list[ServeCommand]:
    return [_command(f"{source} ({m.name})", m.model, sweep.serve_spec(m))
            for m in sweep.models if m.serve is not None and m.serve.engine == "vllm"]


def literal_test_specs() -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """The literal ``{"engine": "vllm", ...}`` mappings and ``ServeSpec(engine="vllm", ...)``
    calls in tests/, by file and line; and where such a spec is not all literals, so it cannot
    be checked here."""
    specs, opaque = [], []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                # a key of None is a ``**spread``
                fields = list(zip([k.value if isinstance(k, ast.Constant) else k for k in node.keys],
                                  node.values, strict=True))
            elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ServeSpec":
                fields = [(None, a) for a in node.args] + [(k.arg, k.value) for k in node.keywords]
            else:
                continue
            engine = dict((k, v) for k, v in fields if isinstance(k, str)).get("engine")
            if not (isinstance(engine, ast.Constant) and engine.value == "vllm"):
                continue
            try:
                if not all(isinstance(k, str) for k, _ in fields):
                    raise ValueError("not all fields are named")
                specs.append((f"{where}:{node.lineno}", {k: ast.literal_eval(v) for k, v in fields}))
            except ValueError:
                opaque.append(f"{where}:{node.lineno}")
    return sorted(specs, key=_file_line), sorted(opaque, key=_file_line)


def _file_line(item: tuple[str, Any] | str) -> tuple[str, int]:
    where = item[0] if isinstance(item, tuple) else item
    path, line = where.rsplit(":", 1)
    return path, int(line)


def _commands_of_test_specs() -> list[ServeCommand]:
    from agents.protocol import resolve_protocol
    from env.errors import BadInput
    from env.sets import resolve_maze
    from orchestrator.serving.limits import images_per_request
    from orchestrator.serving.spec import parse_serve
    from orchestrator.sweep import DEFAULT_LLM_CONCURRENCY

    images = images_per_request(resolve_maze("example"), resolve_protocol({}))
    commands = []
    for source, mapping in literal_test_specs()[0]:
        try:
            spec = parse_serve(mapping, source)
        except BadInput:
            continue  # a test of bad input: gridbench refuses it before any command exists
        resolved = spec.resolved(images=images, max_concurrency=DEFAULT_LLM_CONCURRENCY)
        commands.append(_command(source, PLACEHOLDER_MODEL, resolved))
    return commands


def _command(source: str, model: str, spec: Any) -> ServeCommand:
    from agents.model import request_name
    from orchestrator.serving.command_lines import vllm_command
    from orchestrator.serving.spec import NODE_IP

    # the actor's choices: the node's address for node-ip, the first port of the range
    host = PLACEHOLDER_NODE_IP if spec.host == NODE_IP else spec.host
    port = spec.port_range[0]
    name = request_name(model)
    expected = {
        "model": name, "served_model_name": [name], "tensor_parallel_size": spec.tensor_parallel_size,
        "max_model_len": spec.max_model_len, "limit_mm_per_prompt": spec.limit_mm_per_prompt,
        "reasoning_parser": spec.reasoning_parser or None, "enable_prefix_caching": spec.enable_prefix_caching,
        "max_num_seqs": spec.max_num_seqs, "seed": spec.seed, "generation_config": spec.generation_config,
        "gpu_memory_utilization": spec.gpu_memory_utilization, "host": host, "port": port,
        "enable_prompt_tokens_details": True,
    }
    if spec.tensor_parallel_size > 1:
        expected["distributed_executor_backend"] = "mp"
    return ServeCommand(source, vllm_command(model, spec, host=host, port=port), expected)


@dataclass(frozen=True)
class RequestBody:
    source: str  # sweep, model entry and condition
    body: dict[str, Any]  # exactly what the openai client posts


def request_bodies() -> list[RequestBody]:
    """The first turn's body of every vLLM-served entry of the shipped sweeps, per condition, and
    each entry's body with a thinking-token budget where its family takes one."""
    import env
    from agents.llm import LLMAgent
    from agents.prompt import build_messages
    from agents.types import Turn
    from orchestrator.sweep import load_sweep, model_conditions, shipped_sweeps

    out = []
    for name in shipped_sweeps():
        sweep = load_sweep(name)
        for m in sweep.models:
            if m.serve is None or m.serve.engine != "vllm":
                continue
            runs = [(c.name, c.protocol) for c in model_conditions(m, sweep.conditions)]
            if m.config.family.budget is not None:
                runs.append(("baseline with thinking_budget 4096",
                             runs[0][1].model_copy(update={"thinking": True, "thinking_budget": 4096})))
            maze = (m.mazes or sweep.mazes)[0]
            for condition, protocol in runs:
                agent = LLMAgent(m.config, protocol, offline=True)
                turn = Turn(maze, protocol, 1, env.initial_state(maze), (), 1)
                out.append(RequestBody(f"orchestrator/sweeps/{name}.yaml ({m.name}, {condition})",
                                       agent.transport.body(build_messages(turn))))
    return out


# ---- running the check in a vLLM interpreter ------------------------------------------------------

def run_check(python: str | os.PathLike, commands: list[ServeCommand],
              bodies: list[RequestBody] | None = None) -> tuple[str, list[dict[str, Any]]]:
    """vLLM's version in ``python``'s environment, and one result per command, then per body:
    ``accepted``, ``stage`` (where it stopped, or the last step passed), ``message`` and ``warnings``."""
    with tempfile.TemporaryDirectory(prefix="gridbench-vllm-cli-") as tmp:
        given, answer = Path(tmp) / "commands.json", Path(tmp) / "results.json"
        given.write_text(json.dumps({"commands": [{"argv": c.argv, "read": list(c.expected)} for c in commands],
                                     "bodies": [b.body for b in bodies or []]}), encoding="utf-8")
        # no PYTHONPATH: gridbench's top-level packages must not shadow anything vLLM imports
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        proc = subprocess.run([str(python), __file__, "--inside", str(given), str(answer)], env=env,
                              capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, cwd=tmp)
        if proc.returncode != 0 or not answer.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
            raise RuntimeError(f"the check in {python} failed (exit {proc.returncode}):\n{tail}")
        out = json.loads(answer.read_text(encoding="utf-8"))
    results = out["results"]
    for command, result in zip(commands, results[:len(commands)], strict=True):
        if result["accepted"]:
            wrong = {k: (v, result["parsed"].get(k)) for k, v in command.expected.items()
                     if _normal(result["parsed"].get(k)) != _normal(v)}
            if wrong:
                result.update(accepted=False, stage="meaning", message="; ".join(
                    f"{k}: vLLM read {got!r}, the spec means {want!r}" for k, (want, got) in wrong.items()))
    return out["vllm"], results


def _normal(value: Any) -> Any:
    # vLLM keeps an unset reasoning parser as "" in newer releases and None in older ones
    return None if value == "" else value


# ---- inside the vLLM environment (stdlib and vLLM only) ---------------------------------------------

def check_bodies_inside(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each request body through vLLM's ``ChatCompletionRequest``: accepted when it validates and
    every top-level field is one vLLM declares (an undeclared one is ignored by vLLM)."""
    try:
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    except ImportError:  # before the chat-completion protocol had a module of its own
        from vllm.entrypoints.openai.protocol import ChatCompletionRequest  # type: ignore[no-redef]
    declared = set(ChatCompletionRequest.model_fields)
    results = []
    for body in bodies:
        stage, message, accepted = "validate", "", False
        try:
            request = ChatCompletionRequest.model_validate(body)
            stage = "fields"
            ignored = sorted(set(body) - declared)
            if ignored:
                message = f"fields vLLM does not declare, so ignores: {', '.join(ignored)}"
            else:
                accepted = True
                message = ", ".join(f"{k}={getattr(request, k)!r}" for k in sorted(body)
                                    if k not in ("messages", "model"))
        except Exception as err:  # whatever vLLM raises is its verdict
            message = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        results.append({"accepted": accepted, "stage": stage, "message": message, "warnings": [], "parsed": {}})
    return results


def check_inside(given: dict[str, Any]) -> dict[str, Any]:
    """Each ``{"argv": [...], "read": [names]}`` of ``given["commands"]`` through ``vllm serve``'s
    parser (what vLLM read for each name comes back under ``parsed``), then each of
    ``given["bodies"]`` through ``check_bodies_inside``."""
    commands = given["commands"]
    import contextlib
    import io
    import logging
    import warnings
    from importlib.metadata import version

    from vllm import platforms
    from vllm.platforms.cpu import CpuPlatform

    # as vLLM's own `vllm bench` does without an accelerator: the parser's defaults need a
    # device type, and CUDA's platform cannot load without a driver
    platforms.current_platform = CpuPlatform()

    import vllm.entrypoints.cli.main as cli_main
    import vllm.entrypoints.cli.serve as cli_serve
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.reasoning import ReasoningParserManager

    captured: list[argparse.Namespace] = []
    cli_serve.ServeSubcommand.cmd = staticmethod(captured.append)  # parsed and validated, never served

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.lines: list[str] = []

        def emit(self, rec: logging.LogRecord) -> None:
            self.lines.append(rec.getMessage().splitlines()[0])

    results = []
    # the first command line twice: the first parse also imports vLLM's lazily loaded parts, and
    # what they warn about (no CUDA driver here) concerns this machine, not the command line
    for command in commands[:1] + commands:
        collect = Collect()
        logging.getLogger("vllm").addHandler(collect)
        stderr = io.StringIO()
        captured.clear()
        stage, message = "parse", ""
        caught: list[warnings.WarningMessage] = []
        try:
            with contextlib.redirect_stderr(stderr), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                sys.argv = list(command["argv"])
                cli_main.main()
                if not captured:
                    raise RuntimeError("vllm's CLI returned without dispatching to `serve`")
                args = captured[0]
                stage = "reasoning-parser"
                # what ServeSubcommand.cmd does first: the positional model wins
                if getattr(args, "model_tag", None) is not None:
                    args.model = args.model_tag
                if args.reasoning_parser:
                    ReasoningParserManager.get_reasoning_parser(args.reasoning_parser)
                stage = "engine-args"
                engine_args = AsyncEngineArgs.from_cli_args(args)
            accepted = True
        except SystemExit as exit_:
            accepted = False
            errors = [ln for ln in stderr.getvalue().splitlines() if "error:" in ln]
            message = errors[-1] if errors else f"exit {exit_.code}: {stderr.getvalue().strip()[-300:]}"
        except Exception as err:  # whatever vLLM raises is its verdict
            accepted = False
            message = f"{type(err).__name__}: {err}"
        finally:
            logging.getLogger("vllm").removeHandler(collect)
            collect.lines += [str(w.message).splitlines()[0] for w in caught]
        # the engine arguments where they hold the name, else the server's own (host, port)
        parsed = {k: getattr(engine_args, k, getattr(args, k, None)) for k in command["read"]} if accepted else {}
        results.append({"accepted": accepted, "stage": stage, "message": message,
                        "warnings": sorted(set(collect.lines)), "parsed": json.loads(json.dumps(parsed, default=str))})
    return {"vllm": version("vllm"), "results": results[1:] + check_bodies_inside(given["bodies"])}


# ---- the throwaway environments ---------------------------------------------------------------------

def venv_python(venvs: Path, version: str) -> Path:
    return venvs / f"vllm-{version}" / "bin" / "python"


def installed_version(python: Path) -> str | None:
    if not python.exists():
        return None
    proc = subprocess.run([str(python), "-c", "from importlib.metadata import version; print(version('vllm'))"],
                          capture_output=True, text=True, timeout=120)
    return proc.stdout.strip() if proc.returncode == 0 else None


def install(venvs: Path, version: str) -> Path:
    """A virtual environment with PyPI's vllm==version (and nothing of gridbench's)."""
    python = venv_python(venvs, version)
    if not python.exists():
        print(f"making {python.parent.parent} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(python.parent.parent)], check=True)
    print(f"installing vllm=={version} from PyPI (several GB; minutes) ...", flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
                    "-q", f"vllm=={version}"], check=True, timeout=INSTALL_TIMEOUT_S)
    return python


# ---- the script -----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm", nargs="*", default=list(CHECKED_VERSIONS), metavar="VERSION",
                    help=f"vLLM releases to check (default: {' '.join(CHECKED_VERSIONS)})")
    ap.add_argument("--install", action="store_true", help="make the missing environments (several GB each)")
    ap.add_argument("--venvs", type=Path, default=DEFAULT_VENVS, help=f"where the environments live ({DEFAULT_VENVS})")
    ap.add_argument("--inside", nargs=2, metavar=("COMMANDS", "RESULTS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inside:
        given, answer = (Path(p) for p in args.inside)
        Path(answer).write_text(json.dumps(check_inside(json.loads(given.read_text()))), encoding="utf-8")
        return 0

    commands = serve_commands()
    bodies = request_bodies()
    opaque = literal_test_specs()[1]
    print(f"{len(commands)} distinct vLLM command lines, {len(bodies)} request bodies"
          + (f"; specs in tests that are not literals, so not checked: {', '.join(opaque)}" if opaque else ""),
          flush=True)
    rejected_any = False
    for version in args.vllm:
        python = venv_python(args.venvs, version)
        if installed_version(python) != version:
            if not args.install:
                print(f"vLLM {version}: skipped, no environment at {python.parent.parent} (rerun with --install)")
                record(f"vLLM {version} `vllm serve` parser accepts gridbench's command lines", "all",
                       "skipped: no environment (--install makes it)", None, None)
                continue
            install(args.venvs, version)
        got, results = run_check(python, commands, bodies)
        accepted = 0
        for command, result in zip(commands, results[:len(commands)], strict=True):
            accepted += result["accepted"]
            verdict = "accepted" if result["accepted"] else f"REJECTED at {result['stage']}: {result['message']}"
            print(f"vLLM {got}  {command.source}: {verdict}")
            print(f"    {shlex.join(command.argv)}")
            for warning in result["warnings"]:
                print(f"    vLLM warned: {warning}")
        taken = 0
        for body, result in zip(bodies, results[len(commands):], strict=True):
            taken += result["accepted"]
            verdict = "accepted" if result["accepted"] else f"REJECTED at {result['stage']}"
            print(f"vLLM {got}  request body of {body.source}: {verdict}: {result['message']}")
        rejected_any |= accepted < len(commands) or taken < len(bodies)
        record(f"vLLM {got} `vllm serve` parser accepts gridbench's command lines", "all",
               f"{accepted}/{len(commands)}", accepted / len(commands), accepted == len(commands))
        record(f"vLLM {got} ChatCompletionRequest takes gridbench's request bodies", "all",
               f"{taken}/{len(bodies)}", taken / len(bodies) if bodies else None, taken == len(bodies))
    return 1 if rejected_any else 0


if __name__ == "__main__":
    sys.exit(main())
