"""The study style's querying modes, cardinal actions and parse-failure ending, played through the
LLM agent against a scripted server over real HTTP (docs/protocol.md, "Querying")."""

from __future__ import annotations

import asyncio

import pytest

from agents import ModelConfig, build_agent, resolve_protocol
from agents.actions import token_of
from env import initial_state, resolve_maze, step
from env.oracle import solve
from episodes.episode import decision_of, run_episode
from testing.scripted_server import ScriptedServer
from traces import EpisodeIdentity

IDENTITY = EpisodeIdentity(run="r", episode_id="e", model_name="m", model="openai/scripted", condition="c",
                           repeat=0, maze_id="example")
FAST = {"preset": "study-baseline", "icl_example": False, "tile_size": 8}


def config(url: str) -> ModelConfig:
    return ModelConfig.for_model("openai/scripted", api_base=url, client="openai", price={"input": 0.0, "output": 0.0})


def play(maze, protocol, url, **kw):
    async def go():
        agent = build_agent(config(url), protocol)
        try:
            return await run_episode(maze, agent, protocol, IDENTITY, **kw)
        finally:
            await agent.aclose()
    return asyncio.run(go())


@pytest.fixture(scope="module")
def oracle_server():
    with ScriptedServer(mode="oracle", maze="example") as srv:
        yield srv


@pytest.mark.parametrize("querying, calls", [("step", None), ("subgoal", 1), ("trajectory", 1)])
def test_each_querying_mode_solves_with_the_oracle_and_counts_its_calls(oracle_server, querying, calls):
    maze = resolve_maze("example")
    optimal = solve(maze).optimal_actions
    before = len(oracle_server.chat_requests)
    result = play(maze, resolve_protocol({**FAST, "querying": querying}), oracle_server.url)
    ep = result.episode
    assert ep.termination == "solved" and ep.steps == optimal
    asked = len(oracle_server.chat_requests) - before
    assert ep.usage.calls == asked == (optimal if calls is None else calls)
    assert [s.usage.calls for s in result.steps].count(0) == optimal - asked
    # every step carries its token; a query's first step carries its whole list
    assert all(s.token == token_of(["left", "right", "forward", "pickup", "toggle", "done"].index(s.action))
               for s in result.steps)
    firsts = [s for s in result.steps if s.usage.calls]
    assert sum(len(s.plan) for s in firsts) == (optimal if querying != "step" else asked)
    if querying == "subgoal":
        assert firsts[0].subgoal == "the goal"


def test_cardinal_moves_become_turns_and_a_forward_each_a_step():
    maze = resolve_maze("example")
    plan = solve(maze).plan
    start = initial_state(maze)
    # the study's cardinal tokens for the oracle's route: the heading of each forward
    tokens, s = [], start
    for a in plan:
        nxt, _ = step(maze, s, a)
        if a == 2:
            tokens.append(("MOVE_EAST", "MOVE_SOUTH", "MOVE_WEST", "MOVE_NORTH")[s.dir])
        elif a in (3, 4):
            tokens.append({3: "PICKUP", 4: "INTERACT"}[a])
        s = nxt
    script = [f"FINAL_OUTPUT: {t}" for t in tokens]
    with ScriptedServer(script=script) as srv:
        result = play(maze, resolve_protocol({**FAST, "action_space": "cardinal"}), srv.url)
        asked = len(srv.chat_requests)
    ep = result.episode
    assert ep.termination == "solved" and asked == len(tokens)
    # each primitive a step of its own, under the token the reply gave
    assert ep.steps == len([a for a in plan]) and [s.token for s in result.steps if s.usage.calls] == tokens
    west = [s for s in result.steps if s.token == "MOVE_WEST"]
    assert not west or [s.action for s in west][:1] in (["left"], ["right"], ["forward"])


def test_unparseable_replies_take_no_step_and_three_in_a_row_end_the_episode():
    maze = resolve_maze("example")
    script = ["FINAL_OUTPUT: MOVE_FORWARD", "no idea", "FINAL_OUTPUT: JUMP", "FINAL_OUTPUT: TURN_LEFT",
              "", "still thinking", "**FINAL_OUTPUT:** TURN_RIGHT"]
    with ScriptedServer(script=script) as srv:
        result = play(maze, resolve_protocol(FAST), srv.url)
        asked = len(srv.chat_requests)
        bodies = [r.body for r in srv.chat_requests]
    ep = result.episode
    # forward, then two failures before a left, then three failures in a row
    assert [s.action for s in result.steps] == ["forward", "left"]
    assert asked == 7 and ep.usage.calls == 7 and ep.termination == "parse_failed"
    assert ep.parse_failures == 5 and result.steps[1].usage.calls == 3 and result.steps[1].usage.reasks == 2
    assert ep.ending_reply is not None and "still thinking" in ep.ending_reply
    # a re-query is the same request, byte for byte (the study rendered no parse feedback)
    assert bodies[1]["messages"] == bodies[2]["messages"] == bodies[3]["messages"]
    assert bodies[4]["messages"] == bodies[5]["messages"] == bodies[6]["messages"]


def test_a_bump_throws_the_rest_of_a_list_away_and_a_trajectory_then_ends_exhausted():
    maze = resolve_maze("example")
    # the example starts facing east with a wall two cells ahead: the second forward bumps
    with ScriptedServer(script=["FINAL_OUTPUT: MOVE_FORWARD, MOVE_FORWARD, MOVE_FORWARD, TURN_LEFT"]) as srv:
        result = play(maze, resolve_protocol({**FAST, "querying": "trajectory"}), srv.url)
        asked = len(srv.chat_requests)
    events = [s.event for s in result.steps]
    assert asked == 1 and result.episode.termination == "exhausted"
    assert "bump" in events and events[-1] == "bump" and len(events) < 4


def test_an_episode_of_list_steps_resumes_to_the_same_records(oracle_server):
    maze = resolve_maze("example")
    protocol = resolve_protocol({**FAST, "querying": "subgoal", "conversation": "multi"})
    whole = play(maze, protocol, oracle_server.url)
    cut = len(whole.steps) // 2
    before = len(oracle_server.chat_requests)
    again = play(maze, protocol, oracle_server.url, recorded=whole.steps[:cut], resumed=1)
    assert len(oracle_server.chat_requests) == before  # the rest of the list needs no new call
    assert [s.action for s in again.steps] == [s.action for s in whole.steps]
    assert [decision_of(s).plan for s in again.steps] == [decision_of(s).plan for s in whole.steps]
