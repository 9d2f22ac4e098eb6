"""The text projection: the same state as the frame, as an ASCII map with a legend.

It describes what is visible (cells, objects, their visible state) and never how anything works.
"""

from __future__ import annotations

from env.maze import (
    DIRECTIONS,
    R1_KINDS,
    BlockObject,
    DoorObject,
    GateObject,
    KeyObject,
    Maze,
    MazeObject,
    SwitchObject,
    TeleporterObject,
)
from env.state import MazeState

AGENT_GLYPHS = (">", "v", "<", "^")  # east, south, west, north
LEGEND = (
    "# wall   . floor   G goal   > v < ^ you (facing east, south, west, north)\n"
    "K key   L locked door   D closed door   / open door   "
    "S switch (off)   * switch (on)   X closed gate   _ open gate"
)
_DOOR_GLYPH = {0: "/", 1: "D", 2: "L"}
_DOOR_WORD = {0: "open", 1: "closed", 2: "locked"}
# multinet-r1's other kinds, named by what they look like, never by what they do
_CELL_GLYPH = {"teleporter": "O", "hazard": "~", "block": "B", "kill": "x", "frozen": "="}
_CELL_LEGEND = {"teleporter": "O ring", "hazard": "~ lava", "block": "B box", "kill": "x skull",
                "frozen": "= frosted tile"}


_CELL_NAME = {"hazard": "lava cell", "kill": "skull", "frozen": "frosted tile"}


def object_name(o: MazeObject) -> str:
    """What an object looks like, in words: ``red key``, ``purple ring``, ``lava cell``."""
    if isinstance(o, TeleporterObject):
        return f"{o.color} ring"
    if isinstance(o, BlockObject):
        return f"{o.color} box"
    if isinstance(o, KeyObject | DoorObject | SwitchObject | GateObject):
        return f"{o.color} {o.kind}"
    return _CELL_NAME[o.kind]


def object_cells(maze: Maze, kinds: tuple[str, ...] | None = None) -> list[tuple[str, tuple[int, int]]]:
    """(name, cell) of every object (of ``kinds``) at the start, both ends of a teleporter."""
    out = []
    for o in maze.objects:
        if kinds is None or o.kind in kinds:
            out.append((object_name(o), o.pos))
            if isinstance(o, TeleporterObject):
                out.append((object_name(o), o.to))
    return out


def glyph_map(maze: Maze, state: MazeState) -> list[list[str]]:
    rows = [list(r) for r in maze.grid]
    gx, gy = maze.goal
    rows[gy][gx] = "G"
    for d, st in zip(maze.doors, state.doors, strict=True):
        rows[d.pos[1]][d.pos[0]] = _DOOR_GLYPH[st]
    for s, on in zip(maze.switches, state.switches, strict=True):
        rows[s.pos[1]][s.pos[0]] = "*" if on else "S"
    for g, op in zip(maze.gates, maze.gates_open(state.switches), strict=True):
        rows[g.pos[1]][g.pos[0]] = "_" if op else "X"
    for o in maze.objects:
        if o.kind in _CELL_GLYPH:
            for x, y in ((o.pos, o.to) if isinstance(o, TeleporterObject) else (o.pos,)):
                rows[y][x] = _CELL_GLYPH[o.kind]
    for p in state.keys:
        if p is not None:
            rows[p[1]][p[0]] = "K"
    x, y = state.pos
    rows[y][x] = AGENT_GLYPHS[state.dir]
    return rows


def inventory(maze: Maze, state: MazeState) -> str:
    if state.carrying < 0:
        return "nothing"
    return f"a {maze.keys[state.carrying].color} key"


def object_lines(maze: Maze, state: MazeState) -> list[str]:
    lines = []
    for k, p in zip(maze.keys, state.keys, strict=True):
        if p is not None:
            lines.append(f"{k.color} key at ({p[0]}, {p[1]})")
    for d, st in zip(maze.doors, state.doors, strict=True):
        lines.append(f"{d.color} door at ({d.pos[0]}, {d.pos[1]}): {_DOOR_WORD[st]}")
    for s, on in zip(maze.switches, state.switches, strict=True):
        lines.append(f"{s.color} switch at ({s.pos[0]}, {s.pos[1]}): {'on' if on else 'off'}")
    for g, op in zip(maze.gates, maze.gates_open(state.switches), strict=True):
        lines.append(f"{g.color} gate at ({g.pos[0]}, {g.pos[1]}): {'open' if op else 'closed'}")
    for name, (x, y) in object_cells(maze, R1_KINDS):
        lines.append(f"{name} at ({x}, {y})")
    return lines


def text_projection(maze: Maze, state: MazeState) -> str:
    """ASCII map (x to the right, y down, row 0 at the top), legend, objects, position, inventory."""
    rows = glyph_map(maze, state)
    w = maze.width
    tens = "".join(str(x // 10) if x >= 10 else " " for x in range(w))
    ones = "".join(str(x % 10) for x in range(w))
    out = []
    if w > 10:
        out.append("    " + tens)
    out.append("    " + ones)
    out += [f"{y:>3} " + "".join(r) for y, r in enumerate(rows)]
    out.append("")
    out.append("Legend: " + LEGEND.replace("\n", "\n        "))
    extra = [_CELL_LEGEND[k] for k in _CELL_LEGEND if maze.cells_of(k)]
    if extra:
        out.append("        " + "   ".join(extra))
    objs = object_lines(maze, state)
    if objs:
        out.append("Objects: " + "; ".join(objs) + ".")
    under = [s for s in maze.switches if tuple(s.pos) == state.pos]
    where = f"You are at ({state.pos[0]}, {state.pos[1]}) facing {DIRECTIONS[state.dir]}"
    if under:
        where += f", standing on the {under[0].color} switch"
    else:
        key_under = [k for k, p in zip(maze.keys, state.keys, strict=True) if p == state.pos]
        if key_under:  # only under multinet-r1 does the agent stand on a key
            where += f", standing on the {key_under[0].color} key"
    out.append(where + ".")
    out.append(f"Inventory: {inventory(maze, state)}.")
    return "\n".join(out)
