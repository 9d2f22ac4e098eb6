"""The ``multinet-pr57`` ruleset: R1 with the study's later tiles (issue 33). Each rule is held to a
small maze built for it; the oracle is held to the reference BFS from states deep in an episode
(arrow phase, ice countdown and portal latch included); frames, the text map and the trace codec
show and keep every new piece of state; the four checks run."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from env.checks import run_checks
from env.errors import BadInput
from env.maze import maze_from_dict
from env.oracle import action_distance, reference_solve, solve, tile_distance
from env.render import render_state
from env.state import FORWARD, LEFT, PICKUP, RIGHT, TOGGLE, initial_state, mechanism_info, step
from env.text import text_projection
from traces import mechanisms_json
from traces._codec import recorded_state


def maze(grid, objects, goal, ruleset="multinet-pr57", rules=None, start=(1, 1)):
    d = {"format": "gridbench.maze/1", "id": "t", "ruleset": ruleset, "grid": grid,
         "start": {"pos": list(start), "dir": "east"}, "goal": list(goal), "objects": objects}
    if rules is not None:
        d["rules"] = rules
    return maze_from_dict(d)


def run(m, actions, s=None):
    s = s or initial_state(m)
    events = []
    for a in actions:
        s, ev = step(m, s, a)
        events.append(ev)
    return s, events


ROW = ["#########", "#.......#", "#.......#", "#########"]


def turntable(pos, d="north", tid="t0"):
    return {"id": tid, "kind": "turntable", "pos": list(pos), "dir": d}


def test_arrows_turn_after_every_step_and_a_forward_rides_the_arrow_as_it_points():
    m = maze(ROW, [turntable((2, 1), "north")], goal=(7, 2))
    s, events = run(m, [FORWARD])  # onto the turntable; its arrow now points east (north + 1)
    assert (s.pos, s.phase, events) == ((2, 1), 1, ["moved"])
    assert mechanism_info(m, s)["arrows"] == {"t0": "east"}
    after, ev = step(m, s, FORWARD)  # rides east as the arrow points before this step's turn
    assert (after.pos, after.dir, ev) == ((3, 1), 0, "rode")
    waited, _ = run(m, [LEFT], s)  # a turn waits for the arrow; the heading is kept for toggles
    assert waited.dir == 3 and mechanism_info(m, waited)["arrows"] == {"t0": "south"}
    rode, ev = step(m, waited, FORWARD)
    assert (rode.pos, rode.dir, ev) == ((2, 2), 3, "rode")  # south, while the agent faces north


def test_a_blocked_ride_stays_and_is_no_move_of_a_plan_but_the_arrows_still_turn():
    m = maze(ROW, [turntable((2, 1), "east")], goal=(7, 2))
    s, _ = run(m, [FORWARD])  # arrow south
    s, _ = run(m, [LEFT, LEFT], s)  # arrow north: the wall
    bumped, ev = step(m, s, FORWARD)
    assert ev == "bump" and bumped.pos == s.pos and bumped.phase == (s.phase + 1) % 4
    # every arrow turns after every step, a useless pickup or toggle too
    assert step(m, s, PICKUP)[0].phase == step(m, s, TOGGLE)[0].phase == (s.phase + 1) % 4


def test_toggle_on_a_turntable_uses_the_heading():
    grid = ["######", "#....#", "######"]
    m = maze(grid, [{"id": "k", "kind": "key", "color": "red", "pos": [1, 1]},
                    turntable((2, 1), "north"),
                    {"id": "d", "kind": "door", "color": "red", "pos": [3, 1], "state": "locked"}], goal=(4, 1))
    s, events = run(m, [PICKUP, FORWARD, TOGGLE])
    assert events == ["pickup", "moved", "door_unlocked"] and s.pos == (2, 1)
    assert solve(m).optimal_actions == reference_solve(m).optimal_actions


def test_portals_two_way_one_way_and_the_latch():
    two = maze(ROW, [{"id": "p", "kind": "teleporter", "color": "cyan", "pos": [3, 1], "to": [6, 2]}], goal=(7, 1))
    s, events = run(two, [FORWARD, FORWARD])
    assert events == ["moved", "teleported"] and s.pos == (6, 2) and s.latched
    assert mechanism_info(two, s)["latched"] is True
    s, events = run(two, [RIGHT, RIGHT, FORWARD], s)  # leaving the arrival end clears the latch
    assert events[-1] == "moved" and s.pos == (5, 2) and not s.latched
    s, events = run(two, [LEFT, LEFT, FORWARD], s)  # back into the other end: it sends too
    assert events[-1] == "teleported" and s.pos == (3, 1)
    one = maze(ROW, [{"id": "p", "kind": "teleporter", "color": "purple", "pos": [6, 1], "to": [3, 1],
                      "bidirectional": False}], goal=(7, 2))
    s, events = run(one, [FORWARD, FORWARD])  # into the receiving end: nothing sends
    assert events == ["moved", "moved"] and s.pos == (3, 1) and not s.latched


def test_a_death_tile_resets_the_whole_maze_and_the_episode_goes_on():
    m = maze(ROW, [{"id": "k", "kind": "key", "color": "red", "pos": [2, 1]},
                   turntable((3, 2), "west"), {"id": "x", "kind": "kill", "pos": [4, 1]}], goal=(7, 2))
    s, events = run(m, [FORWARD, PICKUP, FORWARD, FORWARD])
    assert events == ["moved", "pickup", "moved", "died"]
    assert s == initial_state(m)  # keys, hand, heading, arrows: all as at the start
    s, ev = step(m, s, FORWARD)
    assert ev == "moved"  # and play goes on
    # a ride into a death tile kills too: on the turntable after one step its arrow points south
    rider = maze(ROW, [turntable((2, 1), "east"), {"id": "x", "kind": "kill", "pos": [2, 2]}], goal=(7, 2))
    s, events = run(rider, [FORWARD, FORWARD])
    assert events == ["moved", "died"] and s == initial_state(rider)


def test_the_failing_death_reading_ends_the_episode_and_the_oracle_avoids_it():
    grid = ["#######", "#.....#", "#.###.#", "#.....#", "#######"]
    objs = [{"id": "x", "kind": "kill", "pos": [3, 1]}]
    reset = maze(grid, objs, goal=(5, 1))
    fail = maze(grid, objs, goal=(5, 1), rules={"death": "fail"})
    assert fail.rulebook.death == "fail" and reset.rulebook.death == "reset"
    assert "rules" not in reset.to_dict() and fail.to_dict()["rules"]["death"] == "fail"
    dead, events = run(fail, [FORWARD, FORWARD])
    assert events == ["moved", "died"] and dead.pos == (3, 1)
    # the last frame shows the agent dead on the tile: the viewer's tile atlas has that tile
    from env.minigrid_env import drawn_grid
    from env.tiles import shown_tiles, tile_name

    on_tile = tile_name(drawn_grid(fail, dead).get(3, 1))
    assert on_tile == "kill" and (on_tile, dead.dir) in {(tile_name(o), d) for o, d in shown_tiles()}
    # nothing happens any more, and the oracle knows the goal is lost
    assert run(fail, [LEFT, FORWARD, TOGGLE], dead)[0].pos == (3, 1)
    assert action_distance(fail, dead) is None and solve(fail, dead).status == "unsolvable"
    assert solve(fail).optimal_actions == solve(reset).optimal_actions == reference_solve(fail).optimal_actions
    from env.minigrid_env import MazeEnv

    env = MazeEnv(fail)
    env.reset()
    env.step(FORWARD)
    _, reward, terminated, _, info = env.step(FORWARD)
    assert info["event"] == "died" and terminated and reward == 0.0
    env = MazeEnv(reset)
    env.reset()
    env.step(FORWARD)
    _, _, terminated, _, info = env.step(FORWARD)
    assert info["event"] == "died" and not terminated


def test_ice_swallows_every_kind_of_action_and_freezes_again_on_reentry():
    m = maze(ROW, [{"id": "f", "kind": "frozen", "pos": [2, 1]}, turntable((5, 2), "east")], goal=(7, 1),
             rules={"freeze_steps": 3})
    s, events = run(m, [FORWARD])
    assert events == ["froze"] and s.frozen == 3
    s, events = run(m, [LEFT, PICKUP, TOGGLE], s)
    assert events == ["frozen"] * 3 and s.pos == (2, 1) and s.dir == 0 and s.frozen == 0
    assert s.phase == 0  # four steps: the arrows went round once while the agent was frozen
    s, events = run(m, [FORWARD, RIGHT, RIGHT, FORWARD], s)
    assert events[-1] == "froze" and s.frozen == 3


def test_turntables_exist_only_under_the_later_ruleset():
    with pytest.raises(BadInput) as e:
        maze(ROW, [turntable((2, 1))], goal=(7, 2), ruleset="multinet-r1")
    assert e.value.field == "objects[0].kind" and "multinet-pr57" in e.value.message
    with pytest.raises(BadInput) as e:
        maze(ROW, [], goal=(7, 2), ruleset="multinet-r1", rules={"death": "fail"})
    assert e.value.field == "rules.death"


MIXED = ["##########", "#........#", "#.##.###.#", "#........#", "#.#.##.#.#", "#........#", "##########"]


def mixed_maze():
    return maze(MIXED, [
        {"id": "k", "kind": "key", "color": "red", "pos": [1, 3]},
        {"id": "d", "kind": "door", "color": "red", "pos": [8, 4], "state": "locked"},
        {"id": "s", "kind": "switch", "color": "yellow", "pos": [4, 5], "controls": ["g"]},
        {"id": "g", "kind": "gate", "color": "grey", "pos": [8, 2]},
        {"id": "p", "kind": "teleporter", "color": "cyan", "pos": [6, 5], "to": [3, 1]},
        {"id": "x", "kind": "kill", "pos": [5, 3]},
        {"id": "f", "kind": "frozen", "pos": [1, 5]},
        turntable((4, 1), "south", "t0"), turntable((6, 3), "west", "t1"),
    ], goal=(8, 5), rules={"freeze_steps": 2})


def test_the_oracle_is_exact_from_states_deep_in_an_episode():
    m = mixed_maze()
    rng = random.Random(33)
    s = initial_state(m)
    checked = 0
    for _ in range(400):
        s, _ = step(m, s, rng.randrange(5))
        if s.pos == m.goal:
            s = initial_state(m)
        if rng.random() < 0.08:
            fast, slow = solve(m, s), reference_solve(m, s)
            assert fast.optimal_actions == slow.optimal_actions, s
            assert action_distance(m, s) == fast.optimal_actions
            d = tile_distance(m, s.pos)
            assert d is not None and d <= fast.optimal_actions
            replayed = s
            for a in fast.plan:
                replayed, _ = step(m, replayed, a)
            assert replayed.pos == m.goal
            checked += 1
    assert checked >= 20


def test_frames_text_and_trace_columns_show_every_new_piece_of_state():
    m = mixed_maze()
    s0 = initial_state(m)
    s1, _ = step(m, s0, LEFT)  # only the facing and the arrows change
    f0, f1 = render_state(m, s0, 16), render_state(m, s1, 16)
    cell = lambda f, c: f[c[1] * 16:(c[1] + 1) * 16, c[0] * 16:(c[0] + 1) * 16]  # noqa: E731
    assert not np.array_equal(cell(f0, (4, 1)), cell(f1, (4, 1)))  # the arrow turned
    teleporter, ice, skull, table = (cell(f0, c) for c in ((6, 5), (1, 5), (5, 3), (4, 1)))
    assert len({t.tobytes() for t in (teleporter, ice, skull, table)}) == 4
    text = text_projection(m, s0)
    assert "@ pointer tile" in text and "pointer tile at (4, 1): pointing south" in text
    assert "cyan ring at (6, 5)" in text
    assert "pointer tile at (4, 1): pointing west" in text_projection(m, s1)
    rng = random.Random(7)
    s = s0
    for _ in range(200):
        s, _ = step(m, s, rng.randrange(6))
        back = recorded_state(m, s.pos[0], s.pos[1], s.dir,
                              m.keys[s.carrying].id if s.carrying >= 0 else None, json.loads(mechanisms_json(m, s)))
        assert back == s


def test_the_four_checks_run_on_a_later_maze():
    results = {r.check: r for r in run_checks(mixed_maze())}
    assert set(results) == {"reachable", "mechanism_necessity", "chain_ordering", "distractor_safety"}
    assert results["reachable"].passed


def test_a_mirror_turns_the_arrows_the_other_way_so_it_is_no_exact_twin():
    from env.sets import resolve_maze
    from env.variants import mirror, rotate

    m = resolve_maze("study-m7m10/M7_18x18_dense_kr_sg_kb_rotating_0")
    flipped = mirror(m, "tb")
    assert flipped.family == "near-isomorphic" and any("turntables" in c for c in flipped.record["changed"])
    assert solve(flipped.maze).optimal_actions != solve(m).optimal_actions  # 131 against 133
    turned = rotate(m, 90).maze  # a rotation turns each arrow with the layout
    assert [t.dir for t in turned.of_kind("turntable")] == [
        ("east", "south", "west", "north")[(("east", "south", "west", "north").index(t.dir) + 1) % 4]
        for t in m.of_kind("turntable")]
    # without turntables the top-bottom mirror stays an exact twin, as under multinet-r1
    plain = resolve_maze("study-m7m10/M7_18x18_dense_kr_sg_kb_death_0")
    assert mirror(plain, "tb").family == "isomorphic"
    assert solve(mirror(plain, "tb").maze).optimal_actions == solve(plain).optimal_actions


def test_discovery_timelines_of_the_later_tiles():
    from env.discovery import Move, timelines

    m = maze(["#########", "#.......#", "#.......#", "#.#######", "#.......#", "#########"], [
        {"id": "f", "kind": "frozen", "pos": [2, 1]},
        {"id": "p", "kind": "teleporter", "color": "cyan", "pos": [4, 1], "to": [6, 2]},
        {"id": "x", "kind": "kill", "pos": [7, 2]},
        turntable((1, 4), "north"),
    ], goal=(7, 4), rules={"freeze_steps": 2})
    s0 = s = initial_state(m)
    # ice, two swallowed actions, the portal, the death tile; then down to the turntable and a ride east
    actions = [FORWARD, LEFT, RIGHT, FORWARD, FORWARD, FORWARD, RIGHT, FORWARD, FORWARD, FORWARD, RIGHT, FORWARD]
    moves, events = [], []
    for i, a in enumerate(actions, start=1):
        n, ev = step(m, s, a)
        moves.append(Move(i, a, s, n))
        events.append(ev)
        s = n
    assert events == ["froze", "frozen", "frozen", "moved", "teleported", "died", "turned", "moved", "moved",
                      "moved", "turned", "rode"] and s.pos == (2, 4) and s.dir == 2
    t = {x.kind: x for x in timelines(m, s0, moves)}
    assert (t["frozen"].contact, t["frozen"].attempt, t["frozen"].success, t["frozen"].use) == (0, 1, 1, None)
    assert (t["teleporter"].contact, t["teleporter"].attempt, t["teleporter"].success, t["teleporter"].use) \
        == (4, 5, 5, None)
    assert (t["kill"].contact, t["kill"].attempt, t["kill"].success, t["kill"].use) == (5, 6, 6, None)
    # the ride east while facing west: its success and its use at once
    assert (t["turntable"].contact, t["turntable"].attempt, t["turntable"].success, t["turntable"].use) \
        == (9, 12, 12, 12)
    # R1's mazes keep the four kinds
    r1 = maze(["#########", "#.......#", "#.......#", "#########"],
              [{"id": "f", "kind": "frozen", "pos": [2, 1]}], goal=(7, 2), ruleset="multinet-r1")
    assert timelines(r1, initial_state(r1), []) == []


def test_each_later_tile_has_a_removal_twin():
    from env.sets import resolve_maze
    from env.variants import ABLATIONS, build_variants

    m = resolve_maze("study-m7m10/M10_18x18_dense_kr_sg_kb_portals_death_rotating_frozen_0")
    kinds = {"no-portals": "teleporter", "no-deaths": "kill", "no-ice": "frozen", "no-turntables": "turntable"}
    assert set(kinds) <= set(ABLATIONS)
    optimal = solve(m).optimal_actions
    for name, kind in kinds.items():
        (twin,) = build_variants(m, name)
        assert twin.family == "ablation" and twin.maze.ruleset == "multinet-pr57"
        assert {o.kind for o in twin.maze.objects} == {o.kind for o in m.objects} - {kind}
        removed = {o.pos for o in m.objects if o.kind == kind} | {o.to for o in m.of_kind("teleporter") if kind == "teleporter"}
        assert all(twin.maze.grid[y][x] == "." for x, y in removed)
        assert solve(twin.maze).status == "solved"
    # the portals are the M10 maze's shortcut: without them the way is far longer
    assert solve(next(iter(build_variants(m, "no-portals"))).maze).optimal_actions > optimal
    (skipped,) = build_variants(resolve_maze("study-m7m10/M7_18x18_dense_kr_sg_kb_death_0"), "no-ice")
    assert skipped.reason == "it has no ice"
