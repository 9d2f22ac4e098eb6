"""The 3D frames (env.render3d), checked by geometry rather than by palette: what changes in a
frame when one cell changes, what a first-person eye can and cannot see, and that frames are
deterministic, square and made without a display."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

if importlib.util.find_spec("mujoco") is None:  # the 3d extra: scripts/install.sh --test installs it
    pytest.skip("mujoco is not installed", allow_module_level=True)

from env import BadInput, initial_state, maze_from_dict, resolve_maze, step  # noqa: E402
from env.render import RenderSettings, check_renderable, frame, render_settings  # noqa: E402
from env.render3d import CAMERAS, frame3d, frame_side, start_map  # noqa: E402
from env.render3d.renderer import renderer  # noqa: E402
from env.render3d.scene import MECHANISMS  # noqa: E402
from env.state import LEFT, RIGHT  # noqa: E402

ROOM = ["#########", "#.......#", "#.......#", "#.......#", "#.......#", "#.......#", "#########"]


def room(grid=ROOM, start=(4, 3), direction="east", objects=(), goal=(7, 5)):
    return maze_from_dict({"format": "gridbench.maze/1", "id": "room", "grid": list(grid),
                           "start": {"pos": list(start), "dir": direction}, "goal": list(goal), "objects": list(objects)})


def with_wall(grid, x, y):
    rows = [list(r) for r in grid]
    rows[y][x] = "#"
    return ["".join(r) for r in rows]


def fresh(maze, state, camera, resolution="grid"):
    """A frame drawn now, not taken from the cache."""
    renderer().forget_frames()
    return frame3d(maze, state, camera, resolution)


def cell_box(maze, x, y, side):
    """The pixel rows and columns of cell (x, y) in a top-down frame of ``side`` pixels."""
    cell = side / max(maze.width, maze.height)
    x0 = (side - cell * maze.width) / 2 + x * cell
    y0 = (side - cell * maze.height) / 2 + y * cell
    return round(y0), round(y0 + cell), round(x0), round(x0 + cell)


def test_frames_are_square_at_the_grid_rule_or_the_given_side():
    m = room()
    s = initial_state(m)
    assert frame_side("grid", m.width, m.height) == 32 * 9
    for camera in CAMERAS:
        assert frame3d(m, s, camera).shape == (288, 288, 3)
        f = frame3d(m, s, camera, 100)
        assert f.shape == (100, 100, 3) and f.dtype == np.uint8 and not f.flags.writeable


@pytest.mark.parametrize("cell", [(2, 2), (5, 4), (1, 5)])
def test_top_down_a_wall_changes_only_its_own_cell(cell):
    """Orthographic and without shadows: a wall added at one cell changes that cell's pixels
    and nothing else (no shadow on a neighbour, no side face seen in perspective)."""
    before, after = room(), room(with_wall(ROOM, *cell))
    s = replace(initial_state(before), pos=(6, 1))  # the agent away from the cell
    a, b = fresh(before, s, "top_down"), fresh(after, s, "top_down")
    changed = np.any(a != b, axis=2)
    r0, r1, c0, c1 = cell_box(before, *cell, a.shape[0])
    inside = np.zeros_like(changed)
    inside[r0:r1, c0:c1] = True
    assert changed[inside].mean() > 0.9  # the cell is now a wall, nearly every pixel of it
    assert not changed[~inside].any()


def test_first_person_sees_how_far_a_wall_is_and_not_behind_it():
    corridor = ["#########", "#.......#", "#########"]

    def seen(grid, camera):
        m = room(grid, start=(3, 1), goal=(1, 1))
        return fresh(m, initial_state(m), camera)

    for camera in ("first_person", "first_person_narrow"):
        near, far = seen(with_wall(corridor, 4, 1), camera), seen(with_wall(corridor, 6, 1), camera)
        assert np.any(near != far, axis=2).mean() > 0.05
        open_ahead, behind = seen(corridor, camera), seen(with_wall(corridor, 2, 1), camera)
        assert np.array_equal(open_ahead, behind)  # a wall behind the eye changes nothing


def test_a_turn_left_then_right_gives_the_same_frame_back():
    m = room(objects=[{"id": "k", "kind": "key", "color": "blue", "pos": [6, 3]}])
    s = initial_state(m)
    for camera in CAMERAS:
        start = fresh(m, s, camera)
        turned, _ = step(m, s, LEFT)
        left = fresh(m, turned, camera)
        back, _ = step(m, turned, RIGHT)
        assert back == s and np.array_equal(fresh(m, back, camera), start)
        assert not np.array_equal(left, start)  # the turn itself shows (the wedge, or the view)


def test_identical_states_give_identical_bytes_in_another_process():
    """Deterministic frames: the same state drawn in a fresh interpreter (no MUJOCO_GL, no
    display) gives the same bytes."""
    code = ("import hashlib; from env import resolve_maze, initial_state; from env.render3d import frame3d; "
            "m = resolve_maze('example'); print(hashlib.sha256(frame3d(m, initial_state(m), 'first_person').tobytes()).hexdigest())")
    environ = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "PYOPENGL_PLATFORM")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=120,
                         check=True)
    m = resolve_maze("example")
    assert out.stdout.strip() == hashlib.sha256(fresh(m, initial_state(m), "first_person").tobytes()).hexdigest()


def test_every_state_dependent_look_shows_in_top_down():
    """A door's three states, a switch on and off, a gate open and closed, a key lying or carried:
    each pair of states differs in the frame, at the object's own cell."""
    m = resolve_maze("example")  # a locked door, a key, a switch that works a gate
    s = initial_state(m)
    side = frame_side("grid", m.width, m.height)
    pairs = {
        m.doors[0].pos: (replace(s, doors=(2,)), replace(s, doors=(1,)), replace(s, doors=(0,))),
        m.switches[0].pos: (s, replace(s, switches=(True,))),
        m.gates[0].pos: (s, replace(s, switches=(True,))),
        m.keys[0].pos: (s, replace(s, keys=(None,), carrying=0)),
    }
    for (x, y), states in pairs.items():
        r0, r1, c0, c1 = cell_box(m, x, y, side)
        crops = [frame3d(m, st, "top_down")[r0:r1, c0:c1] for st in states]
        for i in range(len(crops)):
            for j in range(i + 1, len(crops)):
                assert not np.array_equal(crops[i], crops[j]), ((x, y), i, j)


def test_first_person_status_slots_show_the_carried_key_and_the_switch_underfoot():
    m = resolve_maze("example")
    s = initial_state(m)
    on_switch = replace(s, pos=m.switches[0].pos)
    bottom = slice(int(0.8 * 288), 288)
    plain, carrying = fresh(m, s, "first_person"), fresh(m, replace(s, keys=(None,), carrying=0), "first_person")
    assert not np.array_equal(plain[bottom], carrying[bottom])
    off = fresh(m, on_switch, "first_person")
    on = fresh(m, replace(on_switch, switches=(True,)), "first_person")
    assert not np.array_equal(off[bottom], on[bottom])


def test_turntable_arrows_turn_with_the_state():
    m = resolve_maze("study-m7m10/M10_18x18_dense_kr_sg_kb_portals_death_rotating_frozen_0")
    s = initial_state(m)
    side = frame_side("grid", m.width, m.height)
    r0, r1, c0, c1 = cell_box(m, *m.of_kind("turntable")[0].pos, side)
    crops = [frame3d(m, replace(s, phase=p), "top_down")[r0:r1, c0:c1] for p in range(4)]
    assert len({c.tobytes() for c in crops}) == 4  # four ways to point, four looks


def test_every_kind_of_every_ruleset_is_drawn_or_refused_at_load():
    from env.maze import KINDS

    assert set(KINDS) - {"key"} <= set(MECHANISMS)
    neutral = maze_from_dict({**resolve_maze("example").to_dict(), "skin": "neutral"})
    render = render_settings({"backend": "mujoco3d", "camera": "top_down"})
    with pytest.raises(BadInput, match="classic skin only"):
        check_renderable(neutral, render, "sweep.yaml")
    check_renderable(neutral, RenderSettings(), "sweep.yaml")  # the 2D frames draw every skin


def test_the_start_map_is_the_top_down_start():
    m = resolve_maze("example")
    assert np.array_equal(start_map(m), frame3d(m, initial_state(m), "top_down"))
    assert frame(m, initial_state(m), render=render_settings({"backend": "mujoco3d", "camera": "top_down"})).shape == (288, 288, 3)


def test_the_wall_boxes_cover_every_wall_cell_once():
    from env.render3d.scene import wall_blocks

    for m in (resolve_maze("example"), resolve_maze("study/r1_M2_10x10_corridor_sg_1")):
        covered = np.zeros((m.width, m.height), dtype=int)
        for x0, y0, x1, y1 in wall_blocks(m):
            covered[x0:x1, y0:y1] += 1
        assert np.array_equal(covered, m.walls.astype(int))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_refuses_to_draw_instead_of_hanging():
    """A GL context does not survive fork: the child must say so at once, never touch it."""
    m = resolve_maze("example")
    frame3d(m, initial_state(m), "top_down")  # the parent has its context
    renderer().forget_frames()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one byte says what happened, then leave without atexit handlers
        try:
            frame3d(m, initial_state(m), "top_down")
            os.write(write, b"d")
        except RuntimeError as err:
            os.write(write, b"r" if "forked child" in str(err) else b"?")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"r"
    os.close(read)


def test_maze_show_writes_the_3d_frame_and_refuses_bad_options_in_one_line(tmp_path, capsys):
    from PIL import Image

    from app.cli import main as cli_main

    def run(*args):
        code = 0
        try:
            cli_main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 0
        return code, *capsys.readouterr()

    out = tmp_path / "fp.png"
    code, _, _ = run("maze", "show", "example", "--png", str(out), "--backend", "mujoco3d", "--camera", "first_person",
                     "--resolution", "128")
    m = resolve_maze("example")
    assert code == 0 and np.array_equal(np.asarray(Image.open(out)), frame3d(m, initial_state(m), "first_person", 128))
    for args, option in ((("--backend", "mujoco3d"), "--camera"), (("--camera", "top_down"), "--camera"),
                         (("--backend", "mujoco3d", "--camera", "side"), "--camera"),
                         (("--backend", "mujoco3d", "--camera", "top_down", "--resolution", "9"), "--resolution"),
                         (("--backend", "vulkan"), "--backend")):
        code, _, err = run("maze", "show", "example", "--png", str(tmp_path / "bad.png"), *args)
        assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith(f"gridbench: {option}: "), err
    assert not (tmp_path / "bad.png").exists()
