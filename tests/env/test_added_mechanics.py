"""The two mechanics added as one module each (env.mechanics.oneway, env.mechanics.reverser): their
rules, the oracle on them, their removal twins, how they look in 2D (both skins), 3D and text,
their discovery stages, that the generator lays them where they matter and that no other source
file names them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from env.discovery import Move, timelines
from env.maze import maze_from_dict
from env.mechanics import by_name
from env.oracle import reference_solve, solve, tile_distance
from env.render import render_state
from env.state import FORWARD, LEFT, RIGHT, initial_state, step
from env.text import text_projection
from env.variants import ablate, rotate

ROOT = Path(__file__).resolve().parents[2]
LOOP = ["#########", "#.......#", "#.#####.#", "#.......#", "#########"]
F, L, R = FORWARD, LEFT, RIGHT


def loop_maze(objects, skin="classic"):
    return maze_from_dict({"format": "gridbench.maze/1", "id": "t", "ruleset": "multinet-pr57", "skin": skin,
                           "grid": LOOP, "start": {"pos": [1, 1], "dir": "east"}, "goal": [7, 3],
                           "objects": objects})


ONEWAY = {"id": "o1", "kind": "oneway", "pos": [4, 1], "dir": "west"}
REVERSER = {"id": "r1", "kind": "reverser", "pos": [3, 3]}
BOTH = loop_maze([ONEWAY, REVERSER])
# into the one-way tile against its chevron (refused), back and round by the bottom row, over the
# reversing tile (turned round), round again and on to the goal
TOUR = [F, F, F, R, R, F, F, L, F, F, L, F, F, R, R, F, F, F, F]


def run(m, actions):
    s, moves, events = initial_state(m), [], []
    for i, a in enumerate(actions, start=1):
        n, ev = step(m, s, a)
        moves.append(Move(i, a, s, n))
        events.append(ev)
        s = n
    return s, moves, events


def test_a_one_way_tile_refuses_every_way_in_but_its_own_and_lets_the_agent_out_any_way():
    s, _, events = run(BOTH, [F, F, F])
    assert events == ["moved", "moved", "bump"] and s.pos == (3, 1)
    from_east = loop_maze([{**ONEWAY, "dir": "east"}])
    s, _, events = run(from_east, [F, F, F, R, R, F])  # in heading east, then out westwards
    assert events == ["moved", "moved", "moved", "turned", "turned", "moved"] and s.pos == (3, 1)
    s, _, events = run(from_east, [F, F, F, F, R, R, F])  # past it, and back at it heading west
    assert events[-1] == "bump" and s.pos == (5, 1)
    # the same tile is open from the west when it points east, so the top row is the plan again
    assert solve(from_east).optimal_actions == 9


def test_a_reversing_tile_turns_the_agent_round_as_it_steps_on():
    m = loop_maze([REVERSER])
    s, _, events = run(m, [R, F, F, L, F, F])
    assert s.pos == (3, 3) and s.dir == 2 and events[-1] == "moved"  # stepped on heading east, faces west
    s, _ = step(m, s, F)
    assert s.pos == (2, 3)  # a forward goes back out the way it came


def test_the_tour_fires_both_and_reaches_the_goal():
    s, _, events = run(BOTH, TOUR)
    assert s.pos == (7, 3) and events[-1] == "goal" and events[2] == "bump"


def test_the_oracle_is_exact_and_each_removal_twin_has_another_optimal_count():
    assert solve(BOTH).optimal_actions == reference_solve(BOTH).optimal_actions == 12
    twins = {kind: solve(ablate(BOTH, kind).maze).optimal_actions for kind in ("no-oneways", "no-reversers")}
    assert twins == {"no-oneways": 9, "no-reversers": 10}
    plan, s = solve(BOTH).plan, initial_state(BOTH)
    for a in plan:
        s, _ = step(BOTH, s, a)
    assert s.pos == BOTH.goal
    # the tile distance goes round the one-way tile too: from (3, 1) back west and along the bottom
    assert tile_distance(loop_maze([]), (3, 1)) == 6 and tile_distance(loop_maze([ONEWAY]), (3, 1)) == 10


def test_a_rotation_turns_the_chevron_with_the_layout():
    turned = rotate(BOTH, 90).maze  # (the rulebook's start faces east, so the count may change)
    (o,) = [o for o in turned.objects if o.kind == "oneway"]
    assert o.dir == "north"
    assert solve(turned).optimal_actions == reference_solve(turned).optimal_actions


def cell(frame, c, t=16):
    return frame[c[1] * t:(c[1] + 1) * t, c[0] * t:(c[0] + 1) * t]


@pytest.mark.parametrize("skin", ["classic", "neutral"])
def test_both_are_drawn_in_2d_each_way_of_a_chevron_apart(skin):
    looks = []
    for way in ("east", "south", "west", "north"):
        m = loop_maze([{**ONEWAY, "dir": way}, REVERSER], skin)
        f = render_state(m, initial_state(m), 16)
        looks.append(cell(f, (4, 1)).tobytes())
    plain = render_state(loop_maze([], skin), initial_state(loop_maze([], skin)), 16)
    m = loop_maze([ONEWAY, REVERSER], skin)
    f = render_state(m, initial_state(m), 16)
    assert len(set(looks)) == 4
    assert cell(f, (3, 3)).tobytes() not in {cell(plain, (3, 3)).tobytes(), *looks}
    assert not np.array_equal(cell(f, (4, 1)), cell(plain, (4, 1)))


def test_the_viewer_atlas_names_their_tiles():
    from env.minigrid_env import cell_looks
    from env.tiles import tile_atlas

    _, rows = tile_atlas(8)
    looks = {c["id"]: c["tiles"] for c in cell_looks(BOTH)}
    assert looks["o1"] == {"": "oneway-west"} and looks["r1"] == {"": "reverser"}
    assert {"oneway-west", "reverser", "neutral/oneway-north", "neutral/reverser"} <= set(rows)


def test_the_text_map_names_them_by_their_look_and_the_study_prompt_lists_them():
    from agents.study_prompt import object_lines

    s, _, _ = run(BOTH, [R, F, F, L, F, F])
    text = text_projection(BOTH, s)
    assert "#...%...#" in text and "% chevron tile   & hourglass tile" in text
    assert "chevron tile at (4, 1): pointing west; hourglass tile at (3, 3)." in text
    assert "standing on the hourglass tile" in text
    neutral = loop_maze([ONEWAY, REVERSER], "neutral")
    assert "tuk at (4, 1): pointing west; blick at (3, 3)." in text_projection(neutral, initial_state(neutral))
    assert object_lines(BOTH, s)[-2:] == ["- a chevron tile at (1, 4), pointing WEST", "- a hourglass tile at (3, 3)"]


def test_both_are_built_into_the_3d_scene():
    import importlib.util

    if importlib.util.find_spec("mujoco") is None:
        pytest.skip("mujoco is not installed")
    from env.render3d import frame3d

    plain = loop_maze([])
    f0 = frame3d(plain, initial_state(plain), "top_down", 180)
    f1 = frame3d(BOTH, initial_state(BOTH), "top_down", 180)
    side = 180 / 9  # nine columns; the five rows sit in the middle
    top = (180 - 5 * side) / 2

    def crop(f, x, y):
        return f[round(top + y * side):round(top + (y + 1) * side), round(x * side):round((x + 1) * side)]

    for c in ((4, 1), (3, 3)):
        assert not np.array_equal(crop(f0, *c), crop(f1, *c)), c
    assert np.array_equal(crop(f0, 6, 1), crop(f1, 6, 1))


def test_discovery_stages_of_both():
    _, moves, _ = run(BOTH, TOUR)
    t = {x.kind: x for x in timelines(BOTH, initial_state(BOTH), moves)}
    # the one-way tile: tried and refused at step 3; never passed after a refusal
    assert (t["oneway"].attempt, t["oneway"].success, t["oneway"].use) == (3, 3, None)
    # the reversing tile: stepped on at step 13, once
    assert (t["reverser"].attempt, t["reverser"].success, t["reverser"].use) == (13, 13, None)
    # going round to its open side and through it is a use of the one-way tile
    m = loop_maze([{**ONEWAY, "pos": [2, 3], "dir": "west"}])
    round_about = [R, F, F, L, F, L, F, F, R, F, F, F, F, F, F, R, F, F, R, F, F, F, F, F]
    _, moves, events = run(m, round_about)
    assert events[4] == "bump" and moves[-1].after.pos == (2, 3)
    (t1,) = timelines(m, initial_state(m), moves)
    assert (t1.attempt, t1.success, t1.use) == (5, 5, 24)


@pytest.mark.parametrize("name", ["oneway", "reverser"])
def test_the_generator_lays_each_where_it_matters(name):
    from env.generator import GenParams, generate
    from env.generator.generator import tile_matters

    params = GenParams(width=12, height=12, topology="rooms", chain="none", band=(20, 60),
                       ruleset="multinet-pr57", tile=name)
    m = generate(params, seed=5).maze
    kinds = {o.kind for o in m.objects}
    assert kinds == set(by_name(name).kinds)
    opt = solve(m).optimal_actions
    assert opt is not None and tile_matters(m, name, opt)
    assert solve(ablate(m, by_name(name).removal).maze).optimal_actions < opt


def test_no_source_file_outside_its_module_and_the_registry_names_them():
    files = subprocess.run(["git", "grep", "--untracked", "-l", "-w", "-E", "oneway|reverser|oneways|reversers", "--", "*.py", "*.js"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    outside = [f for f in files if not f.startswith(("tests/", "docs/", "bench/", "testing/"))]
    assert sorted(outside) == ["env/mechanics/__init__.py", "env/mechanics/oneway.py", "env/mechanics/reverser.py"]
