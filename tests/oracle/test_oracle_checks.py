"""Each of the four checks catches the one maze built to fail it, and names the right object."""

from __future__ import annotations

import json

import pytest
from oracle_mazes import build

import env.sets
from env.checks import CHECKS, run_checks

EXAMPLE = json.loads((env.sets.set_dir("hand") / "example.json").read_text())


def _example(**changes) -> env.Maze:
    d = json.loads(json.dumps(EXAMPLE))
    for k, v in changes.items():
        if k == "objects":
            for oid, fields in v.items():
                next(o for o in d["objects"] if o["id"] == oid).update(fields)
        elif k == "meta":
            d["meta"].update(v)
        else:
            d[k] = v
    return env.maze_from_dict(d)


def _failures(maze, **kw):
    results = run_checks(maze, **kw)
    assert [r.check for r in results if r.passed] + [r.check for r in results if not r.passed]
    assert {r.check for r in results} == set(CHECKS)
    return {(r.check, r.object_id) for r in results if not r.passed}, results


def test_the_design_example_passes_all_four():
    failed, results = _failures(env.resolve_maze("example"))
    assert failed == set() and len(results) == 4


def test_goal_cut_off_fails_reachable_only():
    maze = _example(objects={"s1": {"controls": []}})  # nothing opens the gate before the goal
    failed, _ = _failures(maze)
    assert failed == {("reachable", None)}


def test_door_with_a_way_round_fails_necessity_naming_its_key():
    grid = list(EXAMPLE["grid"])
    grid[1] = "#.......#"  # a gap beside the door: the key is no longer needed
    maze = _example(grid=grid, meta={"chain": [["k1", "d1"]]})
    failed, results = _failures(maze)
    assert failed == {("mechanism_necessity", "k1")}
    assert "still solved" in next(r.reason for r in results if not r.passed)


def test_switch_before_the_door_fails_chain_ordering_naming_the_switch():
    maze = _example(objects={"s1": {"pos": [2, 1]}})  # the second step is in the first room
    failed, results = _failures(maze)
    assert failed == {("chain_ordering", "s1")}
    assert "d1" in next(r.reason for r in results if not r.passed)


def _choke_maze(decoy_meta: list[str], generator: dict | None = None) -> env.Maze:
    # The real key k1 plugs the only corridor. Holding the decoy when it is picked up swaps the
    # decoy into the corridor for good: one key always lies in that cell from then on.
    grid = ["##########",
            "#...######",
            "#........#",
            "#...######",
            "##########"]
    objects = [
        {"id": "k1", "kind": "key", "color": "yellow", "pos": [4, 2]},
        {"id": "kd", "kind": "key", "color": "red", "pos": [3, 1]},
        {"id": "d1", "kind": "door", "color": "yellow", "pos": [6, 2], "state": "locked"},
        {"id": "sd", "kind": "switch", "color": "blue", "pos": [1, 1], "controls": []},
    ]
    meta = {"chain": [["k1", "d1"]], "distractors": decoy_meta, "source": "hand"}
    if generator is not None:
        meta["generator"] = generator
    return build(grid, (1, 3), (8, 2), objects, meta=meta)


def test_decoy_key_that_can_plug_the_corridor_fails_distractor_safety():
    failed, results = _failures(_choke_maze(["kd", "sd"]))
    assert failed == {("distractor_safety", "kd")}
    assert "unreachable" in next(r.reason for r in results if not r.passed)


def test_harmless_decoy_switch_and_recorded_dead_end_pass():
    m = _choke_maze(["sd", "deadend:1"], generator={"deadends": [[[1, 1], [2, 1]]]})
    failed, results = _failures(m)
    assert failed == set()
    assert "2 distractors" in results[-1].reason


def test_dead_end_not_recorded_is_named():
    failed, _ = _failures(_choke_maze(["deadend:2"], generator={"deadends": [[[1, 1]]]}))
    assert failed == {("distractor_safety", "deadend:2")}


def test_past_the_cap_reachable_is_undecided_and_the_rest_not_checked():
    failed, results = _failures(env.resolve_maze("example"), cap=20)
    assert ("reachable", None) in failed
    reach = results[0]
    assert reach.check == "reachable" and reach.reason.startswith("undecided")
    assert all(r.reason.startswith("not checked") for r in results if r.check in CHECKS[2:])


@pytest.mark.parametrize("chain_step", [["d1"], ["g1"]])
def test_step_without_an_enabler_checks_its_barrier_as_wall(chain_step):
    failed, _ = _failures(_example(meta={"chain": [chain_step]}))
    assert failed == set()
