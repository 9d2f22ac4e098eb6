"""An episode on a maze with gridbench's own mechanics (a one-way tile, a reversing tile), played by
the LLM agent against the scripted server over real HTTP in both prompt styles: each fires, each
prompt names it, and the written trace replays step for step (replay --verify's machinery)."""

from __future__ import annotations

import asyncio
import json

import pandas as pd

from agents import ModelConfig, Protocol, build_agent, resolve_protocol
from agents.actions import token_of
from env.maze import maze_from_dict
from episodes.episode import run_episode
from episodes.replay import replay
from testing.scripted_server import ScriptedServer
from traces import EpisodeIdentity, write_episode, write_manifest

MAZE = maze_from_dict({
    "format": "gridbench.maze/1", "id": "added", "ruleset": "multinet-pr57",
    "grid": ["#########", "#.......#", "#.#####.#", "#.......#", "#########"],
    "start": {"pos": [1, 1], "dir": "east"}, "goal": [7, 3],
    "objects": [{"id": "o1", "kind": "oneway", "pos": [4, 1], "dir": "west"},
                {"id": "r1", "kind": "reverser", "pos": [3, 3]}]})
# refused by the one-way tile, round by the bottom row, turned round by the reversing tile, on
ACTIONS = [2, 2, 2, 1, 1, 2, 2, 0, 2, 2, 0, 2, 2, 1, 1, 2, 2, 2, 2]
STYLES = {
    "gridbench": Protocol(observation="image+text", icl_example=False, tile_size=8),
    "study": resolve_protocol({"preset": "study-baseline", "icl_example": False, "tile_size": 8}),
}


def reply(style: str, action: int) -> str:
    if style == "study":
        return f"Going on.\nFINAL_OUTPUT: {token_of(action)}"
    return f"Going on.\nACTION: {['left', 'right', 'forward', 'pickup', 'toggle', 'done'][action]}"


def test_both_fire_each_style_names_them_and_the_trace_replays(tmp_path):
    requests = {}
    for style, protocol in STYLES.items():
        with ScriptedServer(mode="script", script=[reply(style, a) for a in ACTIONS]) as srv:
            config = ModelConfig.for_model("openai/scripted", api_base=srv.url, client="openai",
                                           price={"input": 0.0, "output": 0.0})
            identity = EpisodeIdentity(run="added", episode_id=f"added-{style}", model_name="scripted",
                                       model="openai/scripted", condition=style, repeat=0, maze_id=MAZE.id)

            async def go(protocol=protocol, config=config, identity=identity):
                agent = build_agent(config, protocol)
                try:
                    return await run_episode(MAZE, agent, protocol, identity)
                finally:
                    await agent.aclose()

            write_episode(tmp_path, asyncio.run(go()))
            requests[style] = " ".join(json.dumps(r.body) for r in srv.chat_requests)
    write_manifest(tmp_path, run="added", sweep={"name": "added"}, mazes={MAZE.checksum: MAZE.to_dict()},
                   invocation={"command": ["test"]})
    episodes = pd.read_parquet(tmp_path / "episodes").set_index("episode_id")
    steps = pd.read_parquet(tmp_path / "steps")
    for style in STYLES:
        eid = f"added-{style}"
        assert episodes.loc[eid, "termination"] == "solved" and episodes.loc[eid, "steps"] == len(ACTIONS)
        rows = steps[steps["episode_id"] == eid].sort_values("step")
        assert list(rows["event"])[2] == "bump" and list(rows["dir"])[12] == 2  # refused; turned round
        result = replay(tmp_path, eid)
        assert result.ok, (eid, [str(m) for m in result.mismatches[:3]])
    assert "chevron tile at (1, 4), pointing WEST" in requests["study"]  # (row, col): the study's order
    assert "hourglass tile at (3, 3)" in requests["study"]
    assert "chevron tile at (4, 1): pointing west" in requests["gridbench"]
