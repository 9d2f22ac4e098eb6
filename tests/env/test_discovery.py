"""Discovery timelines (env.discovery): each stage of each mechanism at the step it happened."""

from __future__ import annotations

from env import initial_state, resolve_maze, step
from env.discovery import Move, timelines
from env.oracle import solve


def walk(maze, actions):
    state, moves = initial_state(maze), []
    for n, a in enumerate(actions, start=1):
        after, _ = step(maze, state, a)
        moves.append(Move(n, a, state, after))
        state = after
    return moves


def test_the_oracle_meets_tries_operates_and_uses_every_mechanism_of_the_design_example_in_order():
    maze = resolve_maze("example")
    moves = walk(maze, solve(maze).plan)
    found = {t.object_id: t for t in timelines(maze, initial_state(maze), moves)}
    assert set(found) == {"k1", "d1", "s1", "g1"}
    for oid in ("k1", "d1", "s1"):
        t = found[oid]
        assert None not in (t.contact, t.attempt, t.success, t.use), t
        assert t.contact <= t.attempt <= t.success <= t.use, t
    # a gate is opened from its switch, before the agent comes near it, and never tried itself
    gate = found["g1"]
    assert gate.attempt is None and gate.success < gate.contact <= gate.use
    # the key is used where its door is walked through; the gate opens when its switch is flipped
    assert found["k1"].use == found["d1"].use and found["g1"].success == found["s1"].success
    assert found["s1"].use == found["g1"].use


def test_an_agent_that_never_acts_only_makes_contact():
    maze = resolve_maze("example")
    plan = [a for a in solve(maze).plan if a in (0, 1, 2)]  # the route's turns and moves only
    stages = timelines(maze, initial_state(maze), walk(maze, plan))
    assert all(t.attempt is None and t.success is None and t.use is None for t in stages)
    assert any(t.contact is not None for t in stages)


def test_a_recorded_episode_reads_back_as_the_same_timelines_in_any_row_order():
    import json

    from env import ACTIONS
    from traces import episode_timelines, mechanisms_json

    maze = resolve_maze("example")
    moves = walk(maze, solve(maze).plan)
    rows = [{"step": m.step, "action": ACTIONS[m.action], "x": m.after.pos[0], "y": m.after.pos[1],
             "dir": m.after.dir, "carrying": None if m.after.carrying < 0 else maze.keys[m.after.carrying].id,
             "mechanisms": mechanisms_json(maze, m.after)} for m in moves]
    assert json.loads(rows[0]["mechanisms"])  # the column as traces hold it
    expected = timelines(maze, initial_state(maze), moves)
    assert episode_timelines(maze, rows[::-1]) == expected
    assert any(t.use is not None for t in expected)
