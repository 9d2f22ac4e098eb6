"""Fixtures of the reliability suite: the orchestrator's small test mazes, a finished run built
without Ray, and a local Ray whose workers see a fake key. Helpers live in sweep_runs.py."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from sweep_runs import FAKE_KEY, KEY_ENV, MAZES


@pytest.fixture(scope="session")
def maze_dir() -> Path:
    return MAZES


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """A small run (oracle and random on two mazes) written by the episode runner, no Ray."""
    from agents import Protocol
    from agents.builtin import make_builtin
    from env import load_maze
    from episodes.episode import run_episode
    from traces import EpisodeIdentity, write_episode, write_manifest

    run_dir = tmp_path_factory.mktemp("runs") / "done"
    mazes = [load_maze(MAZES / "scale-8.json"), load_maze(MAZES / "keydoor-8.json")]
    protocol = Protocol.preset("gridbench-final")

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




@pytest.fixture(scope="module")
def ray_with_key():
    """A real two-CPU local Ray whose workers see the fake key (workers inherit the environment
    of the process that starts Ray, as on a real node)."""
    import ray

    os.environ[KEY_ENV] = FAKE_KEY
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():
        ray.shutdown()
    # address="local": a fresh instance even when another Ray runs on this machine
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2,
             log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()
