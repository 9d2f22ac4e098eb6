"""Episodes on a multinet-pr57 maze, played through the LLM agent against the scripted server over
real HTTP in both prompt styles, fire every new mechanism (ice, portal, death tile, turntable),
tell the model about each in the style's own words, and replay --verify step for step."""

from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest

from agents import ModelConfig, Protocol, build_agent, resolve_protocol
from agents.actions import token_of
from episodes.episode import run_episode
from episodes.replay import replay
from testing.mazes import TOURS, tour_actions, tour_maze
from testing.scripted_server import ScriptedServer
from traces import EpisodeIdentity, write_episode, write_manifest

TOUR = tour_maze("multinet-pr57")


def scripted_actions() -> list[int]:
    """The tour, every step of which is a reply the model gives."""
    actions = tour_actions(TOUR, TOURS["multinet-pr57"].prefix)
    return [a for a in actions if a is not None]


STYLES = {
    "gridbench": Protocol(observation="image+text", icl_example=False, tile_size=8),
    "study": resolve_protocol({"preset": "study-baseline", "icl_example": False, "tile_size": 8}),
}


def reply(style: str, action: int) -> str:
    if style == "study":
        return f"Going on.\nFINAL_OUTPUT: {token_of(action)}"
    return f"Going on.\nACTION: {['left', 'right', 'forward', 'pickup', 'toggle', 'done'][action]}"


@pytest.fixture(scope="module")
def tour_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pr57run")
    actions = scripted_actions()
    requests = {}
    for style, protocol in STYLES.items():
        with ScriptedServer(mode="script", script=[reply(style, a) for a in actions]) as srv:
            config = ModelConfig.for_model("openai/scripted", api_base=srv.url, client="openai",
                                           price={"input": 0.0, "output": 0.0})
            identity = EpisodeIdentity(run="pr57", episode_id=f"tour-{style}", model_name="scripted",
                                       model="openai/scripted", condition=style, repeat=0, maze_id=TOUR.id)

            async def go(protocol=protocol, config=config, identity=identity):
                agent = build_agent(config, protocol)
                try:
                    return await run_episode(TOUR, agent, protocol, identity)
                finally:
                    await agent.aclose()

            write_episode(out, asyncio.run(go()))
            requests[style] = [json.dumps(r.body) for r in srv.chat_requests]
    write_manifest(out, run="pr57", sweep={"name": "pr57"}, mazes={TOUR.checksum: TOUR.to_dict()},
                   invocation={"command": ["test"]})
    return out, requests, len(actions)


def test_every_new_mechanism_fires_and_both_styles_replay_exactly(tour_run):
    out, _, n = tour_run
    episodes = pd.read_parquet(out / "episodes").set_index("episode_id")
    steps = pd.read_parquet(out / "steps")
    for style in STYLES:
        eid = f"tour-{style}"
        assert episodes.loc[eid, "termination"] == "solved" and episodes.loc[eid, "steps"] == n
        events = list(steps[steps["episode_id"] == eid].sort_values("step")["event"])
        assert {"froze", "frozen", "teleported", "died", "rode", "goal"} <= set(events)
        result = replay(out, eid)
        assert result.ok, (eid, [str(m) for m in result.mismatches[:3]])
        mech = steps[steps["episode_id"] == eid].sort_values("step")["mechanisms"].map(json.loads)
        assert {"arrows", "latched", "frozen"} <= set(mech.iloc[0])


def test_each_style_tells_the_model_what_fired(tour_run):
    _, requests, _ = tour_run
    study = " ".join(requests["study"])
    assert "TELEPORTED: stepped into the cyan ring" in study and "DIED: stepped on the skull" in study
    assert "FROZE: stepped onto the frosted tile" in study and "FROZEN: the action did nothing" in study
    assert "pointer tile at (4, 1), its arrow pointing" in study  # (row, col): the study's order
    own = " ".join(requests["gridbench"]).lower()  # the summary's first phrase starts upper-case
    assert "you came out of the cyan ring at (6, 2)" in own and "you stepped on the skull at (7, 2)" in own
    assert "you stood frozen on the frosted tile at (2, 1) for 2 steps" in own
    assert "pointer tile at (1, 4): pointing" in own
