"""Frames, PNG bytes, the text projection, and the tile pre-warm."""

from __future__ import annotations

import contextlib
import io
import math
import random
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from maze_strategies import atlas_frame, make, mazes, obj
from minigrid.core.grid import Grid
from minigrid.utils import rendering as mg
from PIL import Image

import env
from app.cli import main as cli_main
from env import MazeEnv, drawing, initial_state, png_bytes, render_state, step, text_projection, tiles
from env.maze import SKIN_NAMES
from env.objects import Gate, Switch

ALL = make(["#########",
            "#A.k.s..#",
            "#..d.g.G#",
            "#########"],
           k=obj("key", "red"), d=obj("door", "red", state="locked"),
           s=obj("switch", "blue", controls=["g"]), g=obj("gate", "blue"))


def frame_and_text(maze, state):
    return render_state(maze, state, 16), text_projection(maze, state)


# ---- visible states differ ----------------------------------------------------------------------


@pytest.mark.parametrize("color", env.COLORS)
def test_switch_on_and_off_tiles_differ(color):
    on = Grid.render_tile(Switch(color, True), tile_size=32)
    off = Grid.render_tile(Switch(color, False), tile_size=32)
    assert not np.array_equal(on, off)
    opened = Grid.render_tile(Gate(color, True), tile_size=32)
    closed = Grid.render_tile(Gate(color, False), tile_size=32)
    assert not np.array_equal(opened, closed)


def test_door_three_states_frames_differ():
    s0 = initial_state(ALL)
    frames = [render_state(ALL, replace(s0, doors=(st_,)), 16) for st_ in (0, 1, 2)]
    assert not np.array_equal(frames[0], frames[1])
    assert not np.array_equal(frames[1], frames[2])
    assert not np.array_equal(frames[0], frames[2])


def test_switch_and_gate_frames_differ_in_the_maze():
    s0 = initial_state(ALL)
    on = render_state(ALL, replace(s0, switches=(True,)), 16)
    off = render_state(ALL, s0, 16)
    diff = np.argwhere((on != off).any(axis=2))
    # only the switch cell (5, 1) and the gate cell (5, 2) change, at 16 px per cell
    cells = {(int(x) // 16, int(y) // 16) for y, x in diff}
    assert cells == {(5, 1), (5, 2)}


# every kind of change: the frame and the text both change, and the same state gives the same pair
CHANGES = {
    "agent moves": lambda s: replace(s, pos=(2, 1)),
    "agent turns": lambda s: replace(s, dir=1),
    "key picked up": lambda s: replace(s, keys=(None,), carrying=0),
    "key moved": lambda s: replace(s, keys=((1, 2),)),
    "door opened": lambda s: replace(s, doors=(0,)),
    "door closed": lambda s: replace(s, doors=(1,)),
    "switch on (and gate open)": lambda s: replace(s, switches=(True,)),
}


@pytest.mark.parametrize("name", CHANGES)
def test_frame_and_text_change_together(name):
    s0 = initial_state(ALL)
    s1 = CHANGES[name](s0)
    f0, t0 = frame_and_text(ALL, s0)
    f1, t1 = frame_and_text(ALL, s1)
    assert not np.array_equal(f0, f1)
    assert t0 != t1
    again_f, again_t = frame_and_text(ALL, s1)
    assert np.array_equal(f1, again_f) and t1 == again_t


def test_carrying_shows_in_the_text_inventory():
    s = replace(initial_state(ALL), keys=(None,), carrying=0)
    assert "Inventory: a red key." in text_projection(ALL, s)
    assert "Inventory: nothing." in text_projection(ALL, initial_state(ALL))


def test_text_map_marks_each_object_state():
    s0 = initial_state(ALL)
    rows = lambda s: text_projection(ALL, s).splitlines()[1:5]  # noqa: E731
    assert rows(s0) == ["  0 #########", "  1 #>.K.S..#", "  2 #..L.X.G#", "  3 #########"]
    s1 = replace(s0, pos=(4, 1), dir=3, doors=(0,), switches=(True,), keys=(None,), carrying=0)
    assert rows(s1) == ["  0 #########", "  1 #...^*..#", "  2 #../._.G#", "  3 #########"]


# ---- env, render_state and PNG agree --------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(maze=mazes(max_side=7), actions=st.lists(st.integers(0, 5), min_size=1, max_size=40))
def test_render_state_equals_env_render_along_random_episodes(maze, actions):
    e = MazeEnv(maze, render_mode="rgb_array", tile_size=8)
    e.reset(seed=0)
    assert np.array_equal(e.render(), render_state(maze, e.state, 8))
    for a in actions:
        e.step(a)
        assert np.array_equal(e.render(), render_state(maze, e.state, 8))


def test_render_state_equals_env_render_on_the_example_episode():
    from env.oracle import solve

    maze = env.resolve_maze("example")
    e = MazeEnv(maze, render_mode="rgb_array", tile_size=32)
    e.reset()
    s = initial_state(maze)
    for a in solve(maze).plan + [random.Random(0).randrange(6) for _ in range(30)]:
        e.step(a)
        s, _ = step(maze, s, a)
        assert np.array_equal(e.render(), render_state(maze, s, 32))
    assert e.render().shape == (6 * 32, 9 * 32, 3) and e.render().dtype == np.uint8


def test_png_bytes_decode_back_to_the_frame():
    frame = render_state(ALL, initial_state(ALL), 32)
    data = png_bytes(frame)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), frame)


def test_cli_show_png_and_text(tmp_path, capsys):
    out = tmp_path / "frames" / "example.png"
    cli_main(["maze", "show", "example", "--png", str(out), "--text", "--tile-size", "16"])  # returns: exit 0
    printed = capsys.readouterr().out
    maze = env.resolve_maze("example")
    assert text_projection(maze, initial_state(maze)) in printed and f"wrote {out}" in printed
    decoded = np.asarray(Image.open(out).convert("RGB"))
    assert np.array_equal(decoded, render_state(maze, initial_state(maze), 16))
    assert sorted(p.name for p in out.parent.iterdir()) == ["example.png"]


# ---- array drawing is Minigrid's drawing, pixel for pixel -------------------------------------------


def _both(shape_fast, shape_scalar, n: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.zeros((n, n, 3), dtype=np.uint8)
    b = a.copy()
    drawing.fill_coords(a, shape_fast, (255, 0, 0))
    mg.fill_coords(b, shape_scalar, (255, 0, 0))
    return a, b


@pytest.mark.parametrize("seed", range(12))
def test_array_primitives_match_minigrid_scalar_predicates(seed):
    rng = random.Random(seed)
    n = rng.choice([24, 48, 96])
    lo, hi = sorted((rng.random(), rng.random()))
    lo2, hi2 = sorted((rng.random(), rng.random()))
    cx, cy, r = rng.random(), rng.random(), rng.random() * 0.5
    corners = [(rng.random(), rng.random()) for _ in range(3)]
    theta = rng.choice([0.0, 0.5 * math.pi, math.pi, 1.5 * math.pi, rng.random() * 6])
    pairs = [
        (drawing.Rect(lo, hi, lo2, hi2), mg.point_in_rect(lo, hi, lo2, hi2)),
        (drawing.Circle(cx, cy, r), mg.point_in_circle(cx, cy, r)),
        (drawing.rotate_fn(drawing.Triangle(*corners), 0.5, 0.5, theta),
         mg.rotate_fn(mg.point_in_triangle(*corners), cx=0.5, cy=0.5, theta=theta)),
    ]
    for fast, scalar in pairs:
        a, b = _both(fast, scalar, n)
        assert np.array_equal(a, b)


@contextlib.contextmanager
def _fresh_tile_cache():
    saved = Grid.tile_cache
    Grid.tile_cache = {}
    try:
        yield
    finally:
        Grid.tile_cache = saved


@pytest.mark.parametrize("tile_size", [8])
def test_prewarmed_tiles_equal_minigrid_drawing_them_itself(tile_size, monkeypatch):
    """Every tile the pre-warm draws is the tile Minigrid's own (slow) path would draw."""
    monkeypatch.setattr(tiles, "_warm", set())
    with _fresh_tile_cache():
        for skin in SKIN_NAMES:
            tiles.prewarm(tile_size, skin)
        fast = dict(Grid.tile_cache)
    assert len(fast) >= 150
    with _fresh_tile_cache():
        for obj_, agent_dir in tiles.shown_tiles():
            slow = Grid.render_tile(obj_, agent_dir=agent_dir, highlight=False, tile_size=tile_size)
            key = (obj_.encode() if obj_ else ()) + (agent_dir, False, tile_size)
            assert np.array_equal(fast[key], slow), key
        assert set(Grid.tile_cache) == set(fast)


def test_drawing_swap_is_undone_after_prewarm(monkeypatch):
    from minigrid.core import grid as mg_grid
    from minigrid.core import world_object as mg_objects

    before = (mg_grid.fill_coords, mg_grid.point_in_triangle, mg_objects.point_in_rect)
    monkeypatch.setattr(tiles, "_warm", set())
    tiles.prewarm(12)
    assert (mg_grid.fill_coords, mg_grid.point_in_triangle, mg_objects.point_in_rect) == before


@settings(max_examples=20, deadline=None)
@given(maze=mazes(max_side=7), actions=st.lists(st.integers(0, 5), max_size=40))
def test_after_prewarm_no_frame_draws_a_new_tile(maze, actions):
    tiles.prewarm(8, maze.skin)
    cached = len(Grid.tile_cache)
    e = MazeEnv(maze, render_mode="rgb_array", tile_size=8)
    e.reset()
    e.render()
    for a in actions:
        e.step(a)
        e.render()
    assert len(Grid.tile_cache) == cached


@settings(max_examples=20, deadline=None)
@given(maze=mazes(max_side=7), actions=st.lists(st.integers(0, 5), max_size=30))
def test_a_frame_is_its_cells_tiles_from_the_atlas(maze, actions):
    """What the browser viewer does: each cell's tile, by name, copied from the atlas."""
    size = 8
    state = initial_state(maze)
    for action in [None, *actions]:
        if action is not None:
            state, _ = step(maze, state, action)
        frame = atlas_frame(maze, state, size)
        assert np.array_equal(frame, render_state(maze, state, size))


def test_atlas_names_every_tile_once():
    atlas, rows = tiles.tile_atlas(8)
    # per colour: a key, 3 doors, 2 switches, 2 gates; the white switches; per switch colour the
    # study's disc without and with its state core; per colour a teleporter and a block; lava, kill, ice;
    # multinet-pr57's cyan portal and its turntable with the arrow each way; the study's brown box;
    # gridbench's one-way tile each way and its reversing tile
    objects = 8 * len(env.COLORS) + 2 + 3 * (len(env.COLORS) + 1) + 2 * len(env.COLORS) + 3 + 1 + 4 + 1 + 4 + 1
    # floor, wall and goal, each object in the classic skin, and each again in the neutral one
    assert len(rows) == len(list(tiles.all_tiles())) == 3 + 2 * objects
    assert atlas.shape == (len(rows) * 8, len(tiles.AGENT_DIRS) * 8, 3)
    classic = {"key-red", "door-red-locked", "door-grey-open", "switch-blue-on", "gate-purple-closed",
               "switch-white-disc", "switch-yellow-disc-on", "teleporter-purple", "block-grey", "hazard", "kill",
               "frozen", "teleporter-cyan", "turntable-east", "turntable-north", "block-brown"}
    assert {"floor", "wall", "goal"} | classic | {f"neutral/{name}" for name in classic} <= set(rows)


def test_maze_env_prewarms_once_per_process_and_tile_size(monkeypatch):
    calls = []
    real = tiles.fast_drawing

    @contextlib.contextmanager
    def counting():
        calls.append(1)
        with real():
            yield

    monkeypatch.setattr(tiles, "fast_drawing", counting)
    monkeypatch.setattr(tiles, "_warm", set())
    MazeEnv("example", render_mode="rgb_array", tile_size=20)
    MazeEnv("example", render_mode="rgb_array", tile_size=20).reset()
    assert calls == [1] and tiles.is_warm(20)
    MazeEnv("example")  # no rendering asked for: nothing drawn
    assert calls == [1]
    render_state(ALL, initial_state(ALL), 20)
    assert calls == [1]


@pytest.mark.parametrize("on", [False, True])
def test_switch_and_gate_survive_minigrid_encode_and_decode(on):
    from minigrid.core.constants import COLOR_TO_IDX

    from env.minigrid_env import build_grid
    from env.objects import GATE_IDX, SWITCH_IDX

    state = replace(initial_state(ALL), switches=(on,))
    grid, _ = build_grid(ALL, state)
    codes = grid.encode()
    assert tuple(codes[5, 1]) == (SWITCH_IDX, COLOR_TO_IDX["blue"], int(on))
    assert tuple(codes[5, 2]) == (GATE_IDX, COLOR_TO_IDX["blue"], 0 if on else 1)
    decoded, _ = Grid.decode(codes)
    switch, gate = decoded.get(5, 1), decoded.get(5, 2)
    assert isinstance(switch, Switch) and switch.is_on == on and switch.color == "blue"
    assert isinstance(gate, Gate) and gate.is_open == on and gate.can_overlap() == on


# ---- skins ----------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(maze=mazes(max_side=7), actions=st.lists(st.integers(0, 5), max_size=30))
def test_a_skin_changes_every_object_cell_of_the_frame_and_the_text_and_never_a_step(maze, actions):
    """The same maze in the other skin: each step gives the same state and event (MazeEnv too);
    every cell holding an object is drawn differently, every other cell alike; the text map differs
    exactly when an object is shown (the legend always)."""
    from env.skins import with_skin

    other = with_skin(maze, "neutral" if maze.skin == "classic" else "classic")
    size = 8
    s, e = initial_state(maze), MazeEnv(other)
    e.reset()
    for action in [None, *actions]:
        if action is not None:
            (s, event), (t, event2) = step(maze, s, action), step(other, s, action)
            assert (t, event2) == (s, event) and e.step(action)[4]["event"] == event and e.state == s
        a, b = render_state(maze, s, size), render_state(other, s, size)
        shown = {k for k in s.keys if k is not None} | {o.pos for o in maze.objects if o.kind != "key"}
        for x in range(maze.width):
            for y in range(maze.height):
                same = np.array_equal(a[y * size:(y + 1) * size, x * size:(x + 1) * size],
                                      b[y * size:(y + 1) * size, x * size:(x + 1) * size])
                assert same != ((x, y) in shown), (x, y)
        text_a, text_b = text_projection(maze, s).splitlines(), text_projection(other, s).splitlines()
        rows = maze.height + 1 + (maze.width > 10)  # the column header and the map
        assert (text_a[:rows] != text_b[:rows]) == bool(shown - {s.pos})
        assert (text_a[-1] != text_b[-1]) == (s.carrying >= 0)  # the inventory
        assert text_a != text_b  # the legend


@pytest.mark.parametrize("switch_frames", ["distinct", "study"])
def test_cell_looks_name_every_cell_as_the_frame_draws_it(switch_frames):
    """The viewer draws from ``cell_looks`` and a recorded state, knowing no ruleset: along each
    maze's optimal plan (every ruleset, both skins, doors, switches, gates, keys, portals, death
    tiles, ice, turntables), each cell's name is the tile of ``drawn_grid``'s object there."""
    from env.minigrid_env import cell_looks, drawn_grid
    from env.oracle import solve
    from env.sets import resolve_mazes
    from env.skins import with_skin
    from env.state import initial_state, mechanism_info, step

    mazes = [*resolve_mazes(["example", "study", "study-m7m10"])]
    mazes += [with_skin(m, "neutral") for m in mazes[:3]]
    assert {m.ruleset for m in mazes} == {"minigrid", "multinet-r1", "multinet-pr57"}
    assert {"teleporter", "kill", "frozen", "turntable", "key", "gate"} <= {o.kind for m in mazes for o in m.objects}
    for maze in mazes:
        looks = cell_looks(maze, switch_frames)
        state = initial_state(maze)
        for action in [None, *solve(maze).plan]:
            if action is not None:
                state, _ = step(maze, state, action)
            recorded = mechanism_info(maze, state)
            shown = {}
            for o in looks:
                value = recorded.get(o["field"], {}).get(o["id"]) if o["field"] else None
                if o["field"] == "keys":
                    if value is not None:
                        shown[tuple(value)] = o["tiles"][""]
                    continue
                for cell in o["cells"]:
                    shown[tuple(cell)] = o["tiles"]["" if value is None else str(value).lower()]
            grid = drawn_grid(maze, state, switch_frames)
            drawn = {(x, y): tiles.tile_name(grid.get(x, y)) for x in range(maze.width) for y in range(maze.height)
                     if grid.get(x, y) is not None and grid.get(x, y).type not in ("wall", "goal")}
            assert shown == drawn, (maze.id, state)
