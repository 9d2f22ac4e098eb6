"""Pieces for the reliability tests that run sweeps: where the repository and its small test
mazes are, a fast protocol for LLM episodes, and the check that a run folder holds every
planned episode exactly once."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

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
