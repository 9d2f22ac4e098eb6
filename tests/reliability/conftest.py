"""Shared pieces of the reliability suite: the orchestrator's small test mazes, sweep files,
a finished run built without Ray, and helpers to run the real command line."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sweep_runs import FAST_PROTOCOL as FAST_PROTOCOL  # the tests import it from here too
from sweep_runs import MAZES, ROOT

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
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], cwd=cwd or ROOT,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout,
                          **popen)


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


@pytest.fixture(scope="session")
def maze_dir() -> Path:
    return MAZES


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """A small run (oracle and random on two mazes) written by the episode runner, no Ray."""
    from agents import Protocol
    from agents.builtin import make_builtin
    from env import load_maze
    from orchestrator.episode import run_episode
    from orchestrator.records import EpisodeIdentity
    from orchestrator.traces import write_episode, write_manifest

    run_dir = tmp_path_factory.mktemp("runs") / "done"
    mazes = [load_maze(MAZES / "scale-8.json"), load_maze(MAZES / "keydoor-8.json")]
    protocol = Protocol.preset("final")

    async def go() -> None:
        for i, maze in enumerate(mazes):
            for model in ("oracle", "random"):
                identity = EpisodeIdentity(run="done", episode_id=f"ep{i}-{model}", model_name=model,
                                           model=f"builtin/{model}", condition="default", repeat=0, maze_id=maze.id)
                result = await run_episode(maze, make_builtin(model, seed=i), protocol, identity)
                write_episode(run_dir, result)

    asyncio.run(go())
    write_manifest(run_dir, run="done", sweep={"name": "done"}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["test"]})
    return run_dir




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


@pytest.fixture(scope="module")
def ray_with_key():
    """A real two-CPU local Ray whose workers see the fake key (workers inherit the environment
    of the process that starts Ray, as on a real node)."""
    import ray

    os.environ[KEY_ENV] = FAKE_KEY
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2, log_to_driver=False,
             logging_level="ERROR")
    yield ray
    ray.shutdown()
