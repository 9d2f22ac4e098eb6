"""The compiled searches (``env.oracle.compiled``, ``env.generator.floor_search``) find what
their plain Python twins find, state for state and cell for cell: the same plans, the same
states explored, the same sweeps with their edges in the same order, the same distance tables,
and the same generated mazes from the same seeds (docs/oracle.md#how-it-is-fast)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from oracle_mazes import build

from env import jit, resolve_mazes
from env.generator import GenParams, generate
from env.generator import topology as topo
from env.generator.generator import _facing, _standing, python_nav
from env.generator.topology import FloorSearches
from env.oracle import STATE_CAP, StateSpace, compiled, solve
from env.oracle.bfs import python_search

pytestmark = pytest.mark.skipif(jit.njit is None, reason="numba is not installed")

SETS = ("hand", "study", "study-heldout", "study-m7m10", "discovery", "pool", "long-horizon")


@pytest.fixture
def python_engine(monkeypatch):
    monkeypatch.setenv(jit.ENGINE_VAR, "python")


def both(fn, monkeypatch):
    """``fn()`` with the compiled kernels, then with the plain searches."""
    monkeypatch.setenv(jit.ENGINE_VAR, "compiled")
    assert jit.enabled()
    fast = fn()
    monkeypatch.setenv(jit.ENGINE_VAR, "python")
    assert not jit.enabled()
    plain = fn()
    monkeypatch.delenv(jit.ENGINE_VAR)
    return fast, plain


@pytest.fixture(scope="module")
def shipped():
    return resolve_mazes(list(SETS))


def test_every_shipped_maze_has_the_same_plan_and_explored_count(shipped, monkeypatch):
    def answers():
        return [(s.status, s.plan, s.states_explored) for s in (solve(m, cache=False) for m in shipped)]

    fast, plain = both(answers, monkeypatch)
    assert len(fast) == len(shipped) > 300
    assert fast == plain
    # and the shipped counts themselves (the manifests' optimal_actions) are what both say
    assert {s[0] for s in fast} == {"solved"}


def _sweep_fields(found):
    return {f: getattr(found, f).tolist() for f in ("ids", "parent", "action", "edge_src", "edge_dst", "edge_act")} | {
        "status": found.status, "goal": found.goal_index}


@pytest.mark.parametrize("name", ["hand", "study", "eval"])
def test_full_sweeps_keep_their_states_and_edges_in_order(name):
    """The distance tables' sweep: thin layers state by state, wide ones by ascending id."""
    tabled = [m for m in resolve_mazes([name]) if not StateSpace(m).explicit]
    assert tabled
    for m in tabled:
        a, b = StateSpace(m), StateSpace(m)
        plain = python_search(a, [a.start_id()], STATE_CAP + 1, False, True)
        fast = compiled.search(b, [b.start_id()], STATE_CAP + 1, False, True)
        assert fast is not None
        assert _sweep_fields(fast) == _sweep_fields(plain), m.id
        # the kernel's configurations, numbered as the plain search numbers them, with the same rows
        n = len(a.configs)
        assert a.configs == b.configs and a.config_index == b.config_index
        for name in ("passable", "pickup_to", "switch_to", "door_to"):
            assert np.array_equal(getattr(a, name)[:n], getattr(b, name)[:n]), (m.id, name)


def _room(side: int, switches: int, sealed: bool) -> object:
    rows = ["#" * side] + ["#" + "." * (side - 2) + "#" for _ in range(side - 2)] + ["#" * side]
    if sealed:
        rows[side - 3] = "#" + "." * (side - 4) + "###"
        rows[side - 2] = "#" + "." * (side - 4) + "#.#"
    objects = [{"id": f"s{i}", "kind": "switch", "color": "blue", "pos": [3 + 3 * i, 4], "controls": []}
               for i in range(switches)]
    return build(rows, (1, 1), (side - 2, side - 2), objects)


@pytest.mark.parametrize("cap", [STATE_CAP, 3000])
def test_wide_layers_and_the_cap_agree(cap):
    """An open room with switches: frontiers past the state-by-state size, and a cap that stops
    the search undecided part-way through a layer."""
    m = _room(24, 4, sealed=True)
    a, b = StateSpace(m), StateSpace(m)
    plain = python_search(a, [a.start_id()], cap, False, True)
    fast = compiled.search(b, [b.start_id()], cap, False, True)
    assert fast is not None
    assert _sweep_fields(fast) == _sweep_fields(plain)
    assert plain.status == ("unsolvable" if cap == STATE_CAP else "undecided")
    assert plain.ids.size > (10 * 400 if cap == STATE_CAP else cap)  # wide layers were searched


def test_a_goal_among_wide_layers_gives_the_same_plan():
    m = _room(24, 4, sealed=False)
    a, b = StateSpace(m), StateSpace(m)
    plain = python_search(a, [a.start_id()], STATE_CAP, True, False)
    fast = compiled.search(b, [b.start_id()], STATE_CAP, True, False)
    assert fast is not None and plain.status == "solved"
    assert fast.plan_to(fast.goal_index) == plain.plan_to(plain.goal_index)
    assert (fast.ids.tolist(), fast.parent.tolist()) == (plain.ids.tolist(), plain.parent.tolist())


def test_random_mazes_solve_alike(mazes_random, monkeypatch):
    def answers():
        return [(s.status, s.plan, s.states_explored) for s in (solve(m, cache=False) for m in mazes_random)]

    fast, plain = both(answers, monkeypatch)
    assert fast == plain


def test_an_explicit_maze_is_left_to_the_plain_search():
    m = resolve_mazes(["study-m7m10"])[0]
    space = StateSpace(m)
    assert space.explicit
    assert compiled.search(space, [space.start_id()], 10, True, False) is None
    assert compiled.study_search(space, space.start_id(), 10) is None


def test_without_numba_the_plain_searches_answer(monkeypatch):
    monkeypatch.setattr(jit, "njit", None)
    assert not jit.enabled()
    m = resolve_mazes(["hand"])[0]
    assert solve(m, cache=False).status == "solved"


# ---- the generator's searches ----------------------------------------------------------------


def _floors(count: int) -> list[set[tuple[int, int]]]:
    rng = random.Random(5)
    out = []
    for i in range(count):
        side = rng.choice([7, 10, 14, 24])
        out.append(topo.layout(("perfect", "rooms", "open", "winding")[i % 4], side, side, rng))
    return out


def test_floor_searches_find_the_same_cells_in_the_same_order(monkeypatch):
    rng = random.Random(9)
    for floor in _floors(12):
        cells = sorted(floor)
        picks = [rng.choice(cells) for _ in range(4)]

        def answers(floor=floor, cells=cells, picks=picks):
            s = FloorSearches(floor)
            return (
                [list(s.dist(c).items()) for c in picks],
                list(s.dist(picks[:3]).items()),
                [s.path(a, b) for a, b in zip(picks, picks[1:], strict=False)],
                s.removable(cells),
                [s.farthest(c, cells, max(3, len(cells) // 8)) for c in picks],
                [list(s.band(c, 2, 30)) for c in picks],
                topo.bfs_dist(picks[0], floor, picks[1:2]),
                topo.connected(floor - {picks[0]}),
                topo.shortest_path(picks[0], picks[1], floor),
            )

        fast, plain = both(answers, monkeypatch)
        assert fast == plain
        assert list(fast[6].items()) == list(plain[6].items())  # the dict's order too


def test_the_turn_search_ends_in_the_same_state(monkeypatch):
    from env.generator.floor_search import Floor

    rng = random.Random(3)
    for floor in _floors(8):
        cells = sorted(floor)
        grid = Floor.of(floor)
        assert grid is not None
        for _ in range(20):
            x, y = rng.choice(cells)
            state = (x, y, rng.randrange(4))
            target = rng.choice(cells)
            shut = set(rng.sample(cells, 3)) - {(x, y)}
            passable = floor - shut
            for facing in (False, True):
                plain = python_nav(state, passable, (_facing if facing else _standing)(target))
                assert grid.turns(grid.without(shut), state, target, facing) == plain


@pytest.mark.slow
def test_generated_mazes_are_byte_identical(monkeypatch):
    """Narrow bands, so that most placements are refused and every search runs many times."""
    cases = [
        GenParams(width=14, height=14, topology="rooms", chain="mixed_sequence", mechanisms=4, decoy_keys=1,
                  decoy_switches=1, deadends=1, band=(70, 110)),
        GenParams(width=12, height=12, topology="perfect", chain="key_sequence", mechanisms=3, band=(50, 80)),
        GenParams(width=10, height=10, topology="winding", chain="gate_behind_door", ruleset="multinet-r1",
                  band=(30, 60)),
        GenParams(width=16, height=16, topology="open", chain="mixed_sequence", mechanisms=2, decoy_keys=2,
                  band=(60, 120)),
    ]

    def mazes():
        return [json.dumps(generate(p, seed=21 + i, maze_id=f"g{i}").maze.to_dict(), sort_keys=True)
                for i, p in enumerate(cases)]

    fast, plain = both(mazes, monkeypatch)
    assert fast == plain


@pytest.mark.slow
def test_a_maze_past_the_recipes_is_the_same_maze_from_both_engines(monkeypatch):
    """The scaled verification (docs/generator.md, "Large mazes"): over a million states per check."""
    p = GenParams(width=14, height=14, topology="rooms", chain="mixed_sequence", mechanisms=4, decoy_keys=3,
                  decoy_switches=3, deadends=3)
    assert p.scaled
    fast, plain = both(lambda: json.dumps(generate(p, seed=1).maze.to_dict(), sort_keys=True), monkeypatch)
    assert fast == plain


@pytest.mark.parametrize("name", ["hand", "study"])
def test_distance_tables_and_edge_hops_agree(name, monkeypatch):
    from env.oracle import DistanceTable

    for m in resolve_mazes([name]):
        if StateSpace(m).explicit:
            continue

        def table(m=m):
            t = DistanceTable(m)
            rng = np.random.default_rng(0)
            keep = rng.random(t.edge_src.size) < 0.7
            return (t.dist.tolist(), t.forward_edges.order.tolist(), t.forward_edges.indptr.tolist(),
                    t.forward_edges.hops(np.array([0]), keep).tolist())

        fast, plain = both(table, monkeypatch)
        assert fast == plain, m.id
