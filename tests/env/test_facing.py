"""Facing, held across every projection (issue 41, item 2).

The study's R1 post-mortem suspected its frames showed the agent's facing off by one. Here the
reference dynamics (``env.state.step``) say, after every turn (left and right, into each of the
four directions) and every FORWARD of a tour through a small room, where the agent stands, which
way it faces and which cell a FORWARD goes to; each projection is then *read* (pixels, map
characters, words, trace columns), never drawn again for comparison, and must say the same:

- the 2D frame, both skins, and ``MazeEnv``'s own frame: the red triangle's cell and its tip;
- the 3D frames: the top-down wedge's cell and tip; in each first-person eye, how much sky the
  centre column shows (the nearer the wall straight ahead, the less), the camera pose the frame
  was drawn with, and the compass's needle and letter;
- the text map: the arrow's cell and the way it points, the legend's words for each arrow, and
  the ``You are at ... facing ...`` line; the study style's description (``You are at (row, col),
  facing ...``) and its cardinal moves;
- one episode through ``episodes.run_episode`` (no Ray), written as a run and read back: each
  step row's position and facing (the ``dir`` column read by its own documentation), and the
  prompts the next turn was asked with, in the study style (its current and recent frames, its
  text record with each step's outcome, its activity summary) and in gridbench's (its frames, its
  text map, its start line), also through the scripted server's readers (``testing.reading``).

Every reading is a cell and a unit vector in the maze's coordinates (x to the right, y down).
The room's start cell sees a different distance to the wall each way it faces, and each reader's
four readings there are asserted to be four different ones: a projection rotated by a quarter
turn (or mirrored) against the dynamics cannot pass.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import re
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from agents import Decision, Protocol, Turn, build_messages, resolve_protocol
from agents.actions import CARDINAL_TOKENS, primitives
from agents.parse import SENTINEL
from agents.study_prompt import current_text
from env import MazeEnv, initial_state, maze_from_dict, step
from env.maze import Maze
from env.oracle import solve
from env.render import render_state
from env.skins import with_skin
from env.state import ACTIONS, FORWARD, LEFT, RIGHT, MazeState
from env.text import text_projection
from episodes.episode import EpisodeResult, run_episode
from testing.reading import MazeStates, last_image
from traces import EpisodeIdentity, StepRecord, read_episode, write_episode

ROOM = ["#########",
        "#.......#",
        "#.......#",
        "#.......#",
        "#.......#",
        "#.......#",
        "#########"]
START = (3, 2)  # floor ahead: 4 cells east, 3 south, 2 west, 1 north: each facing sees its own depth
KEY = (5, 3)  # blue, so none of its pixels is the agent's red; a FORWARD into it bumps under minigrid
GOAL = (7, 5)
OPEN = (3, 3)  # open floor on all four sides, where the forward vector of each direction is measured
RULESETS = ("minigrid", "multinet-r1")
# every direction reached by turning left, then by turning right; a FORWARD each way (after left and
# after right turns), a bump into the wall and one into the key; the oracle's plan to the goal after
TOUR = ("left left left left right right right right "
        "forward right forward right forward right forward forward forward "
        "left forward left forward left forward right forward left forward forward").split()

# what the projections' symbols mean, in the maze's coordinates (rows counted down from the top)
WORDS = {"east": (1, 0), "south": (0, 1), "west": (-1, 0), "north": (0, -1)}
ARROWS = {">": (1, 0), "v": (0, 1), "<": (-1, 0), "^": (0, -1)}  # the way each character points
AGENT_RED = (255, 0, 0)  # Minigrid's agent triangle
NORTH = WORDS["north"]

Vec = tuple[int, int]
Cell = tuple[int, int]


def room(ruleset: str) -> Maze:
    return maze_from_dict({"format": "gridbench.maze/1", "id": f"facing-room-{ruleset}", "ruleset": ruleset,
                           "grid": ROOM, "start": {"pos": list(START), "dir": "east"}, "goal": list(GOAL),
                           "objects": [{"id": "k", "kind": "key", "color": "blue", "pos": list(KEY)}]})


def plus(cell: Cell, v: Vec) -> Cell:
    return (cell[0] + v[0], cell[1] + v[1])


def right_of(v: Vec) -> Vec:
    """A quarter turn clockwise on the north-up map (y down)."""
    return (-v[1], v[0])


def left_of(v: Vec) -> Vec:
    return (v[1], -v[0])


def dot(a: Vec, b: Vec) -> int:
    return a[0] * b[0] + a[1] * b[1]


# ---- what the dynamics say -------------------------------------------------------------------

def forward_vector(maze: Maze, direction: int) -> Vec:
    """Where a FORWARD goes from ``direction``, as the dynamics move it: one step from the middle
    of the room's open floor."""
    s = replace(initial_state(maze), pos=OPEN, dir=direction)
    after, event = step(maze, s, FORWARD)
    assert event == "moved", (direction, event)
    return (after.pos[0] - s.pos[0], after.pos[1] - s.pos[1])


def tour_actions(maze: Maze) -> list[int]:
    """The tour, then the oracle's plan from where it ends to the goal."""
    s = initial_state(maze)
    actions = [ACTIONS.index(a) for a in TOUR]
    for a in actions:
        s, _ = step(maze, s, a)
    return actions + list(solve(maze, start=s).plan)


def reference(maze: Maze, actions: list[int]) -> list[tuple[MazeState, str]]:
    """The start (event ``start``) and the state and event after each action."""
    out = [(initial_state(maze), "start")]
    for a in actions:
        out.append(step(maze, out[-1][0], a))
    return out


@pytest.fixture(scope="module", params=RULESETS)
def played(request):
    """(maze, actions, the reference states and events, the forward vector of each direction)."""
    maze = room(request.param)
    actions = tour_actions(maze)
    states = reference(maze, actions)
    assert states[-1][1] == "goal"
    return maze, actions, states, {d: forward_vector(maze, d) for d in range(4)}


def test_the_tour_turns_into_every_direction_both_ways_and_moves_each_way(played):
    """The dynamics themselves: a turn is a quarter turn the way it says on the north-up map, a
    FORWARD that moves goes one cell along the forward vector, and the tour covers what the
    projections are held to (each direction reached by a left and by a right, a FORWARD each way,
    a bump into a wall and one into the key)."""
    maze, actions, states, fwd = played
    assert len(set(fwd.values())) == 4 and all(abs(x) + abs(y) == 1 for x, y in fwd.values())
    reached: dict[str, set[Vec]] = {"left": set(), "right": set(), "forward": set()}
    bumps = set()
    for a, (before, _), (after, _) in zip(actions, states[:-1], states[1:], strict=True):
        f = fwd[before.dir]
        if a == LEFT:
            assert after.pos == before.pos and fwd[after.dir] == left_of(f)
        elif a == RIGHT:
            assert after.pos == before.pos and fwd[after.dir] == right_of(f)
        elif a == FORWARD:
            assert after.dir == before.dir
            assert after.pos in (before.pos, plus(before.pos, f))
            if after.pos == before.pos:
                bumps.add(plus(before.pos, f))
        name = ACTIONS[a]
        if name in reached:
            reached[name].add(fwd[after.dir])
    assert reached["left"] == reached["right"] == reached["forward"] == set(WORDS.values())
    assert (START[0], 0) in bumps  # the north wall
    if maze.ruleset == "minigrid":
        assert KEY in bumps


# ---- readers ---------------------------------------------------------------------------------

def tip(mask: np.ndarray) -> Vec:
    """The way a glyph points: from its centroid to its farthest pixel, snapped to an axis (image
    x to the right, y down). (A triangle's centroid sits towards its base, so the centroid's
    offset from the cell's centre would point backwards: the tip is what shows the facing.)"""
    ys, xs = np.nonzero(mask)
    cx, cy = xs.mean(), ys.mean()
    far = int(np.argmax((xs - cx) ** 2 + (ys - cy) ** 2))
    dx, dy = xs[far] - cx, ys[far] - cy
    assert max(abs(dx), abs(dy)) > 2 * min(abs(dx), abs(dy)), "the glyph points along no axis"
    return (int(np.sign(dx)), 0) if abs(dx) > abs(dy) else (0, int(np.sign(dy)))


def read_2d(frame: np.ndarray, maze: Maze) -> tuple[Cell, Vec]:
    """The agent's cell and facing in a 2D frame: the tile holding every pixel of the triangle's red,
    and where its tip points."""
    tile = frame.shape[1] // maze.width
    mask = (frame[..., 0] == AGENT_RED[0]) & (frame[..., 1] == AGENT_RED[1]) & (frame[..., 2] == AGENT_RED[2])
    ys, xs = np.nonzero(mask)
    cells = {(int(x) // tile, int(y) // tile) for x, y in zip(xs, ys, strict=True)}
    assert len(cells) == 1, cells
    return cells.pop(), tip(mask)


def map_rows(text: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s*(\d+) (\S+)$", text, re.MULTILINE)}


def read_map(text: str) -> tuple[Cell, Vec]:
    """The arrow's cell in a text map and the way it points."""
    found = [((x, y), ARROWS[ch]) for y, row in map_rows(text).items() for x, ch in enumerate(row) if ch in ARROWS]
    assert len(found) == 1, found
    return found[0]


def read_where(text: str) -> tuple[Cell, Vec]:
    """The text projection's ``You are at (x, y) facing <word>``."""
    m = re.findall(r"You are at \((\d+), (\d+)\) facing (\w+)", text)
    assert m, text
    x, y, word = m[-1]
    return (int(x), int(y)), WORDS[word]


def read_study_where(text: str) -> tuple[Cell, Vec]:
    """The study style's ``You are at (row, col), facing <WORD>.``"""
    m = re.findall(r"You are at \((\d+), (\d+)\), facing ([A-Z]+)\.", text)
    assert m, text
    r, c, word = m[-1]
    return (int(c), int(r)), WORDS[word.lower()]


def test_the_readers_tell_the_four_facings_apart():
    """Each reader gives the start cell's four facings four different readings, so one that read a
    quarter turn off could not pass as the dynamics' facing."""
    maze = room("minigrid")
    s = initial_state(maze)
    turned = [replace(s, dir=d) for d in range(4)]
    readers: dict[str, Callable[[MazeState], tuple[Cell, Vec]]] = {
        "2D frame": lambda st: read_2d(render_state(maze, st), maze),
        "text map": lambda st: read_map(text_projection(maze, st)),
        "text words": lambda st: read_where(text_projection(maze, st)),
        "study words": lambda st: read_study_where(current_text(maze, st)),
    }
    for name, read in readers.items():
        readings = [read(st) for st in turned]
        assert len({v for _, v in readings}) == 4 and {c for c, _ in readings} == {START}, name


# ---- the 2D frames and the texts -------------------------------------------------------------

def test_frames_and_texts_show_the_facing_the_dynamics_give(played):
    """After every action of the tour: the 2D frame in both skins and ``MazeEnv``'s own frame show
    the triangle on the agent's cell pointing where FORWARD goes; the text map's arrow, its
    position line and the study style's description say the same."""
    maze, actions, states, fwd = played
    neutral = with_skin(maze, "neutral")
    env = MazeEnv(maze, render_mode="rgb_array", tile_size=16)
    env.reset()
    for i, (s, _) in enumerate(states):
        if i:
            env.step(actions[i - 1])
        assert env.state == s
        want = (s.pos, fwd[s.dir])
        assert read_2d(render_state(maze, s), maze) == want, (i, "2D classic")
        assert read_2d(render_state(neutral, s), neutral) == want, (i, "2D neutral")
        assert read_2d(env.frame(), maze) == want, (i, "MazeEnv frame")
        for m in (maze, neutral):
            text = text_projection(m, s)
            assert read_map(text) == want, (i, m.skin, text)
            assert read_where(text) == want, (i, m.skin, text)
        assert read_study_where(current_text(maze, s)) == want, i
    env.close()


def test_the_map_legend_names_each_arrow_by_the_way_it_points():
    text = text_projection(room("minigrid"), initial_state(room("minigrid")))
    m = re.search(r"((?:\S ){3}\S) you \(facing (\w+), (\w+), (\w+), (\w+)\)", text)
    assert m, text
    glyphs, words = m.group(1).split(), m.groups()[1:]
    assert [ARROWS[g] for g in glyphs] == [WORDS[w] for w in words]


def test_the_study_styles_cardinal_moves_go_the_way_they_are_named():
    """``MOVE_<DIRECTION>`` becomes turns and a FORWARD (``agents.actions.primitives``): from every
    facing it lands one cell along the named direction and faces it."""
    maze = room("minigrid")
    fwd = {d: forward_vector(maze, d) for d in range(4)}
    for facing in range(4):
        for token in (t for t in CARDINAL_TOKENS if t.startswith("MOVE_")):
            s = replace(initial_state(maze), pos=OPEN, dir=facing)
            for a in primitives(token, facing):
                s, _ = step(maze, s, a)
            way = WORDS[token.removeprefix("MOVE_").lower()]
            assert s.pos == plus(OPEN, way) and fwd[s.dir] == way, (facing, token)


# ---- the 3D frames ---------------------------------------------------------------------------

HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None  # the 3d extra: scripts/install.sh --test installs it


def read_top_down(frame: np.ndarray, maze: Maze) -> tuple[Cell, Vec]:
    """The wedge's cell and tip in a top-down frame (north up): its red pixels, on floor cells (the
    compass's red needle sits on the top-right wall cell)."""
    side = frame.shape[0]
    cell = side / max(maze.width, maze.height)
    x0, y0 = (side - cell * maze.width) / 2, (side - cell * maze.height) / 2
    red = (frame[..., 0] > 200) & (frame[..., 1] < 100) & (frame[..., 2] < 100)
    ys, xs = np.nonzero(red)
    gx, gy = ((xs - x0) // cell).astype(int), ((ys - y0) // cell).astype(int)
    inside = (gx >= 0) & (gx < maze.width) & (gy >= 0) & (gy < maze.height)
    on_floor = inside.copy()
    on_floor[inside] = ~maze.walls[gx[inside], gy[inside]]
    cells = {(int(x), int(y)) for x, y in zip(gx[on_floor], gy[on_floor], strict=True)}
    assert len(cells) == 1, cells
    mask = np.zeros(red.shape, dtype=bool)
    mask[ys[on_floor], xs[on_floor]] = True
    return cells.pop(), tip(mask)


def sky_rows(frame: np.ndarray) -> int:
    """Rows of sky at the top of a first-person frame's centre column: the walls are all one
    height and the eye below their tops, so the nearer the wall straight ahead, the fewer."""
    from env.render3d.renderer import SKY

    column = np.all(frame[:, frame.shape[1] // 2] == SKY, axis=1)
    return int(np.argmin(column)) if not column.all() else len(column)


def depth_ahead(maze: Maze, cell: Cell, way: Vec) -> int:
    """Floor cells from ``cell`` along ``way`` before the first wall."""
    n = 0
    while not maze.walls[plus(cell, (way[0] * (n + 1), way[1] * (n + 1)))]:
        n += 1
    return n


def drawn_pose(maze: Maze, camera: str, side: int) -> tuple[Cell, Vec, Vec]:
    """The cell of the eye, and its forward and right axes on the map, as the last frame of
    ``camera`` drew them (the scene's camera; world y is north, so the map's y is its negative)."""
    from env.render3d.gl import import_mujoco
    from env.render3d.renderer import renderer

    mujoco = import_mujoco()
    sc = renderer().scene(maze, camera, side)
    eye = sc.model.cam_pos[sc.camera_id]
    flat = np.zeros(9)
    mujoco.mju_quat2Mat(flat, sc.model.cam_quat[sc.camera_id])
    axes = flat.reshape(3, 3)  # columns: right, up, backward

    def on_map(v: np.ndarray) -> Vec:
        x, y = float(v[0]), -float(v[1])
        return (int(np.sign(x)), 0) if abs(x) > abs(y) else (0, int(np.sign(y)))

    return (int(np.floor(eye[0])), int(np.floor(-eye[1]))), on_map(-axes[:, 2]), on_map(axes[:, 0])


def read_compass(frame: np.ndarray) -> tuple[Vec, Vec]:
    """A first-person frame's compass: where its needle points on screen (x right, y down) and the
    direction its letter names. The dial is found by its rim; the letter is the one of E, S, W, N
    whose strokes (drawn by ``hud.compass`` in that dial) are exactly the frame's letter pixels."""
    from PIL import Image, ImageDraw

    from env.render3d import hud

    side = frame.shape[0]
    corner = (slice(0, side // 4), slice(3 * side // 4, side))  # the dial sits top right
    rim_y, rim_x = np.nonzero(np.all(frame[corner] == hud.RIM, axis=2))
    top, left = int(rim_y.min()), int(rim_x.min()) + 3 * side // 4
    size = int(rim_x.max() - rim_x.min()) + 1
    assert size == int(rim_y.max() - rim_y.min()) + 1
    box = (slice(top, top + size), slice(left, left + size))
    dial = frame[box]
    ny, nx = np.nonzero(np.all(dial == hud.NEEDLE, axis=2))
    dx, dy = nx.mean() - (size - 1) / 2, ny.mean() - (size - 1) / 2
    needle = (int(np.sign(dx)), 0) if abs(dx) > abs(dy) else (0, int(np.sign(dy)))
    letters = np.all(dial == hud.LETTER, axis=2)
    named = []
    for letter in "ESWN":
        blank = Image.new("RGB", (side, side))
        hud.compass(ImageDraw.Draw(blank), (left, top, size), letter, 0.0)
        if np.array_equal(np.all(np.asarray(blank)[box] == hud.LETTER, axis=2), letters):
            named.append(letter)
    assert len(named) == 1, named
    word = {"E": "east", "S": "south", "W": "west", "N": "north"}[named[0]]
    return needle, WORDS[word]


@pytest.mark.skipif(not HAS_MUJOCO, reason="mujoco is not installed")
def test_every_3d_camera_shows_the_facing_the_dynamics_give(played):
    """After every action of the tour: the top-down wedge sits on the agent's cell pointing where
    FORWARD goes; each first-person eye was drawn from the agent's cell looking along the forward
    vector with the right-hand turn on its right, sees as much sky as the wall straight ahead along
    that vector allows (one reading per distance, fewer rows the nearer), and its compass needle
    points north on screen and its letter names the facing."""
    from env.render3d import CAMERAS, frame3d, frame_side
    from env.render3d.renderer import renderer

    maze, _, states, fwd = played
    side = frame_side("grid", maze.width, maze.height)
    first_person = [c for c, preset in CAMERAS.items() if preset.first_person]
    assert set(CAMERAS) == {"top_down", *first_person}  # a new camera that is neither needs a reader here
    sky_by_depth: dict[str, dict[int, set[int]]] = {c: {} for c in first_person}
    at_start: dict[str, set[int]] = {c: set() for c in first_person}
    for i, (s, _) in enumerate(states):
        f = fwd[s.dir]
        assert read_top_down(frame3d(maze, s, "top_down"), maze) == (s.pos, f), (i, "top_down")
        for camera in first_person:
            renderer().forget_frames()  # drawn now, so the scene's camera is this frame's
            frame = frame3d(maze, s, camera)
            assert drawn_pose(maze, camera, side) == (s.pos, f, right_of(f)), (i, camera)
            # north on screen: up is the forward vector, right the right-hand one
            assert read_compass(frame) == ((dot(NORTH, right_of(f)), -dot(NORTH, f)), f), (i, camera)
            depth = depth_ahead(maze, s.pos, f)
            sky_by_depth[camera].setdefault(depth, set()).add(sky_rows(frame))
            if s.pos == START:
                at_start[camera].add(sky_rows(frame))
    for camera, by_depth in sky_by_depth.items():
        assert all(len(seen) == 1 for seen in by_depth.values()), (camera, by_depth)
        readings = [seen.pop() for _, seen in sorted(by_depth.items())]
        assert readings == sorted(set(readings)), (camera, readings)  # strictly more sky the farther the wall
        assert len(at_start[camera]) == 4, camera  # the start's four facings: four depths, four readings


# ---- one episode: the trace and the prompts --------------------------------------------------

STUDY = resolve_protocol({"preset": "study-final", "observation": "image+text", "feedback": "outcome",
                          "step_cap_factor": 20.0, "tile_size": 16})
GRIDBENCH = resolve_protocol({"preset": "gridbench-final", "observation": "image+text", "icl_example": False,
                              "step_cap_factor": 20.0, "tile_size": 16})


class Recorder:
    """A real ``Agent``: plays a fixed list of actions and keeps, for each turn, the turn and the
    messages it is asked with in the study style (the episode's protocol) and in gridbench's."""

    def __init__(self, actions: list[int]):
        self.actions = actions
        self.asked: list[tuple[Turn, list, list]] = []

    async def act(self, turn: Turn) -> Decision:
        self.asked.append((turn, build_messages(turn), build_messages(replace(turn, protocol=GRIDBENCH))))
        action = self.actions[turn.step - 1]
        return Decision(action=action, parse="exact", reply=ACTIONS[action])

    async def resume(self, turn: Turn, decision: Decision) -> None:
        return None

    async def aclose(self) -> None:
        return None


def dir_meanings() -> dict[int, str]:
    """The step rows' ``dir`` column as its own documentation reads it (``0 east, 1 south, ...``)."""
    doc = next(f.metadata["doc"] for f in dataclasses.fields(StepRecord) if f.name == "dir")
    meanings = {int(n): word for n, word in re.findall(r"(\d) (east|south|west|north)", doc)}
    assert sorted(meanings) == [0, 1, 2, 3], doc
    return meanings


def user_parts(messages: list) -> list[dict]:
    return [p for m in messages if m["role"] == "user" and isinstance(m["content"], list) for p in m["content"]]


def images_of(messages: list, maze: Maze) -> list[tuple[Cell, Vec]]:
    """Each image of the request, read as a 2D frame, in order."""
    out = []
    for part in (p for p in user_parts(messages) if p["type"] == "image_url"):
        pixels = last_image({"messages": [{"content": [part]}]})  # the scripted server's decoding
        assert pixels is not None
        out.append(read_2d(pixels, maze))
    return out


def cell_rc(r: str, c: str) -> Cell:
    return (int(c), int(r))


def check_study_prompt(maze: Maze, messages: list, k: int, states: list, fwd: dict[int, Vec]) -> None:
    """The study-style request asked before step ``k + 1``: ``states[k]`` is the state it shows."""
    now, _ = states[k]
    text = "\n".join(p["text"] for p in user_parts(messages) if p["type"] == "text")
    # its frames: the recent ones, each the state its step's action was decided in, then the current
    shown = images_of(messages, maze)
    recent = range(max(1, k - STUDY.history_frames + 1), k + 1)
    assert shown == [(states[j - 1][0].pos, fwd[states[j - 1][0].dir]) for j in recent] + [(now.pos, fwd[now.dir])]
    assert read_study_where(text) == (now.pos, fwd[now.dir])
    start = re.search(r"You set out from \((\d+), (\d+)\) facing ([A-Z]+)\.", text)
    assert start and (cell_rc(*start.groups()[:2]), WORDS[start.group(3).lower()]) == (START, fwd[states[0][0].dir])
    moved = [states[j][0].pos for j in range(1, k + 1) if states[j][1] == "moved"]
    trail = [cell_rc(r, c) for r, c in re.findall(r"went (?:to|past) \((\d+), (\d+)\)", text)]
    assert set(trail) <= set(moved) and (not moved or (trail and trail[-1] == moved[-1]))
    # the text record: each recent step's position and facing after it, and its outcome
    lines = re.findall(rf"^\((\d+), (\d+)\) facing ([A-Z]+) \| {SENTINEL}: (\w+) \| Outcome: (.*)$", text, re.MULTILINE)
    assert len(lines) == len(recent)
    for j, (r, c, word, _, outcome) in zip(recent, lines, strict=True):
        (before, _), (after, event) = states[j - 1], states[j]
        assert (cell_rc(r, c), WORDS[word.lower()]) == (after.pos, fwd[after.dir]), (j, outcome)
        ahead = plus(before.pos, fwd[before.dir])
        if m := re.fullmatch(r"TURNED: now facing ([A-Z]+)", outcome):
            assert WORDS[m.group(1).lower()] == fwd[after.dir], (j, outcome)
        elif m := re.fullmatch(r"MOVED: now at \((\d+), (\d+)\)", outcome):
            assert cell_rc(*m.groups()) == after.pos == ahead, (j, outcome)
        elif m := re.fullmatch(r"BLOCKED: a blue key lies at \((\d+), (\d+)\); still at \((\d+), (\d+)\)", outcome):
            assert cell_rc(*m.groups()[:2]) == ahead == KEY and cell_rc(*m.groups()[2:]) == before.pos, (j, outcome)
        elif m := re.fullmatch(r"BLOCKED: could not move; still at \((\d+), (\d+)\)", outcome):
            assert event == "bump" and maze.walls[ahead] and cell_rc(*m.groups()) == before.pos, (j, outcome)
        else:
            raise AssertionError(f"step {j}: an outcome this test does not read: {outcome}")


def check_gridbench_prompt(maze: Maze, messages: list, k: int, states: list, fwd: dict[int, Vec]) -> None:
    """The gridbench-style request for the same turn: its frames (the recent ones, each the state
    before its step, then the current: all of the last ``history_frames``, also before that many
    steps were taken, which this check found one short at turn 3), its text map and its start line."""
    now, _ = states[k]
    recent = range(max(1, k - GRIDBENCH.history_frames + 1), k + 1)
    assert images_of(messages, maze) == [(states[j - 1][0].pos, fwd[states[j - 1][0].dir]) for j in recent] + [
        (now.pos, fwd[now.dir])]
    text = "\n".join(p["text"] for p in user_parts(messages) if p["type"] == "text")
    current = text[text.rindex("Text map of the maze now:"):]
    assert read_map(current) == read_where(current) == (now.pos, fwd[now.dir])
    start = re.search(r"You started at \((\d+), (\d+)\) facing (\w+)\.", text)
    assert start and ((int(start.group(1)), int(start.group(2))), WORDS[start.group(3)]) == (START, fwd[states[0][0].dir])


def test_one_episodes_trace_and_prompts_agree_with_the_dynamics(played, tmp_path):
    """One episode of the tour played by ``run_episode`` on ``MazeEnv``, written as a run and read
    back: every step row holds the position and facing the reference dynamics reach, and every
    prompt after it shows them, in both styles, read by this module's readers and found again by
    the scripted server's (``testing.reading``)."""
    maze, actions, states, fwd = played
    agent = Recorder(actions)
    eid = f"facing-{maze.ruleset}"
    identity = EpisodeIdentity(run="facing", episode_id=eid, model_name="scripted", model="test/scripted",
                               condition="facing", repeat=0, maze_id=maze.id)
    result = asyncio.run(run_episode(maze, agent, STUDY, identity))
    assert isinstance(result, EpisodeResult) and result.episode.termination == "solved"
    write_episode(tmp_path, result)
    _, rows = read_episode(tmp_path, eid)
    rows = rows.sort_values("step").reset_index(drop=True)
    assert list(rows["step"]) == list(range(1, len(actions) + 1))
    meaning = dir_meanings()
    for k, row in rows.iterrows():
        after, event = states[int(k) + 1]
        assert (row["action"], row["event"]) == (ACTIONS[actions[int(k)]], event), k
        assert ((int(row["x"]), int(row["y"])), WORDS[meaning[int(row["dir"])]]) == (after.pos, fwd[after.dir]), k
        assert int(row["dir"]) == after.dir, k
    assert len(agent.asked) == len(actions)
    readers = MazeStates(maze)
    for k, (turn, study, gridbench) in enumerate(agent.asked):
        assert turn.step == k + 1 and turn.state == states[k][0]
        check_study_prompt(maze, study, k, states, fwd)
        check_gridbench_prompt(maze, gridbench, k, states, fwd)
        assert readers.from_study_text({"messages": study}) == states[k][0], k
        assert readers.from_text({"messages": gridbench}) == states[k][0], k
        assert readers.from_image({"messages": study}) == readers.from_image({"messages": gridbench}) == states[k][0], k


def test_the_episodes_protocols_are_the_ones_read():
    """What the prompt checks rely on: both protocols show frames, text and the last steps, and the
    study style's text record carries each step's outcome."""
    for p in (STUDY, GRIDBENCH):
        assert isinstance(p, Protocol) and p.uses_image and p.uses_text and p.shows_recent and p.summarised
    assert STUDY.style == "study" and STUDY.feedback == "outcome" and GRIDBENCH.start_info
