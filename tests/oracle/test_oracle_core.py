"""The fast oracle against the reference dynamics, the env, and its own distance table."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest
from oracle_mazes import build

import env
from env.oracle import (
    STATE_CAP,
    DistanceTable,
    action_distance,
    distance_table,
    optimal_actions,
    reference_solve,
    solve,
    state_space,
    tile_distance,
)
from env.sets import NAMED_SETS, set_files
from env.state import ACTIONS, initial_state, no_change, step

_USEFUL = range(5)


def _set_mazes(limit_per_set: int = 40):
    """Every maze file the named sets hold now (sets not generated yet are skipped)."""
    out = []
    for name in NAMED_SETS:
        try:
            files = set_files(name)
        except env.BadInput:
            continue
        out.extend(env.load_maze(p) for p in files[:limit_per_set])
    return out


def _random_reachable(maze, rng: random.Random, n: int):
    table = distance_table(maze)
    ids = table.sweep.ids
    picks = rng.sample(range(ids.size), min(n, ids.size))
    return [table.space.decode(int(ids[i])) for i in picks]


def test_fast_solve_agrees_with_reference_bfs(mazes_random):
    statuses = set()
    for m in mazes_random:
        fast, ref = solve(m), reference_solve(m)
        assert (fast.status, fast.optimal_actions) == (ref.status, ref.optimal_actions), m.id
        statuses.add(fast.status)
    assert statuses == {"solved", "unsolvable"}  # the random set exercises both answers


def test_successor_tables_equal_reference_step(mazes_random):
    rng = random.Random(7)
    swaps = 0
    for m in mazes_random:
        space = state_space(m)
        for s in _random_reachable(m, rng, 25):
            for a in _USEFUL:
                expected, event = step(m, s, a)
                assert space.successor(s, a) == expected, (m.id, s, ACTIONS[a])
                swaps += event == "swap"
    assert swaps > 0  # swapping keys was among the transitions checked


def _plans_reach_goal_on_last_action(mazes):
    solved = 0
    for m in mazes:
        sol = solve(m)
        if sol.status != "solved":
            continue
        e = gym.make(env.ENV_ID, maze=m)
        e.reset()
        for i, a in enumerate(sol.plan):
            _, _, terminated, _, info = e.step(a)
            assert terminated == (i == len(sol.plan) - 1), (m.id, i, info["event"])
        assert info["event"] == "goal"
        e.close()
        solved += 1
    return solved


def test_plan_runs_in_mazeenv_for_every_set_maze():
    mazes = _set_mazes()
    assert mazes, "the hand set at least ships with the package"
    assert _plans_reach_goal_on_last_action(mazes) == sum(solve(m).status == "solved" for m in mazes)


def test_plan_runs_in_mazeenv_for_random_mazes(mazes_random):
    assert _plans_reach_goal_on_last_action(mazes_random) >= 20


def test_bellman_consistency_on_random_reachable_states(mazes_random):
    rng = random.Random(11)
    checked = 0
    for m in mazes_random + _set_mazes(10):
        goal = tuple(m.goal)
        for s in _random_reachable(m, rng, 30):
            d = action_distance(m, s)
            if s.pos == goal:
                assert d == 0
                continue
            # a step that changes nothing (under multinet-pr57: nothing but the turntables' arrows)
            # is no move of a plan (env.state.no_change; docs/oracle.md)
            after = [step(m, s, a)[0] for a in _USEFUL]
            succ = [action_distance(m, n) for n in after if not no_change(s, n)]
            finite = [x for x in succ if x is not None]
            if d is None:
                assert not finite, (m.id, s)
            else:
                assert d == 1 + min(finite), (m.id, s)
                checked += 1
    assert checked > 500


def test_table_distance_from_start_equals_solve_and_tile_is_a_lower_bound(mazes_random):
    rng = random.Random(3)
    for m in mazes_random + _set_mazes(10):
        table = distance_table(m)
        assert distance_table(m) is table  # cached per maze
        assert table.action_distance(initial_state(m)) == solve(m).optimal_actions
        for s in _random_reachable(m, rng, 40):
            d = table.action_distance(s)
            if d is not None:
                assert tile_distance(m, s.pos) <= d


def test_distance_of_state_the_sweep_never_reached_is_still_exact():
    m = env.resolve_maze("example")
    s = initial_state(m)
    # the key already carried: not reachable from the start (the key cell is still full)
    odd = type(s)(pos=(3, 4), dir=0, carrying=-1, keys=((1, 4),), doors=s.doors, switches=s.switches)
    assert action_distance(m, odd) == reference_solve(m, odd).optimal_actions


def test_undecided_past_the_cap_never_unsolvable():
    room = ["#" * 12] + ["#" + "." * 10 + "#" for _ in range(10)] + ["#" * 12]
    open_room = build(room, (1, 1), (10, 10))
    assert solve(open_room).status == "solved"
    assert solve(open_room, cap=50).status == "undecided"
    # sealed goal: truly unsolvable, but a cap below its reachable set must not say so
    sealed = room.copy()
    sealed[9] = "#" + "." * 9 + "##"
    sealed[10] = "#" + "." * 8 + "#.#"
    m = build(sealed, (1, 1), (10, 10))
    assert solve(m).status == "unsolvable"
    small = solve(m, cap=100)
    assert small.status == "undecided" and small.optimal_actions is None
    with pytest.raises(OverflowError):
        DistanceTable(m, cap=100)


def test_design_example_optimum_and_plan_names():
    sol = optimal_actions(env.resolve_maze("example"))
    assert sol.optimal_actions == 19 and len(sol.plan_names) == 19
    assert {"pickup", "toggle"} <= set(sol.plan_names)
    assert STATE_CAP == 500_000


def test_swap_puts_the_carried_key_where_the_front_key_was():
    m = build(["#######", "#.....#", "#######"], (1, 1), (5, 1), [
        {"id": "a", "kind": "key", "color": "red", "pos": [2, 1]},
        {"id": "b", "kind": "key", "color": "blue", "pos": [3, 1]},
    ])
    s = initial_state(m)
    space = state_space(m)
    s = space.successor(s, 3)  # pick up a
    s = space.successor(s, 2)  # step into a's cell
    s2 = space.successor(s, 3)  # swap: b carried, a back on b's cell
    assert s2.carrying == 1 and s2.keys == ((3, 1), None)
    assert s2 == step(m, s, 3)[0]
    # keys block the corridor for good: with swap one key always lies in front
    assert solve(m).status == "unsolvable"
    assert np.all(distance_table(m).dist < 0)


@pytest.mark.parametrize("dense_limit", [1 << 26, 64])
@pytest.mark.parametrize("scalar_layer", [0, 3, 10**9])
def test_every_search_path_gives_the_same_answers(monkeypatch, mazes_random, scalar_layer, dense_limit):
    """State-by-state layers, numpy layers, mixes of both, dense and sparse seen-indexes."""
    from env.oracle import bfs

    monkeypatch.setattr(bfs, "_SCALAR_LAYER", scalar_layer)
    monkeypatch.setattr(bfs._SeenIndex, "DENSE_LIMIT", dense_limit)
    rng = random.Random(scalar_layer + dense_limit)
    for m in mazes_random[:40]:
        sol, ref = solve(m), reference_solve(m)
        assert (sol.status, sol.optimal_actions) == (ref.status, ref.optimal_actions), m.id
        s = initial_state(m)
        for a in sol.plan:
            s, event = step(m, s, a)
        assert sol.status != "solved" or event == "goal"
        table = DistanceTable(m)
        assert table.action_distance(initial_state(m)) == ref.optimal_actions
        for s in rng.sample([table.space.decode(int(i)) for i in table.sweep.ids], min(10, table.states)):
            d = table.action_distance(s)
            if d and s.pos != tuple(m.goal):
                nxt = [table.action_distance(step(m, s, a)[0]) for a in _USEFUL]
                assert d == 1 + min(x for x in nxt if x is not None)


def test_table_distance_equals_reference_search_from_that_state(mazes_random):
    rng = random.Random(5)
    compared = 0
    for m in mazes_random[:30]:
        for s in _random_reachable(m, rng, 8):
            assert action_distance(m, s) == reference_solve(m, s).optimal_actions, (m.id, s)
            compared += 1
    assert compared > 100
