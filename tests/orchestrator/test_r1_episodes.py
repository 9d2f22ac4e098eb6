"""Episodes on multinet-r1 mazes run, are traced and replay exactly like minigrid ones: the gym env
under the episode runner, the ``mechanisms`` column (a used-up key, the freeze countdown), replay
--verify, and the report naming a study maze no published file reproduces."""

from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest

from agents import Protocol, build_agent
from env import maze_from_dict, resolve_mazes
from episodes.episode import run_episode
from episodes.replay import replay
from testing.mazes import R1_TOUR
from traces import EpisodeIdentity, recorded_state, write_episode, write_manifest


@pytest.fixture(scope="module")
def r1_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("r1run")
    mazes = resolve_mazes(["study/r1_M1_8x8_corridor_kr_0", "study/r1_D2_8x8_corridor_wrong_ky_inactive_sb_sg_kr_1",
                           "study/r1_M6_8x8_corridor_kr_sg_kb_0"]) + [maze_from_dict(R1_TOUR, "everything")]
    for m in mazes:
        for name, protocol in (("oracle", Protocol()), ("explorer", Protocol(switch_frames="study")),
                               ("random", Protocol())):
            identity = EpisodeIdentity(run="r1", episode_id=f"{name}-{m.id}", model_name=name, model=f"builtin/{name}",
                                       condition="default", repeat=0, maze_id=m.id)
            write_episode(out, asyncio.run(run_episode(m, build_agent(f"builtin/{name}", protocol, seed=3),
                                                       protocol, identity)))
    write_manifest(out, run="r1", sweep={"name": "r1"}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["test"]})
    return out, mazes


def test_every_r1_episode_replays_exactly(r1_run):
    out, mazes = r1_run
    episodes = pd.read_parquet(out / "episodes")
    assert len(episodes) == 12
    assert episodes.set_index("episode_id").loc[[f"oracle-{m.id}" for m in mazes], "solved"].all()
    for eid in episodes["episode_id"]:
        result = replay(out, eid)
        assert result.ok, (eid, [str(m) for m in result.mismatches[:3]])
        frames = result.frames(8)
        assert len(frames) == len(result.states)


def test_the_mechanisms_column_records_a_used_key_and_the_freeze(r1_run):
    out, mazes = r1_run
    steps = pd.read_parquet(out / "steps")
    everything = next(m for m in mazes if m.id == "r1-everything")
    mine = steps[steps["episode_id"] == "oracle-r1-everything"].sort_values("step")
    last = json.loads(mine["mechanisms"].iloc[-1])
    assert last["keys"] == {"k": None} and pd.isna(mine["carrying"].iloc[-1]) and "frozen" in last
    oracle_m1 = steps[steps["episode_id"] == "oracle-r1_M1_8x8_corridor_kr_0"]
    assert "frozen" not in json.loads(oracle_m1["mechanisms"].iloc[0])
    for row in mine.itertuples():  # the column is the state: it round-trips through recorded_state
        carrying = None if pd.isna(row.carrying) else row.carrying
        s = recorded_state(everything, row.x, row.y, row.dir, carrying, json.loads(row.mechanisms))
        assert s.pos == (row.x, row.y) and s.frozen == json.loads(row.mechanisms)["frozen"]
    assert set(mine["event"]) >= {"teleported", "door_unlocked"}


def test_the_report_names_the_study_maze_no_file_reproduces(r1_run, tmp_path):
    from analysis.report import build_report

    out, _ = r1_run
    metrics = build_report([out], tmp_path / "report")
    assert metrics["headline"]["study_mazes_unreproduced"] == [
        {"maze_id": "r1_M6_8x8_corridor_kr_sg_kb_0", "set": "study", "stored_optimal": 30, "optimal": 27}]
    text = (tmp_path / "report" / "report.md").read_text()
    assert "r1_M6_8x8_corridor_kr_sg_kb_0" in text and "stored (30 actions)" in text
