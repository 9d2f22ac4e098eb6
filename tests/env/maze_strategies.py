"""Small mazes for the env tests: an ASCII builder for hand-made cases and a hypothesis strategy."""

from __future__ import annotations

from hypothesis import strategies as st

from env import COLORS, DIRECTIONS, Maze, maze_from_dict


def obj(kind: str, color: str = "yellow", **extra) -> dict:
    return {"kind": kind, "color": color, **extra}


def make(rows: list[str], facing: str = "east", **letters: dict) -> Maze:
    """A maze from ASCII: ``A`` start, ``G`` goal, a lowercase letter an object given by keyword.

    Object ids are their letters; a switch's ``controls`` name gates by letter too.
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
    return maze_from_dict(
        {"format": "gridbench.maze/1", "id": "case", "grid": grid,
         "start": {"pos": start, "dir": facing}, "goal": goal, "objects": objects},
        "case",
    )


@st.composite
def mazes(draw, max_side: int = 8) -> Maze:
    """Random valid mazes: walls anywhere inside the ring, every object kind, any states."""
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
         "goal": list(goal), "objects": objects},
        "random",
    )
