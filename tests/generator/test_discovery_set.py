"""The generator's later mechanisms (the study's and gridbench's own, under multinet-pr57) and the
shipped ``discovery`` set: every maze passes the oracle and the four checks, its mechanism matters
(the removal twin's optimal count differs) and the oracle's plan meets it, and the set is balanced
across mechanism kinds and path bands."""

from __future__ import annotations

import functools
import hashlib
from collections import Counter

import pytest

from env.checks import run_checks
from env.errors import BadInput
from env.generator import GenParams, generate, regenerate
from env.generator.generator import TILE_OBJECT, TILE_TWIN, tile_matters, trap_by_the_rulebook
from env.generator.maze_pool import (
    DISCOVERY_BANDS,
    DISCOVERY_KINDS,
    POOL_TILES,
    content_key,
    discovery_recipe,
    manifest_entry,
    pool_recipe,
    read_set,
)
from env.maze import MULTINET_PR57
from env.mechanics import by_name
from env.oracle import solve
from env.sets import set_dir
from env.state import initial_state, step
from env.variants import Variant, ablate

# the event the oracle's plan must report where each mechanism fires
FIRES = {"portal": "teleported", "ice": "froze", "turntable": "rode"}
# the tiles a plan walks round: the naive route (the twin's plan) crosses them
WALKED_ROUND = {"death": "kill", "oneway": "oneway"}
# the checksums of d0001..d0030, the set before the second edition's kinds were added, in one hash
FIRST_EDITION = "88664f0b9412b73cfaccca02eeffaa5f89f6c2f56ab211adeb918df1982a489c"


@functools.cache
def shipped():
    manifest, mazes = read_set(set_dir("discovery"))
    return manifest, mazes


def _replay(maze, plan):
    s = initial_state(maze)
    cells, events = [s.pos], []
    for a in plan:
        s, ev = step(maze, s, a)
        cells.append(s.pos)
        events.append(ev)
    return cells, events


def test_every_entry_is_rederived_and_every_maze_passes_the_oracle_and_the_checks():
    manifest, mazes = shipped()
    assert manifest["set"] == "discovery" and manifest["count"] == len(mazes) == 2 * len(DISCOVERY_KINDS) * 3
    for m, e in zip(mazes, manifest["mazes"], strict=True):
        assert m.ruleset == MULTINET_PR57
        opt = solve(m).optimal_actions
        assert opt is not None
        assert manifest_entry(m, opt) == e, m.id
        failed = [r.check for r in run_checks(m) if not r.passed and not trap_by_the_rulebook(m, r)]
        assert failed == [], (m.id, failed)


def test_the_set_is_balanced_across_kinds_and_bands():
    manifest, mazes = shipped()
    cells = Counter((e["discovery"]["kind"], e["discovery"]["band"]) for e in manifest["mazes"])
    assert cells == Counter({(k, b): 2 for k in DISCOVERY_KINDS for b in DISCOVERY_BANDS})
    for m, e in zip(mazes, manifest["mazes"], strict=True):
        side, lo, hi = DISCOVERY_BANDS[e["discovery"]["band"]]
        assert (m.width, m.height) == (side, side) and lo <= e["optimal_actions"] <= hi, m.id
        kind = e["discovery"]["kind"]
        later = {o.kind for o in m.objects if o.kind in TILE_OBJECT.values()}
        if kind == "switch_gate":  # one mechanism per maze: the switch and its gate alone
            assert later == set() and (len(m.switches), len(m.gates), len(m.keys)) == (1, 1, 0)
        else:
            assert later == {TILE_OBJECT[kind]} and not m.switches and not m.keys, m.id


def test_each_mechanism_matters_and_the_plan_meets_it():
    manifest, mazes = shipped()
    for m, e in zip(mazes, manifest["mazes"], strict=True):
        kind = e["discovery"]["kind"]
        if kind == "switch_gate":
            continue
        opt = e["optimal_actions"]
        assert tile_matters(m, kind, opt), m.id
        twin = ablate(m, TILE_TWIN[kind])
        assert isinstance(twin, Variant)
        twin_sol = solve(twin.maze)
        assert twin_sol.optimal_actions is not None
        # a portal is a shortcut; the others cost actions
        assert (opt < twin_sol.optimal_actions) == (kind == "portal"), m.id
        cells, events = _replay(m, solve(m).plan)
        assert cells[-1] == m.goal, m.id
        if kind in WALKED_ROUND:  # the naive route (the twin's optimal plan) walks over the tile
            tile = next(o.pos for o in m.objects if o.kind == WALKED_ROUND[kind])
            assert tile in _replay(twin.maze, twin_sol.plan)[0], m.id
            assert "died" not in events and "bump" not in events
        elif kind == "reverser":  # the plan steps onto it and pays for turning back round
            assert next(o.pos for o in m.objects if o.kind == "reverser") in cells, m.id
        else:
            assert FIRES[kind] in events, (m.id, events)


def test_discovery_mazes_regenerate_from_their_meta():
    _, mazes = shipped()
    for m in mazes[:10]:
        assert m.meta is not None
        assert content_key(regenerate(m.meta)) == content_key(m), m.id


def test_the_recipe_is_deterministic_and_refuses_an_unbalanced_count():
    cells = len(DISCOVERY_KINDS) * len(DISCOVERY_BANDS)
    a, b = discovery_recipe(cells, 3), discovery_recipe(cells, 3)
    assert a == b and {s.discovery for s in a} == {(k, band) for k in DISCOVERY_KINDS for band in DISCOVERY_BANDS}
    with pytest.raises(BadInput, match=f"multiple of {cells}"):
        discovery_recipe(cells + 5, 3)


def test_kinds_added_later_leave_the_earlier_mazes_of_the_set_as_they_were():
    _, mazes = shipped()
    first = [m for m in mazes if m.meta.model_extra["discovery"]["kind"] in ("switch_gate", *POOL_TILES)]
    assert [m.id for m in first] == [f"d{i:04d}" for i in range(1, 31)]
    assert hashlib.sha256("".join(m.checksum for m in first).encode()).hexdigest() == FIRST_EDITION


@pytest.mark.parametrize("tile", sorted(TILE_OBJECT))
def test_generate_lays_each_tile_where_it_matters(tile):
    p = GenParams(width=10, height=10, topology="rooms" if by_name(tile).detours else "perfect",
                  chain="switch_gate", band=(20, 60), ruleset=MULTINET_PR57, tile=tile)
    g = generate(p, seed=11, maze_id="t")
    assert [o.kind for o in g.maze.objects if o.kind in TILE_OBJECT.values()] == [TILE_OBJECT[tile]]
    assert g.maze.category == "mechanism" and tile_matters(g.maze, tile, g.optimal_actions)
    assert g.maze.meta is not None and regenerate(g.maze.meta) == g.maze


def test_tiles_exist_only_under_multinet_pr57_and_the_pr57_pool_takes_them_in_turn():
    with pytest.raises(BadInput, match="tile"):
        GenParams(tile="portal")
    with pytest.raises(BadInput, match="tile"):
        GenParams(ruleset=MULTINET_PR57, tile="lava")
    assert "tile" not in GenParams().to_json()  # gridbench's own mazes keep their checksums
    tiles = Counter(s.params.tile for s in pool_recipe(40, 1, MULTINET_PR57))
    assert tiles == Counter({t: 10 for t in POOL_TILES})  # the first edition's: the pool stays as it was
    assert set(POOL_TILES) < set(TILE_OBJECT)
    assert {s.params.tile for s in pool_recipe(8, 1)} == {"none"}


def test_pool_build_refuses_a_discovery_count_in_one_line(tmp_path, capsys):
    from app.cli import main

    with pytest.raises(SystemExit) as e:
        main(["pool", "build", "--recipe", "discovery", "--count", "7", "--seed", "1", "--out", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"multiple of {len(DISCOVERY_KINDS) * len(DISCOVERY_BANDS)}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()
