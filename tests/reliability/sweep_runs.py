"""Pieces for the reliability tests that run sweeps: where the repository and its small test
mazes are, sweep files over them, a fast protocol for LLM episodes, the real command line, the
processes of Ray actors, and the check that a run folder holds every planned episode exactly
once. (Fixtures stay in conftest.py; everything a test imports is here.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parents[2]
MAZES = ROOT / "tests" / "orchestrator" / "mazes"
# what LLM episodes look like in these tests: short, text only, no frames to draw
FAST_PROTOCOL = {"observation": "text", "history_frames": 0, "thinking": False, "icl_example": False,
                 "stall_window": 10, "step_cap_factor": 1}


def assert_each_episode_once(run_dir: Path, expected_ids: set[str]) -> pd.DataFrame:
    """Every file readable on its own, each planned episode exactly once, steps whole."""
    for sub in ("episodes", "steps"):
        for f in (run_dir / sub).glob("*.parquet"):
            pq.read_table(f)
        assert not list((run_dir / sub).glob(".*.tmp")), f"temporary files left in {sub}/"
    episodes = pd.read_parquet(run_dir / "episodes")
    steps = pd.read_parquet(run_dir / "steps")
    assert episodes["episode_id"].is_unique and set(episodes["episode_id"]) == expected_ids
    assert set(steps["episode_id"]) <= expected_ids
    assert not steps.duplicated(["episode_id", "step"]).any()
    assert int(episodes["steps"].sum()) == len(steps)  # no orphan or doubled steps
    return episodes


BUILTINS = [{"name": "oracle", "model": "builtin/oracle"}, {"name": "random", "model": "builtin/random"},
            {"name": "explorer", "model": "builtin/explorer"}]


def sweep_file(path: Path, **fields) -> Path:
    """A sweep file over the test mazes with the built-in agents, fields replaced by ``fields``."""
    data = {"name": path.stem, "mazes": str(MAZES), "models": BUILTINS, **fields}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def gridbench(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300,
              **popen) -> subprocess.CompletedProcess:
    """The real ``gridbench`` command in a fresh process."""
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=cwd or ROOT,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout,
                          **popen)


def run_cli(argv: list[str], capfd) -> tuple[int, str, str]:
    """``gridbench`` in this process (fast: no new interpreter): exit code, stdout, stderr."""
    from app.cli import main as cli_main

    code = 0
    try:
        cli_main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    out, err = capfd.readouterr()
    return code, out, err


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


def copy_mazes(dest: Path, names: list[str]) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copy(MAZES / f"{n}.json", dest / f"{n}.json")
    return dest


# A made-up key: the security tests search every output for it
FAKE_KEY = "sk-fake-gridbench-0123456789abcdefSECRET"
KEY_ENV = "GRIDBENCH_TEST_KEY"


def actor_pid(actor, timeout: float = 60.0) -> int | None:
    """The process id of a live actor, from Ray's own actor table (waits while it starts);
    None when it died before it ever ran."""
    import time

    from ray._private import state

    deadline = time.monotonic() + timeout
    row = None
    while time.monotonic() < deadline:
        row = state.actors(actor._actor_id.hex())
        if row and row.get("State") == "ALIVE" and row.get("Pid"):
            return int(row["Pid"])
        if row and row.get("State") == "DEAD":
            return None
        time.sleep(0.05)
    raise TimeoutError(f"actor never came alive: {row}")


def actor_node(actor) -> str:
    from ray._private import state

    return state.actors(actor._actor_id.hex())["Address"]["NodeID"]
