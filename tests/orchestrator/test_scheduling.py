"""The order episodes start in (``Pending.fill``, ``orchestrator.estimate.Lengths``): longest
expected first within each queue, the step cap or what the run's finished episodes say, every
episode and its id kept; the models still taken in turn. No Ray: ``testing.dispatch`` fakes the
actors around the real scheduler."""

from __future__ import annotations

from dataclasses import replace

from agents.usage import Usage
from episodes.episode import failed_episode
from orchestrator.estimate import Lengths
from orchestrator.scheduling import Pending
from orchestrator.sweep import parse_sweep
from testing.dispatch import scheduler
from traces import ERROR, open_store, write_episode

# the test mazes' step caps at the default factor of 3 (their optimal lengths are 19, 37, 37, 11, 21, 10)
CAPS = {"distract-10": 57, "keydoor-10": 111, "keydoor-8": 111, "scale-10": 33, "scale-8": 63, "switch-8": 30}
BY_CAP = ["keydoor-10", "keydoor-8", "scale-8", "distract-10", "scale-10", "switch-8"]  # ties in the sweep's order


def called(name: str, concurrency: int = 4) -> dict:
    return {"name": name, "model": f"openai/{name}", "api_base": "http://127.0.0.1:9/v1", "max_concurrency": concurrency}


def specs_of(maze_dir, models, **extra):
    return parse_sweep({"name": "t", "mazes": str(maze_dir), "models": models, **extra}, "t.yaml").episodes()


def test_each_queue_starts_with_its_longest_step_cap_ties_in_the_sweeps_order(maze_dir):
    specs = specs_of(maze_dir, [called("a"), called("b"), {"name": "oracle", "model": "builtin/oracle"}],
                     repeats=2, conditions=[{"name": "short", "step_cap_factor": 2}, "base"])
    pending = Pending()
    pending.fill(specs, Lengths())
    queued = [t.spec for q in (*pending.model.values(), *pending.cpu.values()) for t in q]
    # the same episodes, ids unchanged: only the order is chosen
    assert sorted(id(s) for s in queued) == sorted(id(s) for s in specs)
    assert sorted(s.episode_id for s in queued) == sorted(s.episode_id for s in specs)
    index = {s.episode_id: i for i, s in enumerate(specs)}
    for name in ("a", "b"):
        queue = [t.spec for t in pending.model[name]]
        caps = [CAPS[s.maze.id] * (3 if s.condition.name == "base" else 2) // 3 for s in queue]
        assert caps == sorted(caps, reverse=True)  # 111 four times (two mazes, two repeats), 74 four times, 63, ...
        for x, y, cap_x, cap_y in zip(queue, queue[1:], caps, caps[1:], strict=False):
            assert cap_x > cap_y or index[x.episode_id] < index[y.episode_id]  # ties as the sweep lists them
        assert [(s.maze.id, s.condition.name, s.repeat) for s in queue[:4]] == [
            ("keydoor-10", "base", 0), ("keydoor-10", "base", 1), ("keydoor-8", "base", 0), ("keydoor-8", "base", 1)]
        assert [s.maze.id for s in queue if s.condition.name == "base" and s.repeat == 0] == BY_CAP
    # built-in episodes stay queued by maze; within one, the larger cap first (the sweep lists short first)
    for queue in pending.cpu.values():
        assert [(t.spec.condition.name, t.spec.repeat) for t in queue] == [("base", 0), ("base", 1), ("short", 0),
                                                                           ("short", 1)]
    # the mazes in the order a CPU actor meets them when their counts tie: the longest episode first
    assert [pending.cpu[k][0].spec.maze.id for k in pending.cpu] == BY_CAP


def test_the_models_are_still_taken_in_turn_each_longest_first(maze_dir):
    specs = specs_of(maze_dir, [called("a", 2), called("b", 1)])
    pending = Pending()
    pending.fill(specs, Lengths())
    sched, actors = scheduler(pending)
    sched.dispatch()
    started = [(s.model.name, s.maze.id) for _, s in actors.started]
    assert started == [("a", "keydoor-10"), ("b", "keydoor-10"), ("a", "keydoor-8")]
    ref, spec = actors.started[1]  # b's first ends: its next one starts, a has no room
    sched._finish_task(ref, sched.in_flight.pop(ref))
    sched.dispatch()
    assert [(s.model.name, s.maze.id) for _, s in actors.started[3:]] == [("b", "keydoor-8")]


def test_finished_episodes_of_the_arm_set_the_expected_length(maze_dir):
    specs = specs_of(maze_dir, [called("a")], repeats=2)
    done = {s.maze.id: s for s in specs if s.repeat == 0}
    todo = [s for s in specs if s.repeat == 1]
    # repeat 0 took 20 turns on keydoor-10 (cap 111) and 33 on scale-10 (cap 33): 53 of 144, 0.37 of a cap
    lengths = Lengths([(done["keydoor-10"], 20), (done["scale-10"], 33)])
    expected = {s.maze.id: lengths.expected(s) for s in todo}
    assert expected["keydoor-10"] == 20 and expected["scale-10"] == 33  # what the arm took there
    assert abs(expected["keydoor-8"] - 111 * 53 / 144) < 1e-9  # elsewhere the cap, at the arm's share
    pending = Pending()
    pending.fill(todo, lengths)
    assert [t.spec.maze.id for t in pending.model["a"]] == [
        "keydoor-8", "scale-10", "scale-8", "distract-10", "keydoor-10", "switch-8"]  # 40.9 33 23.2 21.0 20 11.0
    assert sorted(t.spec.episode_id for t in pending.model["a"]) == sorted(s.episode_id for s in todo)
    # another arm's episodes say nothing of this one's
    other = specs_of(maze_dir, [called("b")])
    assert [Lengths([(done["keydoor-10"], 20)]).expected(s) for s in other] == [CAPS[s.maze.id] for s in other]


def test_lengths_of_a_run_are_its_finished_episodes_turns_errors_left_out(maze_dir, tmp_path):
    specs = specs_of(maze_dir, [called("a")])
    by_maze = {s.maze.id: s for s in specs}
    store = open_store(tmp_path / "run")
    for maze_id, termination, steps, reasks in (("keydoor-10", "stall", 20, 2), ("scale-10", ERROR, 5, 0)):
        s = by_maze[maze_id]
        failed = failed_episode(s.identity("run"), s.maze, s.condition.protocol, "X", "x", 1)
        record = replace(failed.episode, termination=termination, steps=steps, usage=Usage(calls=steps + reasks,
                                                                                             reasks=reasks))
        write_episode(store, replace(failed, episode=record))
    lengths = Lengths.of_run(store, specs)
    assert lengths.by_maze == {("a", by_maze["keydoor-10"].maze.checksum): 22}
    assert lengths.share == {"a": 22 / 111}
    assert Lengths.of_run(open_store(tmp_path / "empty"), specs).by_maze == {}
