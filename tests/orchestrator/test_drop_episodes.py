"""Episodes that offer DROP (the protocol's ``actions: with_drop``) run, are traced and replay
exactly: the step row records the action ``drop`` and its event, the episode its protocol with the
field, the distances come from the oracle with its DROP edge (a decoy key taken keeps a distance),
and replay --verify re-derives all of it."""

from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest

from agents import build_agent, resolve_protocol
from env import resolve_maze
from episodes.episode import run_episode
from episodes.replay import replay
from traces import EpisodeIdentity, write_episode, write_manifest

DECOY = "study/r1_D2_8x8_corridor_wrong_ky_inactive_sb_sg_kr_1"


@pytest.fixture(scope="module")
def drop_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("droprun")
    maze = resolve_maze(DECOY)
    protocol = resolve_protocol({"preset": "study-final", "actions": "with_drop", "stall_window": None,
                                 "step_cap_factor": 10})
    for name in ("oracle", "explorer", "random"):
        identity = EpisodeIdentity(run="drop", episode_id=f"{name}-drop", model_name=name, model=f"builtin/{name}",
                                   condition="default", repeat=0, maze_id=maze.id)
        write_episode(out, asyncio.run(run_episode(maze, build_agent(f"builtin/{name}", protocol, seed=5),
                                                   protocol, identity)))
    write_manifest(out, run="drop", sweep={"name": "drop"}, mazes={maze.checksum: maze.to_dict()},
                   invocation={"command": ["test"]})
    return out


def test_drop_episodes_record_the_drop_and_replay_exactly(drop_run):
    episodes = pd.read_parquet(drop_run / "episodes").set_index("episode_id")
    assert episodes.loc["oracle-drop", "solved"] and episodes.loc["explorer-drop", "solved"]
    assert all(json.loads(p)["actions"] == "with_drop" for p in episodes["protocol"])
    steps = pd.read_parquet(drop_run / "steps")
    dropped = steps[(steps["episode_id"] == "explorer-drop") & (steps["action"] == "drop")]
    assert "drop" in set(dropped["event"])
    # with the DROP edge no state of the explorer's episode is out of the goal's reach
    assert steps[steps["episode_id"] == "explorer-drop"]["action_distance"].notna().all()
    for eid in episodes.index:
        result = replay(drop_run, eid)
        assert result.ok, (eid, [str(m) for m in result.mismatches[:3]])


def test_the_reports_protocols_table_names_the_actions_field(drop_run):
    from analysis.load import load_runs
    from analysis.protocols import arm_protocols

    table = arm_protocols(load_runs(drop_run))
    # the built-in agents are references (the episode loop's fields only), yet the later field that
    # moved off its default is a column of the table
    assert "actions" in table.columns
