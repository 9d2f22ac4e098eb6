"""The episode runner without Ray, part by part: termination rules, usage sums, the records (which
fit the schema), the turn loop, and resuming from recorded steps."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pyarrow as pa
import pytest

from agents import Protocol, build_agent
from agents.types import Decision, InfraError
from agents.usage import Budget, Usage
from env import initial_state, resolve_maze, step
from env.oracle import distance_table
from episodes.episode import Suspended, episode_record, failed_episode, progress, run_episode
from episodes.termination import TerminationRules, step_cap_for
from traces import EpisodeIdentity, EpisodeRecord, StepRecord
from traces._schema import EPISODES, STEPS

IDENTITY = EpisodeIdentity(run="r", episode_id="e", model_name="m", model="builtin/x", condition="c", repeat=0,
                           maze_id="example")


class Scripted:
    """A real ``Agent``: plays a fixed list of actions (None = an invalid reply), then repeats the last."""

    def __init__(self, actions, fail_at=None, secret=""):
        self.actions, self.fail_at, self.secret = list(actions), fail_at, secret
        self.resumed: list[int | None] = []

    async def act(self, turn):
        if self.fail_at is not None and turn.step == self.fail_at:
            raise InfraError("RateLimitError", f"provider said no (key {self.secret})")
        a = self.actions[min(turn.step, len(self.actions)) - 1]
        return Decision(action=a, parse="invalid" if a is None else "exact",
                        usage=Usage(tokens_in=10, tokens_out=2, cost_usd=0.001),
                        budget=Budget(max_output_tokens=64))

    async def resume(self, turn, decision):
        self.resumed.append(decision.action)

    async def aclose(self):
        pass


def play(maze, agent, protocol=None, **kw):
    protocol = protocol or Protocol.preset("gridbench-final")
    return asyncio.run(run_episode(maze, agent, protocol, IDENTITY, **kw))


# ---- the parts ---------------------------------------------------------------------------------

def test_termination_rules_in_order():
    maze = resolve_maze("example")
    s0 = initial_state(maze)
    moved, event = step(maze, s0, 2)
    turned, _ = step(maze, moved, 0)
    t = TerminationRules.start(s0, step_cap=3, stall_window=2)
    assert event == "moved" and t.observe(1, moved, event) is True and t.reason is None
    assert t.observe(2, turned, "turned") is False and t.reason is None  # facing is not part of novelty
    assert t.observe(3, turned, "turned") is False and t.reason == "step_cap"  # the cap is checked before stall
    t = TerminationRules.start(s0, step_cap=10, stall_window=2)
    assert not t.observe(1, s0, "bump") and not t.observe(2, s0, "bump") and t.reason == "stall"
    t = TerminationRules.start(s0, step_cap=1, stall_window=1)
    t.observe(1, s0, "goal")
    assert t.reason == "solved"  # the goal wins over the cap and the stall
    assert step_cap_for(19, 3) == 57 and step_cap_for(19, 0.5) == 10 and step_cap_for(1, 0.1) == 1


def test_an_episodes_rules_follow_its_protocols_style():
    maze = resolve_maze("example")
    s0 = initial_state(maze)
    for preset, first in (("gridbench-final", "step_cap"), ("study-final", "stall")):
        t = TerminationRules.for_episode(maze, Protocol.preset(preset), s0, optimal=10)
        assert t.step_cap == 30 and t.stall_window == 30
        for n in range(1, 31):
            assert t.reason is None
            t.observe(n, s0, "bump")
        assert t.reason == first, preset  # both end at step 30: the study's harness looked at the stall first
    assert TerminationRules.for_episode(maze, Protocol.preset("study-baseline"), s0, optimal=4).stall_window is None


def test_usage_sums_itself():
    a = Usage(tokens_in=3, tokens_out=2, tokens_cached=1, cost_usd=0.5, latency_s=1.0, retries=1)
    b = Usage(tokens_in=4, reasoning_estimated=True, reasks=2, latency_s=0.25)
    total = a + b
    assert (total.tokens_in, total.tokens_out, total.tokens_cached, total.retries, total.reasks) == (7, 2, 1, 1, 2)
    assert total.reasoning_estimated and total.cost_usd == 0.5 and total.latency_s == 1.25
    assert Usage.total([a, b, Usage()]) == total and Usage.total([]) == Usage()


def test_failed_and_finished_episodes_are_the_same_record():
    maze = resolve_maze("example")
    failed = failed_episode(IDENTITY, maze, Protocol(), "RayActorError", "lost", attempts=3).episode
    finished = play(maze, build_agent("builtin/oracle", Protocol())).episode
    assert type(failed) is type(finished) is EpisodeRecord
    assert set(failed.row()) == set(finished.row()) == set(EPISODES.names)
    assert (failed.termination, failed.steps, failed.attempts, failed.optimal_actions) == ("error", 0, 3, None)
    assert failed.usage == Usage() and failed.progress_action is None
    pa.Table.from_pylist([failed.row(), finished.row()], schema=EPISODES)


def test_records_round_trip_through_rows():
    result = play(resolve_maze("example"), Scripted([2, 1, None, 2]), Protocol.preset("gridbench-final").model_copy(
        update={"step_cap_factor": 0.2}))
    for record in (*result.steps, result.episode):
        assert type(record).from_row(record.row()) == record
    table = pa.Table.from_pylist([s.row() for s in result.steps], schema=STEPS)
    assert [StepRecord.from_row(r) for r in table.to_pylist()] == result.steps


# ---- the turn loop -----------------------------------------------------------------------------

def test_oracle_solves_in_optimal_steps_and_distances_fall_by_one():
    maze = resolve_maze("example")
    seen = []
    result = play(maze, build_agent("builtin/oracle", Protocol.preset("gridbench-final")), on_step=seen.append)
    ep, steps = result.episode, result.steps
    assert ep.termination == "solved" and ep.solved and ep.steps == ep.optimal_actions == 19
    assert ep.progress_action == ep.progress_tile == 1.0 and ep.d_end_action == 0
    assert [s.action_distance for s in steps] == list(range(18, -1, -1))
    assert steps[-1].event == "goal" and ep.closest_action == 0
    assert {"door_unlocked", "switch_on"} <= {s.event for s in steps}
    assert len(seen) == 19 and seen[0] is steps[0]


def test_stall_counts_steps_without_a_never_seen_state():
    maze = resolve_maze("example")
    p = Protocol.preset("gridbench-final").model_copy(update={"stall_window": 5})
    # turning in place never reaches a new (position, key, mechanisms) state: the start counts as seen
    result = play(maze, Scripted([0]), p)
    assert result.episode.termination == "stall" and result.episode.steps == 5
    assert not any(s.novel for s in result.steps)
    assert result.episode.progress_action == 0.0


def test_step_cap_is_factor_times_optimal_and_invalid_replies_are_noop_steps():
    maze = resolve_maze("example")
    p = Protocol.preset("gridbench-final").model_copy(update={"step_cap_factor": 0.5, "stall_window": 1000})
    result = play(maze, Scripted([2, None, 1, 2, 2]), p)
    ep = result.episode
    assert ep.step_cap == step_cap_for(19, 0.5) == 10
    assert ep.termination == "step_cap" and ep.steps == 10
    invalid = result.steps[1]
    assert invalid.action is None and invalid.event == "noop" and invalid.parse == "invalid"
    assert (invalid.x, invalid.y) == (result.steps[0].x, result.steps[0].y)
    assert ep.invalid_outputs == 1 and ep.usage.tokens_in == 100 and ep.usage.cost_usd == pytest.approx(0.01)
    assert result.steps[0].budget == Budget(max_output_tokens=64)
    d0 = distance_table(maze).action_distance(initial_state(maze))
    assert ep.d_start_action == d0 and 0 <= ep.progress_action < 1


def test_infra_error_ends_the_episode_as_error_and_never_records_the_key(monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("GRIDBENCH_TEST_API_KEY", secret)
    result = play(resolve_maze("example"), Scripted([2, 2, 2], fail_at=3, secret=secret))
    ep = result.episode
    assert ep.termination == "error" and ep.error_class == "RateLimitError" and ep.steps == 2
    assert secret not in ep.error_message and "<GRIDBENCH_TEST_API_KEY>" in ep.error_message


def test_progress_is_clipped_and_unreachable_goals_score_zero():
    assert progress(20, 5, False) == 0.75
    assert progress(20, 30, False) == 0.0
    assert progress(20, None, False) == 0.0
    assert progress(20, 7, True) == 1.0


def test_should_stop_suspends_between_turns():
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 3

    result = play(resolve_maze("example"), Scripted([2, 1, 2, 2]), should_stop=stop)
    assert result == Suspended(IDENTITY.episode_id, 3)  # no termination: nothing to write, its journal resumes it


# ---- resuming ----------------------------------------------------------------------------------

def test_resume_replays_recorded_steps_and_plays_on():
    maze = resolve_maze("example")
    whole = play(maze, build_agent("builtin/explorer", Protocol(), seed=3))
    assert whole.episode.steps > 12
    # the explorer is rebuilt from the first 12 recorded steps and then plays the same game
    resumed = play(maze, build_agent("builtin/explorer", Protocol(), seed=3), recorded=whole.steps[:12], resumed=1)
    assert resumed.steps == whole.steps and resumed.episode.resumed == 1
    assert resumed.episode.row() | {"started_at": 0, "finished_at": 0, "wall_s": 0, "resumed": 0} == \
        whole.episode.row() | {"started_at": 0, "finished_at": 0, "wall_s": 0, "resumed": 0}
    agent = Scripted([2, 1, 2, 2, 2, 2])
    again = play(maze, agent, recorded=whole.steps[:0])
    assert agent.resumed == []
    head = play(maze, Scripted([2, 1, 2]), Protocol.preset("gridbench-final").model_copy(update={"step_cap_factor": 0.1}))
    agent = Scripted([2, 1, 2, 0, 0])
    tail = play(maze, agent, recorded=head.steps)
    assert agent.resumed == [2, 1] and [s.action for s in tail.steps[:2]] == ["forward", "right"]
    assert tail.steps[:2] == head.steps[:2] and again.episode.resumed == 0


def test_a_recorded_step_the_env_does_not_reproduce_is_an_error_naming_the_step():
    maze = resolve_maze("example")
    steps = play(maze, build_agent("builtin/oracle", Protocol())).steps
    forged = [*steps[:4], replace(steps[4], x=steps[4].x + 1), *steps[5:8]]
    result = play(maze, build_agent("builtin/oracle", Protocol()), recorded=forged)
    assert result.episode.termination == "error" and result.episode.error_class == "ResumeMismatch"
    assert "step 5: x recorded" in result.episode.error_message
    # a built-in agent that would not choose the recorded action again cannot be resumed either
    result = play(maze, build_agent("builtin/random", Protocol(), seed=1), recorded=steps[:6])
    assert result.episode.error_class == "ResumeMismatch" and "built-in agent chose" in result.episode.error_message


def test_episode_record_counts_from_the_steps_it_was_given():
    maze = resolve_maze("example")
    result = play(maze, Scripted([2, None, None, 1]), Protocol.preset("gridbench-final").model_copy(
        update={"step_cap_factor": 0.25}))
    ep = episode_record(IDENTITY, maze, Protocol.preset("gridbench-final"), termination="error", error=("X", "y"))
    assert ep.steps == 0 and ep.error_message == "y"
    assert result.episode.invalid_outputs == 2 and result.episode.usage == Usage.total(s.usage for s in result.steps)


def test_recorded_state_is_the_state_each_step_reached():
    from env import ACTIONS, initial_state, step
    from traces import recorded_state

    maze = resolve_maze("example")
    rows = play(maze, build_agent("builtin/oracle", Protocol.preset("gridbench-final"))).steps
    state = initial_state(maze)
    for row in rows:
        state, _ = step(maze, state, ACTIONS.index(row.action))
        assert recorded_state(maze, row.x, row.y, row.dir, row.carrying, json.loads(row.mechanisms)) == state
    assert state.carrying == 0 and state.doors == (0,)  # the key was carried through an unlocked door
    with pytest.raises(ValueError):
        recorded_state(maze, 1, 1, 0, "no-such-key", json.loads(rows[0].mechanisms))


@pytest.mark.parametrize("preset", ["gridbench-final", "study-final"])
def test_a_death_that_fails_the_episode_ends_it_there_and_replays(preset, tmp_path):
    """Under ``rules.death: fail`` a dead agent can change nothing: the episode ends ``died`` on
    that step (it used to go on, every turn paid for, until the watchdog), in both styles, and its
    replay agrees; under the default reading the same move resets the maze and play goes on."""
    from env.maze import maze_from_dict
    from episodes.replay import replay
    from traces import write_episode, write_manifest

    def maze(rules):
        return maze_from_dict({
            "format": "gridbench.maze/1", "id": "deadly", "ruleset": "multinet-pr57",
            "grid": ["#######", "#.....#", "#.###.#", "#.....#", "#######"],
            "start": {"pos": [1, 1], "dir": "east"}, "goal": [5, 1],
            "objects": [{"id": "x", "kind": "kill", "pos": [3, 1]}], **({"rules": rules} if rules else {})})

    protocol = Protocol.preset(preset)
    forward = 2
    died = play(maze({"death": "fail"}), Scripted([forward] * 40), protocol)
    assert (died.episode.termination, died.episode.steps, died.episode.solved) == ("died", 2, False)
    assert [s.event for s in died.steps] == ["moved", "died"]
    assert died.episode.d_end_action is None  # the goal is lost
    reset = play(maze(None), Scripted([forward] * 40), protocol)
    assert reset.episode.termination != "died" and reset.episode.steps > 2
    assert [s.event for s in reset.steps[:2]] == ["moved", "died"]
    run_dir = tmp_path / "run"
    write_episode(run_dir, died)
    write_manifest(run_dir, run="r", sweep={"name": "t"}, mazes={maze({"death": "fail"}).checksum: maze({"death": "fail"}).to_dict()},
                   invocation={"command": ["test"]})
    assert replay(run_dir, "e", verify=True).ok
