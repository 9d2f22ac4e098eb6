"""3D episodes on a real local Ray: the actors draw the frames in their own processes (a GL
context is never forked), and the model reads the state from them."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest

from env import resolve_maze, save_maze
from orchestrator.driver import Driver
from orchestrator.sweep import parse_sweep

pytestmark = pytest.mark.slow
if importlib.util.find_spec("mujoco") is None:  # the 3d extra: scripts/install.sh --test installs it
    pytest.skip("mujoco is not installed", allow_module_level=True)

KEY_ENV = "GRIDBENCH_TEST_SCRIPTED_KEY"  # set by the ray_cluster fixture before Ray starts
TOP_DOWN = {"backend": "mujoco3d", "camera": "top_down", "resolution": 96}


def test_actors_draw_3d_frames_and_the_model_plays_from_them(ray_cluster, sweep_dict, tmp_path):
    from testing.scripted_server import ScriptedServer

    mazes = tmp_path / "mazes"
    mazes.mkdir()
    save_maze(resolve_maze("example"), mazes / "example.json")
    maze = resolve_maze(str(mazes / "example.json"))
    with ScriptedServer(mode="oracle", maze=maze) as srv:  # reads each request's last image
        sweep = parse_sweep(sweep_dict(
            mazes, name="r3d", protocol={"history_frames": 0, "icl_example": False, "thinking": False},
            models=[{"name": "scripted", "model": "openai/scripted", "api_base": srv.url, "api_key_env": KEY_ENV}],
            conditions=[{"name": "2d"}, {"name": "top_down", "render": TOP_DOWN}]), "r3d.yaml")
        outcome = Driver(sweep, tmp_path / "r3d").execute()
    assert outcome.exit_code == 0 and outcome.ran == 2
    episodes = pd.read_parquet(tmp_path / "r3d" / "episodes").set_index("condition")
    assert episodes["solved"].all()  # the oracle found its state in every 3D frame
    steps = pd.read_parquet(tmp_path / "r3d" / "steps")
    flat, deep = (steps[steps["condition"] == c].sort_values("step") for c in ("2d", "top_down"))
    assert list(flat["event"]) == list(deep["event"])
    # the actors (Ray's own worker processes) sent the 3D frames: no two pictures alike
    assert all(a[-1] != b[-1] for a, b in zip(flat["image_hashes"], deep["image_hashes"], strict=True))
