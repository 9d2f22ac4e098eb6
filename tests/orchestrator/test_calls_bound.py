"""The most calls an episode can make (``orchestrator.estimate.calls_bound``) is what the real
policies make at worst: a model whose every turn spends all the calls it may (each reply but the
turn's last gives no action), played to the step cap through the real agent against the scripted
server. The dry run's upper bound, the calibration's ``cap`` scenario and ``--max-cost`` rest on it."""

import asyncio

import pytest

from agents import build_agent
from episodes.episode import run_episode
from orchestrator.estimate import calls_bound, estimate
from orchestrator.sweep import load_sweep, parse_sweep
from testing.scripted_server import ScriptedServer

INVALID = "I am not sure what to do here."
# turning in place never solves, and with no stall watchdog the episode runs to its step cap
VALID = {"gridbench": "ACTION: left", "study": "FINAL_OUTPUT: TURN_LEFT"}
CASES = [
    ("gridbench", "noop", 3, 1),
    ("gridbench", "reask", 3, 3),
    ("gridbench", "requery", 3, 3),
    ("gridbench", "requery", 5, 5),
    ("study", "requery", 3, 3),  # the study's rule: three unparseable replies in a row end the episode
    ("study", "noop", 3, 1),
]


def sweep_for(maze_dir, style: str, invalid_output: str, limit: int):
    protocol = {"style": style, "observation": "text", "thinking": False, "max_output_tokens": 64,
                "invalid_output": invalid_output, "requery_limit": limit, "stall_window": None,
                "step_cap_factor": 1.0, "icl_example": False}
    if style == "study":
        protocol |= {"prompt": "minimal", "context": "current", "start_info": False, "mechanism_locations": False}
    return parse_sweep({
        "name": "bound", "mazes": [str(maze_dir / "keydoor-8.json")], "protocol": protocol,
        "models": [{"name": "m", "model": "openai/scripted", "api_base": "http://127.0.0.1:1/v1",
                    "price": {"input": 1e-6, "output": 1e-6}}],
    }, "bound.yaml")


def play(spec, script: list[str]) -> tuple[int, str]:
    with ScriptedServer(script=script) as srv:
        agent = build_agent(spec.model.config, spec.condition.protocol, seed=spec.seed, endpoint=srv.url)

        async def one():
            try:
                return await run_episode(spec.maze, agent, spec.condition.protocol, spec.identity("t"))
            finally:
                await agent.aclose()

        result = asyncio.run(one())
        return len(srv.chat_requests), result.episode.termination


@pytest.mark.parametrize(("style", "invalid_output", "limit", "per_turn"), CASES)
def test_the_bound_is_the_real_policies_worst_case(maze_dir, style, invalid_output, limit, per_turn):
    (spec,) = sweep_for(maze_dir, style, invalid_output, limit).episodes()
    protocol = spec.condition.protocol
    assert protocol.calls_per_turn == per_turn
    bound = calls_bound(spec)
    turns = bound // per_turn
    # each turn spends every call it may: the replies before its last give no action
    worst = ([INVALID] * (per_turn - 1) + [VALID[style]]) * turns if per_turn > 1 else [VALID[style]] * turns
    calls, ending = play(spec, worst)
    assert (calls, ending) == (bound, "step_cap")
    # a model that never answers validly makes no more (under requery it ends the episode at once)
    calls, ending = play(spec, [INVALID])
    assert calls <= bound
    assert ending == ("parse_failed" if invalid_output == "requery" else "step_cap")
    # the estimate's upper bound is the same count
    (row,) = estimate([spec])
    assert row.calls_max == bound


def test_the_dry_runs_bound_of_each_study_sweep_counts_every_requery():
    """``main`` and ``frontier`` run the study's ``invalid_output: requery`` (3 calls a turn at
    most): their maximum calls are the step caps times three, not the step caps alone."""
    for name in ("main", "frontier"):
        specs = [s for s in load_sweep(name).episodes() if not s.model.builtin]
        assert {s.condition.protocol.invalid_output for s in specs} == {"requery"}
        for row in estimate(specs):
            mine = [s for s in specs if s.model.name == row.name]
            assert row.calls_max == sum(calls_bound(s) for s in mine) == 3 * sum(
                calls_bound(s) // s.condition.protocol.calls_per_turn for s in mine)
