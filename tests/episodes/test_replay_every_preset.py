"""Every shipped protocol preset under every ruleset: episodes played by the loop (no Ray), written
as a run, replay with --verify without a mismatch and resume half-way to the same rows, on mazes
with frozen tiles, hold switches, teleporters, kill cells and turntables. The step rows of all
three come from one builder (``episodes.step_row``) under the episode's own termination rules;
this is the test that would have caught replay judging a study-style episode's novelty by
gridbench's rule (``step N: novel recorded False, replayed True``)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pandas as pd
import pyarrow.parquet as pq
import pytest

from agents import Decision, Turn, resolve_protocol
from agents.builtin import OracleAgent, RandomAgent
from agents.protocol import PRESETS
from env import initial_state
from episodes.episode import EpisodeResult, run_episode
from episodes.replay import replay
from episodes.termination import gridbench_signature
from testing.mazes import TOURS, tour_actions, tour_maze
from traces import EpisodeIdentity, recorded_state, write_episode, write_manifest

SHORT_STALL = 3  # a variant of each preset whose episodes end by the stall watchdog


class TourAgent:
    """Plays ``actions`` (None: an unreadable reply, a no-op step), then the oracle's moves."""

    def __init__(self, actions: list[int | None]):
        self.actions = actions

    async def act(self, turn: Turn) -> Decision:
        if turn.step <= len(self.actions):
            a = self.actions[turn.step - 1]
        else:
            a = OracleAgent.choose(turn.maze, turn.state)
        return Decision(action=a, parse="invalid" if a is None else "exact", reply=f"step {turn.step}")

    async def resume(self, turn: Turn, decision: Decision) -> None:
        return None

    async def aclose(self) -> None:
        return None


def episodes_to_play():
    """(episode id, maze, protocol, agent factory) for every preset, ruleset and agent."""
    for ruleset, tour in TOURS.items():
        maze = tour_maze(ruleset)
        actions = tour_actions(maze, tour.prefix)
        for preset in PRESETS:
            shipped = resolve_protocol({"preset": preset, "tile_size": 8})
            short = resolve_protocol({"preset": preset, "tile_size": 8, "stall_window": SHORT_STALL})
            yield f"{ruleset}-{preset}-tour", maze, shipped, lambda actions=actions: TourAgent(actions)
            yield f"{ruleset}-{preset}-random", maze, shipped, lambda: RandomAgent(seed=5)
            yield f"{ruleset}-{preset}-stall", maze, short, lambda: RandomAgent(seed=6)


def identity(eid: str, maze_id: str) -> EpisodeIdentity:
    return EpisodeIdentity(run="presets", episode_id=eid, model_name=eid.rsplit("-", 1)[1], model="test/agent",
                           condition=eid, repeat=0, maze_id=maze_id)


@pytest.fixture(scope="module")
def presets_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("presets")
    played: dict[str, tuple] = {}

    async def play_all():
        for eid, maze, protocol, agent in episodes_to_play():
            result = await run_episode(maze, agent(), protocol, identity(eid, maze.id))
            assert isinstance(result, EpisodeResult)
            write_episode(out, result)
            played[eid] = (maze, protocol, agent, result)

    asyncio.run(play_all())
    mazes = {tour_maze(r) for r in TOURS}
    write_manifest(out, run="presets", sweep={"name": "presets"}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["test"]})
    return out, played


def test_every_preset_replays_without_a_mismatch_under_every_ruleset(presets_run):
    out, played = presets_run
    assert len(played) == len(TOURS) * len(PRESETS) * 3
    for eid in played:
        result = replay(out, eid)
        assert result.ok, (eid, [str(m) for m in result.mismatches[:3]])


def test_the_episodes_fire_every_mechanism_and_end_every_way_the_rules_end_them(presets_run):
    out, played = presets_run
    episodes = pd.read_parquet(out / "episodes").set_index("episode_id")
    steps = pd.read_parquet(out / "steps")
    for ruleset, tour in TOURS.items():
        for preset in PRESETS:
            eid = f"{ruleset}-{preset}-tour"
            assert episodes.loc[eid, "termination"] == "solved", eid
            mine = steps[steps["episode_id"] == eid].sort_values("step")
            assert tour.fires <= set(mine["event"]), (eid, tour.fires - set(mine["event"]))
            if ruleset == "multinet-r1":  # the hold switch is on exactly while the agent stands on it
                on = [json.loads(m)["switches"]["h"] for m in mine["mechanisms"]]
                assert any(on) and not on[-1], eid
    for preset in PRESETS:  # the watchdog under each style's order, and the cap of a preset without one
        assert {episodes.loc[f"{r}-{preset}-stall", "termination"] for r in TOURS} == {"stall"}, preset
    assert "step_cap" in set(episodes["termination"])


def test_study_novelty_differs_from_gridbench_novelty_where_the_bug_was(presets_run):
    """On the ice a study-style step reaches no new watchdog signature while the freeze countdown
    makes it a new whole state: replay judging it by gridbench's rule reported it as novel."""
    out, played = presets_run
    maze, _, _, result = played["multinet-r1-study-final-tour"]
    seen = {gridbench_signature(initial_state(maze))}
    differ = []
    for row in result.steps:
        key = gridbench_signature(recorded_state(maze, row.x, row.y, row.dir, row.carrying,
                                                 json.loads(row.mechanisms)))
        if row.novel != (key not in seen):
            differ.append(row.step)
        seen.add(key)
    assert differ and all(result.steps[s - 1].event == "frozen" for s in differ[:1]), differ


def test_each_episode_resumed_half_way_reproduces_its_rows(presets_run):
    _, played = presets_run
    for eid, (maze, protocol, agent, whole) in played.items():
        half = whole.steps[: len(whole.steps) // 2]
        resumed = asyncio.run(run_episode(maze, agent(), protocol, identity(eid, maze.id), recorded=half, resumed=1))
        assert isinstance(resumed, EpisodeResult) and resumed.episode.error_message is None, eid
        assert resumed.steps == whole.steps and resumed.episode.termination == whole.episode.termination, eid


def test_a_forged_row_is_reported_by_replay_and_by_resume(presets_run, tmp_path):
    out, played = presets_run
    maze, protocol, agent, whole = played["multinet-r1-study-final-tour"]
    flip = next(s for s in whole.steps if s.event == "frozen")
    forged = [replace(s, novel=not s.novel) if s.step == flip.step else s for s in whole.steps]
    resumed = asyncio.run(run_episode(maze, agent(), protocol, whole.episode.identity, recorded=forged))
    assert resumed.episode.error_class == "ResumeMismatch"
    assert resumed.episode.error_message == f"step {flip.step}: novel recorded {not flip.novel}, replayed {flip.novel}"
    run = tmp_path / "forged"
    write_episode(run, EpisodeResult(whole.episode, forged))
    (run / "manifest.json").write_text((out / "manifest.json").read_text())
    result = replay(run, whole.episode.identity.episode_id)
    assert [str(m) for m in result.mismatches] == \
        [f"step {flip.step}: novel recorded {not flip.novel}, replayed {flip.novel}"]


def test_replay_holds_the_ending_to_the_episodes_own_rules(presets_run, tmp_path):
    """A recorded ending the rules would not have reached is a mismatch: here a stall watchdog the
    episode's protocol did not have."""
    out, played = presets_run
    maze, protocol, agent, whole = played["multinet-r1-study-baseline-random"]  # no watchdog: the cap ends it
    assert protocol.stall_window is None and whole.episode.termination == "step_cap"
    run = tmp_path / "ending"
    write_episode(run, EpisodeResult(replace(whole.episode, termination="stall"), whole.steps))
    (run / "manifest.json").write_text((out / "manifest.json").read_text())
    result = replay(run, whole.episode.identity.episode_id)
    assert [str(m) for m in result.mismatches] == [f"step {len(whole.steps)}: termination recorded 'stall', "
                                                   "replayed 'step_cap'"]


def test_a_row_rewritten_over_steps_that_reproduce_is_reported(presets_run, tmp_path):
    """The columns the scores come from are held to the replay too: a walk that ran out of steps
    does not become a solve by rewriting its episode row."""
    out, played = presets_run
    maze, protocol, agent, whole = played["multinet-r1-study-baseline-random"]
    ep = whole.episode
    assert not ep.solved and ep.d_end_action > 0
    run = tmp_path / "row"
    write_episode(run, EpisodeResult(replace(ep, solved=True, d_end_action=0, progress_action=1.0), whole.steps))
    (run / "manifest.json").write_text((out / "manifest.json").read_text())
    result = replay(run, ep.identity.episode_id)
    assert [(m.step, m.column, m.recorded, m.replayed) for m in result.mismatches] == [
        (len(whole.steps), "solved", True, False), (len(whole.steps), "d_end_action", 0, ep.d_end_action),
        (len(whole.steps), "progress_action", 1.0, ep.progress_action)]


def gridbench(argv: list[str], capfd) -> tuple[int, str, str]:
    """The command line in this process: exit code, stdout, stderr."""
    from app.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    out, err = capfd.readouterr()
    return code, out, err


def test_the_replay_command_verifies_a_study_episode_on_a_frozen_tile(presets_run, capfd):
    out, _ = presets_run
    code, said, _ = gridbench(["replay", str(out), "multinet-r1-study-final-tour", "--verify"], capfd)
    assert code == 0 and "verified: all 32 steps reproduce" in said and "ending (solved)" in said, said


def test_an_unreadable_protocol_column_is_bad_input_naming_it(presets_run, tmp_path, capfd):
    out, played = presets_run
    *_, whole = played["minigrid-gridbench-final-tour"]
    run = tmp_path / "garbled"
    write_episode(run, whole)
    (run / "manifest.json").write_text((out / "manifest.json").read_text())
    [path] = (run / "episodes").rglob("*.parquet")
    table = pq.read_table(path)
    column = table.schema.get_field_index("protocol")
    pq.write_table(table.set_column(column, "protocol", [[json.dumps({"style": "gridbench", "stall_window": -4})]]),
                   path)
    code, _, err = gridbench(["replay", str(run), whole.episode.identity.episode_id], capfd)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "protocol: stall_window" in lines[0], err
