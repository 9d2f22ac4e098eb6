"""The episode runner without Ray: termination rules, progress, distances, rows that fit the schema."""

from __future__ import annotations

import asyncio
import json

import pyarrow as pa
import pytest

from agents import Protocol, build_agent
from agents.types import Decision, InfraError
from env import resolve_maze
from env.oracle import distance_table
from orchestrator.episode import progress, run_episode, step_cap_for
from orchestrator.schema import EPISODES, STEPS


class Scripted:
    """A real ``Agent``: plays a fixed list of actions (None = an invalid reply), then repeats the last."""

    def __init__(self, actions, fail_at=None, secret=""):
        self.actions, self.fail_at, self.secret = list(actions), fail_at, secret

    async def act(self, turn):
        if self.fail_at is not None and turn.step == self.fail_at:
            raise InfraError("RateLimitError", f"provider said no (key {self.secret})")
        a = self.actions[min(turn.step, len(self.actions)) - 1]
        return Decision(action=a, parse="invalid" if a is None else "exact", tokens_in=10, tokens_out=2,
                        cost_usd=0.001)

    async def aclose(self):
        pass


def play(maze, agent, protocol=None, **kw):
    protocol = protocol or Protocol.preset("final")
    return asyncio.run(run_episode(maze, agent, protocol, run="r", episode_id="e", model_name="m", model="builtin/x",
                                   condition="c", repeat=0, **kw))


def test_oracle_solves_in_optimal_steps_and_distances_fall_by_one():
    maze = resolve_maze("example")
    seen = []
    result = play(maze, build_agent("builtin/oracle", Protocol.preset("final")), on_step=seen.append)
    ep, steps = result.episode, result.steps
    assert ep["termination"] == "solved" and ep["solved"] and ep["steps"] == ep["optimal_actions"] == 19
    assert ep["progress_action"] == ep["progress_tile"] == 1.0 and ep["d_end_action"] == 0
    assert [s["action_distance"] for s in steps] == list(range(18, -1, -1))
    assert steps[-1]["event"] == "goal" and ep["closest_action"] == 0
    assert {"door_unlocked", "switch_on"} <= {s["event"] for s in steps}
    assert len(seen) == 19 and seen[0] is steps[0]
    # the rows are exactly the fixed schemas: no missing or extra column, every type converts
    pa.Table.from_pylist([ep], schema=EPISODES)
    pa.Table.from_pylist(steps, schema=STEPS)
    assert set(ep) == set(EPISODES.names) and set(steps[0]) == set(STEPS.names)


def test_stall_counts_steps_without_a_never_seen_state():
    maze = resolve_maze("example")
    p = Protocol.preset("final").model_copy(update={"stall_window": 5})
    # turning in place never reaches a new (position, key, mechanisms) state: the start counts as seen
    result = play(maze, Scripted([0]), p)
    assert result.episode["termination"] == "stall" and result.episode["steps"] == 5
    assert not any(s["novel"] for s in result.steps)
    assert result.episode["progress_action"] == 0.0


def test_step_cap_is_factor_times_optimal_and_invalid_replies_are_noop_steps():
    maze = resolve_maze("example")
    p = Protocol.preset("final").model_copy(update={"step_cap_factor": 0.5, "stall_window": 1000})
    result = play(maze, Scripted([2, None, 1, 2, 2]), p)
    ep = result.episode
    assert ep["step_cap"] == step_cap_for(19, 0.5) == 10
    assert ep["termination"] == "step_cap" and ep["steps"] == 10
    invalid = result.steps[1]
    assert invalid["action"] is None and invalid["event"] == "noop" and invalid["parse"] == "invalid"
    assert (invalid["x"], invalid["y"]) == (result.steps[0]["x"], result.steps[0]["y"])
    assert ep["invalid_outputs"] == 1 and ep["tokens_in"] == 100 and ep["cost_usd"] == pytest.approx(0.01)
    d0 = distance_table(maze).action_distance(__import__("env").initial_state(maze))
    assert ep["d_start_action"] == d0 and 0 <= ep["progress_action"] < 1


def test_infra_error_ends_the_episode_as_error_and_never_records_the_key(monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("GRIDBENCH_TEST_API_KEY", secret)
    result = play(resolve_maze("example"), Scripted([2, 2, 2], fail_at=3, secret=secret))
    ep = result.episode
    assert ep["termination"] == "error" and ep["error_class"] == "RateLimitError" and ep["steps"] == 2
    assert secret not in ep["error_message"] and "<GRIDBENCH_TEST_API_KEY>" in ep["error_message"]


def test_progress_is_clipped_and_unreachable_goals_score_zero():
    assert progress(20, 5, False) == 0.75
    assert progress(20, 30, False) == 0.0
    assert progress(20, None, False) == 0.0
    assert progress(20, 7, True) == 1.0


def test_recorded_state_is_the_state_each_step_reached():
    from env import ACTIONS, initial_state, step
    from orchestrator.episode import recorded_state

    maze = resolve_maze("example")
    rows = play(maze, build_agent("builtin/oracle", Protocol.preset("final"))).steps
    state = initial_state(maze)
    for row in rows:
        state, _ = step(maze, state, ACTIONS.index(row["action"]))
        assert recorded_state(maze, row["x"], row["y"], row["dir"], row["carrying"],
                              json.loads(row["mechanisms"])) == state
    assert state.carrying == 0 and state.doors == (0,)  # the key was carried through an unlocked door
    with pytest.raises(ValueError):
        recorded_state(maze, 1, 1, 0, "no-such-key", json.loads(rows[0]["mechanisms"]))
