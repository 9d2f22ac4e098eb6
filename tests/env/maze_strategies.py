"""Small mazes for the env tests: an ASCII builder for hand-made cases and a hypothesis strategy."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import strategies as st

from env import COLORS, DIRECTIONS, Maze, MazeState, maze_from_dict, tiles
from env.maze import SKIN_NAMES
from env.minigrid_env import drawn_grid


def obj(kind: str, color: str = "yellow", **extra) -> dict:
    return {"kind": kind, "color": color, **extra}


def make(rows: list[str], facing: str = "east", ruleset: str = "minigrid", rules: dict | None = None,
         **letters: dict) -> Maze:
    """A maze from ASCII: ``A`` start, ``G`` goal, a lowercase letter an object given by keyword.

    Object ids are their letters; a switch's ``controls`` name gates by letter too (a teleporter's
    ``to`` is a cell). ``ruleset``/``rules`` go into the file only when not minigrid's.
    """
    grid, objects, start, goal = [], [], None, None
    for y, row in enumerate(rows):
        line = ""
        for x, ch in enumerate(row):
            line += "#" if ch == "#" else "."
            if ch == "A":
                start = [x, y]
            elif ch == "G":
                goal = [x, y]
            elif ch.islower():
                objects.append({"id": ch, **letters[ch], "pos": [x, y]})
        grid.append(line)
    doc = {"format": "gridbench.maze/1", "id": "case", "grid": grid,
           "start": {"pos": start, "dir": facing}, "goal": goal, "objects": objects}
    if ruleset != "minigrid":
        doc["ruleset"] = ruleset
    if rules is not None:
        doc["rules"] = rules
    return maze_from_dict(doc, "case")


@st.composite
def mazes(draw, max_side: int = 8) -> Maze:
    """Random valid mazes: walls anywhere inside the ring, every object kind, any states, either skin."""
    width = draw(st.integers(5, max_side))
    height = draw(st.integers(4, max_side))
    inner = [(x, y) for y in range(1, height - 1) for x in range(1, width - 1)]
    walls = set(draw(st.lists(st.sampled_from(inner), max_size=len(inner) // 4, unique=True)))
    floor = [c for c in inner if c not in walls]
    room = len(inner) - 2  # start and goal take two cells
    counts = {}
    for kind in ("key", "door", "switch", "gate"):
        counts[kind] = min(draw(st.integers(0, 2)), room)
        room -= counts[kind]
    needed = 2 + sum(counts.values())
    if len(floor) < needed:
        floor = inner  # too many walls for this many objects: drop them all
        walls = set()
    cells = draw(st.permutations(floor))[:needed]
    start, goal, spots = cells[0], cells[1], list(cells[2:])
    gate_ids = [f"g{i}" for i in range(counts["gate"])]
    objects = []
    for kind, n in counts.items():
        for i in range(n):
            o = {"id": f"{kind[0]}{i}", "kind": kind, "color": draw(st.sampled_from(COLORS)), "pos": list(spots.pop())}
            if kind == "door":
                o["state"] = draw(st.sampled_from(["locked", "closed", "open"]))
            elif kind == "switch":
                o["on"] = draw(st.booleans())
                o["controls"] = draw(st.lists(st.sampled_from(gate_ids), unique=True)) if gate_ids else []
            objects.append(o)
    grid = ["".join("#" if (x in (0, width - 1) or y in (0, height - 1) or (x, y) in walls) else "."
                    for x in range(width)) for y in range(height)]
    return maze_from_dict(
        {"format": "gridbench.maze/1", "id": "random", "grid": grid,
         "start": {"pos": list(start), "dir": draw(st.sampled_from(DIRECTIONS))},
         "goal": list(goal), "objects": objects, "skin": draw(st.sampled_from(SKIN_NAMES))},
        "random",
    )


R1_KINDS = ("key", "door", "switch", "gate", "teleporter", "hazard", "block", "kill", "frozen")


def random_r1_maze(rng: random.Random) -> Maze:
    """A random 9x6 multinet-r1 maze with every kind of object, any states and rules, either skin."""
    cells = [(x, y) for x in range(1, 8) for y in range(1, 5) if (x, y) not in ((1, 1), (7, 4))]
    rng.shuffle(cells)
    objects, gates = [], []
    for i in range(rng.randint(1, 7)):
        kind = rng.choice(R1_KINDS)
        o = {"id": f"o{i}", "kind": kind, "pos": list(cells.pop())}
        if kind in ("key", "door", "switch", "gate", "teleporter", "block"):
            o["color"] = rng.choice(["red", "blue"])
        if kind == "door":
            o["state"] = rng.choice(["locked", "open"])
        elif kind == "gate":
            o["open"] = rng.random() < 0.2
            gates.append(o["id"])
        elif kind == "switch":
            o.update(switch_type=rng.choice(["toggle", "one_shot", "hold"]), on=rng.random() < 0.3)
        elif kind == "teleporter":
            o.update(to=list(cells.pop()), bidirectional=rng.random() < 0.5)
        objects.append(o)
    for o in objects:
        if o["kind"] == "switch":
            o["controls"] = rng.sample(gates, min(len(gates), rng.randint(0, 2)))
    return maze_from_dict({"format": "gridbench.maze/1", "id": "r", "ruleset": "multinet-r1",
                           "skin": rng.choice(SKIN_NAMES),
                           "rules": {"key_consumption": rng.random() < 0.7, "freeze_steps": rng.randint(1, 3)},
                           "grid": ["#########"] + ["#.......#"] * 4 + ["#########"],
                           "start": {"pos": [1, 1], "dir": "east"}, "goal": [7, 4], "objects": objects}, "r")


def atlas_frame(maze: Maze, state: MazeState, size: int, switch_frames: str = "distinct") -> np.ndarray:
    """What the browser viewer draws: each cell's tile, by name, copied from the tile atlas."""
    atlas, rows = tiles.tile_atlas(size)
    grid = drawn_grid(maze, state, switch_frames)
    frame = np.zeros((maze.height * size, maze.width * size, 3), dtype=np.uint8)
    for y in range(maze.height):
        for x in range(maze.width):
            r = rows[tiles.tile_name(grid.get(x, y))]
            c = tiles.AGENT_DIRS.index(state.dir if (x, y) == state.pos else None)
            frame[y * size:(y + 1) * size, x * size:(x + 1) * size] = atlas[r * size:(r + 1) * size, c * size:(c + 1) * size]
    return frame
