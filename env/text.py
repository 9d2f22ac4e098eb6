"""The text projection: the same state as the frame, as an ASCII map with a legend.

It describes what is visible (cells, objects, their visible state) and never how anything works.
"""

from __future__ import annotations

from env.maze import (
    DIRECTIONS,
    DOOR_STATES,
    PR57_KINDS,
    R1_KINDS,
    STUDY_KINDS,
    Maze,
    MazeObject,
)
from env.mechanics import covered_cells, of_kind
from env.skins import Skin, skin_of
from env.state import MazeState

AGENT_GLYPHS = (">", "v", "<", "^")  # east, south, west, north
_BASE_LEGEND = "# wall   . floor   G goal   > v < ^ you (facing east, south, west, north)"


def legend(skin: Skin) -> str:
    """The map's legend: the fixed cells, then every mechanism glyph in the skin's words."""
    g, st, n = skin.glyphs, skin.states, skin.noun
    items = [f"{g['key']} {n('key')}",
             *(f"{g[s]} {st[s]} {n('door')}" for s in ("door_locked", "door_closed", "door_open")),
             *(f"{g[s]} {n('switch')} ({st[s]})" for s in ("switch_off", "switch_on")),
             *(f"{g[s]} {st[s]} {n('gate')}" for s in ("gate_closed", "gate_open"))]
    return _BASE_LEGEND + "\n" + "   ".join(items)


def object_name(o: MazeObject, skin: Skin) -> str:
    """What an object looks like, in the skin's words: ``red key``, ``purple ring``, ``lava cell``
    (its colour where its kind has one)."""
    color = getattr(o, "color", None)
    return f"{color} {skin.noun(o.kind)}" if color else skin.noun(o.kind)


def object_cells(maze: Maze, kinds: tuple[str, ...] | None = None) -> list[tuple[str, tuple[int, int]]]:
    """(name, cell) of every object (of ``kinds``) at the start, each cell it covers."""
    skin = skin_of(maze)
    return [(object_name(o, skin), c) for o in maze.objects if kinds is None or o.kind in kinds
            for c in covered_cells(o)]


def glyph_map(maze: Maze, state: MazeState) -> list[list[str]]:
    glyph = skin_of(maze).glyphs
    rows = [list(r) for r in maze.grid]
    gx, gy = maze.goal
    rows[gy][gx] = "G"
    for d, st in zip(maze.doors, state.doors, strict=True):
        rows[d.pos[1]][d.pos[0]] = glyph[f"door_{DOOR_STATES[st]}"]
    for s, on in zip(maze.switches, state.switches, strict=True):
        rows[s.pos[1]][s.pos[0]] = glyph["switch_on" if on else "switch_off"]
    for g, op in zip(maze.gates, maze.gates_open(state.switches), strict=True):
        rows[g.pos[1]][g.pos[0]] = glyph["gate_open" if op else "gate_closed"]
    for o in maze.objects:
        if o.kind in STUDY_KINDS:
            for x, y in covered_cells(o):
                rows[y][x] = glyph[o.kind]
    for p in state.keys:
        if p is not None:
            rows[p[1]][p[0]] = glyph["key"]
    x, y = state.pos
    rows[y][x] = AGENT_GLYPHS[state.dir]
    return rows


def inventory(maze: Maze, state: MazeState) -> str:
    if state.carrying < 0:
        return "nothing"
    return f"a {maze.keys[state.carrying].color} {skin_of(maze).noun('key')}"


def object_lines(maze: Maze, state: MazeState) -> list[str]:
    skin = skin_of(maze)
    lines = []
    for k, p in zip(maze.keys, state.keys, strict=True):
        if p is not None:
            lines.append(f"{object_name(k, skin)} at ({p[0]}, {p[1]})")
    for d, st in zip(maze.doors, state.doors, strict=True):
        lines.append(f"{object_name(d, skin)} at ({d.pos[0]}, {d.pos[1]}): {skin.door_state(st)}")
    for s, on in zip(maze.switches, state.switches, strict=True):
        lines.append(f"{object_name(s, skin)} at ({s.pos[0]}, {s.pos[1]}): {skin.switch_state(on)}")
    for g, op in zip(maze.gates, maze.gates_open(state.switches), strict=True):
        lines.append(f"{object_name(g, skin)} at ({g.pos[0]}, {g.pos[1]}): {skin.gate_state(op)}")
    for name, (x, y) in object_cells(maze, R1_KINDS):
        lines.append(f"{name} at ({x}, {y})")
    for o in (o for kind in PR57_KINDS for o in maze.objects if o.kind == kind):
        detail = of_kind(o.kind).detail  # what it shows now (where an arrow points)
        lines.append(f"{object_name(o, skin)} at ({o.pos[0]}, {o.pos[1]})"
                     + (f": {detail(maze, state, o)}" if detail is not None else ""))
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
    skin = skin_of(maze)
    out.append("Legend: " + legend(skin).replace("\n", "\n        "))
    extra = [f"{skin.glyphs[k]} {skin.legend_name(k)}" for k in STUDY_KINDS if maze.cells_of(k)]
    if extra:
        out.append("        " + "   ".join(extra))
    objs = object_lines(maze, state)
    if objs:
        out.append("Objects: " + "; ".join(objs) + ".")
    standable: list[MazeObject] = [*maze.switches, *(o for o in maze.objects if of_kind(o.kind).underfoot)]
    under = [s for s in standable if tuple(s.pos) == state.pos]
    where = f"You are at ({state.pos[0]}, {state.pos[1]}) facing {DIRECTIONS[state.dir]}"
    if under:
        where += f", standing on the {object_name(under[0], skin)}"
    else:
        key_under = [k for k, p in zip(maze.keys, state.keys, strict=True) if p == state.pos]
        if key_under:  # only under multinet-r1 does the agent stand on a key
            where += f", standing on the {object_name(key_under[0], skin)}"
    out.append(where + ".")
    out.append(f"Inventory: {inventory(maze, state)}.")
    return "\n".join(out)
