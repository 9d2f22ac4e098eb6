"""Shared fixtures: small generated mazes (mazes/) and one real local Ray instance per module."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

MAZES = Path(__file__).resolve().parent / "mazes"
TEST_KEY_ENV, TEST_KEY = "GRIDBENCH_TEST_SCRIPTED_KEY", "sk-scripted-secret-value-0001"


@pytest.fixture(scope="session")
def maze_dir() -> Path:
    return MAZES


@pytest.fixture(scope="module")
def ray_cluster():
    """A real two-CPU local Ray (no dashboard, small object store), shut down after the module."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray's workers inherit the environment of the moment Ray starts (as on a real node), so a
    # key variable for the tests' scripted servers must exist before ray.init
    os.environ.setdefault(TEST_KEY_ENV, TEST_KEY)
    if ray.is_initialized():  # another module's instance: never share one across modules
        ray.shutdown()
    # address="local": a fresh instance even when someone has `ray start`ed one on this machine
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2,
             log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def sweep_dict():
    """A valid sweep mapping over the test mazes with the three built-in agents, changed by keywords."""
    return make_sweep


def make_sweep(maze_dir: Path, **extra) -> dict:
    base = {
        "name": "t",
        "mazes": str(maze_dir),
        "models": [{"name": "oracle", "model": "builtin/oracle"}, {"name": "random", "model": "builtin/random"},
                   {"name": "explorer", "model": "builtin/explorer"}],
    }
    base.update(extra)
    return base
