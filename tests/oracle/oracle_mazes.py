"""Maze builders for the oracle tests: hand-drawn grids and small random mazes."""

from __future__ import annotations

import random

from env.errors import BadInput
from env.maze import Maze, maze_from_dict

COLORS = ("yellow", "blue", "red")


def build(grid: list[str], start, goal, objects=(), meta=None, dir="east", mid="t") -> Maze:
    """A maze from ascii rows; objects are dicts without the format boilerplate."""
    d = {"format": "gridbench.maze/1", "id": mid, "grid": grid,
         "start": {"pos": list(start), "dir": dir}, "goal": list(goal), "objects": list(objects)}
    if meta is not None:
        d["meta"] = meta
    return maze_from_dict(d)


def random_maze(rng: random.Random, size: int = 7, idx: int = 0) -> Maze | None:
    """A small maze with random walls, keys, doors, switches and gates (None if invalid)."""
    w = h = size
    rows = []
    for y in range(h):
        if y in (0, h - 1):
            rows.append("#" * w)
        else:
            rows.append("#" + "".join("#" if rng.random() < 0.18 else "." for _ in range(w - 2)) + "#")
    floors = [(x, y) for y in range(h) for x in range(w) if rows[y][x] == "."]
    if len(floors) < 8:
        return None
    rng.shuffle(floors)
    start, goal, *cells = floors
    objects = []
    n_keys, n_doors, n_gates = rng.randint(0, 2), rng.randint(0, 2), rng.randint(0, 2)
    n_switches = rng.randint(0, 2) if n_gates else rng.randint(0, 1)
    gate_ids = [f"g{i}" for i in range(n_gates)]
    for i in range(n_keys):
        objects.append({"id": f"k{i}", "kind": "key", "color": rng.choice(COLORS), "pos": list(cells.pop())})
    for i in range(n_doors):
        objects.append({"id": f"d{i}", "kind": "door", "color": rng.choice(COLORS), "pos": list(cells.pop()),
                        "state": rng.choice(["locked", "locked", "closed", "open"])})
    for i in range(n_switches):
        ctl = [g for g in gate_ids if rng.random() < 0.7]
        objects.append({"id": f"s{i}", "kind": "switch", "color": "blue", "pos": list(cells.pop()),
                        "on": rng.random() < 0.3, "controls": ctl})
    for g in gate_ids:
        objects.append({"id": g, "kind": "gate", "color": "blue", "pos": list(cells.pop())})
    try:
        return build(rows, start, goal, objects, dir=rng.choice(["east", "south", "west", "north"]),
                     mid=f"rand{idx}")
    except BadInput:
        return None


def random_mazes(seed: int, count: int, size: int = 7) -> list[Maze]:
    rng = random.Random(seed)
    out: list[Maze] = []
    i = 0
    while len(out) < count:
        m = random_maze(rng, size, i)
        i += 1
        if m is not None:
            out.append(m)
    return out

