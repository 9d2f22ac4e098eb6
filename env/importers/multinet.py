"""Task files of the public MultiNet v2.0 gridworld code, converted into ``gridbench.maze/1``.

Their format: ``maze.dimensions`` is ``[width, height]`` counting a border ring of walls that is
not listed; ``maze.walls`` lists the interior walls as ``[x, y]``; ``maze.start`` and
``maze.goal`` are ``[x, y]``, and the agent starts facing east. ``mechanisms`` holds ``keys``
``[{id, position, color}]``, ``doors`` ``[{id, position, requires_key, initial_state}]``,
``switches`` ``[{id, position, controls, switch_type, initial_state}]`` and ``gates``
``[{id, position, initial_state}]``.

Blocks, teleporters, hazards and any switch that is not a toggle have no gridbench counterpart:
such a file is refused with one line saying what and where. ``rules.key_consumption`` (a key
used up by its door) differs from gridbench, where keys are never consumed: the file is still
converted, with a warning, and ``meta.multinet.key_consumption`` keeps the original rule.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from env.errors import BadInput
from env.maze import COLORS, FORMAT, ID_PATTERN, Maze, maze_from_dict

UNSUPPORTED = ("blocks", "teleporters", "hazards")
DOOR_STATES = {"locked": "locked", "closed": "closed", "open": "open"}


class ConversionWarning(UserWarning):
    """The converted maze behaves differently from the original in a stated way."""


def import_multinet(text: str) -> Maze:
    """The maze of the MultiNet task file at ``text``; warnings go through ``warnings``."""
    maze, notes = convert_file(Path(text))
    for note in notes:
        # reported at the task file itself, so the warning is one line naming the file
        warnings.warn_explicit(note, ConversionWarning, filename=f"multinet:{text}", lineno=1,
                               module=__name__)
    return maze


def convert_file(path: Path) -> tuple[Maze, list[str]]:
    source = f"multinet:{path}"
    if not path.is_file():
        raise BadInput(source, "", "no such file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(source, "", f"cannot read: {e.__class__.__name__}") from None
    except json.JSONDecodeError as e:
        raise BadInput(source, "(file)", f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    return convert(doc, source, _maze_id(doc, path), origin=path.name)


def _maze_id(doc: Any, path: Path) -> str:
    for key in ("id", "task_id", "name"):
        v = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(v, str) and ID_PATTERN.match(v) and ".." not in v:
            return v
    stem = "".join(c if c.isalnum() or c in "_-." else "-" for c in path.stem)[:64].strip("-.") or "multinet"
    return stem


def convert(doc: Any, source: str, maze_id: str, origin: str = "") -> tuple[Maze, list[str]]:
    """(maze, warnings) for a parsed task file; BadInput for anything gridbench cannot express.
    ``origin`` (the file's name, never its path) goes into ``meta.source``."""
    if not isinstance(doc, dict):
        raise BadInput(source, "(file)", "a MultiNet task file is a JSON object")
    maze = _section(doc, "maze", source)
    mech = doc.get("mechanisms") or {}
    if not isinstance(mech, dict):
        raise BadInput(source, "mechanisms", "must be an object")
    for where, holder in (("", doc), ("maze.", maze), ("mechanisms.", mech)):
        for name in UNSUPPORTED:
            if holder.get(name):
                raise BadInput(source, f"{where}{name}", f"{name} have no gridbench equivalent; this task cannot be converted")

    dims = maze.get("dimensions")
    if not (isinstance(dims, list) and len(dims) == 2 and all(isinstance(v, int) for v in dims)):
        raise BadInput(source, "maze.dimensions", "must be [width, height]")
    width, height = dims
    if not (3 <= width <= 64 and 3 <= height <= 64):
        raise BadInput(source, "maze.dimensions", f"{dims}: each side from 3 to 64 (the border ring included)")

    def pos(value: Any, field: str) -> tuple[int, int]:
        if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)):
            raise BadInput(source, field, "must be [x, y]")
        x, y = value
        if not (0 < x < width - 1 and 0 < y < height - 1):
            raise BadInput(source, field, f"{value} is not inside the {width}x{height} border ring")
        return x, y

    rows = [["#" if x in (0, width - 1) or y in (0, height - 1) else "." for x in range(width)] for y in range(height)]
    for i, w in enumerate(maze.get("walls") or []):
        x, y = pos(w, f"maze.walls[{i}]")
        rows[y][x] = "#"
    start = pos(maze.get("start"), "maze.start")
    goal = pos(maze.get("goal"), "maze.goal")

    def color(value: Any, field: str) -> str:
        c = str(value).lower() if isinstance(value, str) else value
        if c not in COLORS:
            raise BadInput(source, field, f"{value!r} is not one of {', '.join(COLORS)}")
        return c

    objects: list[dict[str, Any]] = []
    for i, k in enumerate(_items(mech, "keys", source)):
        f = f"mechanisms.keys[{i}]"
        objects.append({"id": _id(k, f, source), "kind": "key", "color": color(k.get("color"), f"{f}.color"),
                        "pos": list(pos(k.get("position"), f"{f}.position"))})
    for i, d in enumerate(_items(mech, "doors", source)):
        f = f"mechanisms.doors[{i}]"
        state = d.get("initial_state", "locked")
        if state not in DOOR_STATES:
            raise BadInput(source, f"{f}.initial_state", f"{state!r} is not one of locked, closed, open")
        shade = d.get("requires_key", d.get("color"))
        if shade is None and state == "locked":
            raise BadInput(source, f"{f}.requires_key", "a locked door needs the color of its key")
        objects.append({"id": _id(d, f, source), "kind": "door",
                        "color": color(shade if shade is not None else "grey", f"{f}.requires_key"),
                        "pos": list(pos(d.get("position"), f"{f}.position")), "state": DOOR_STATES[state]})
    gate_ids = []
    gate_states = {}
    for i, g in enumerate(_items(mech, "gates", source)):
        f = f"mechanisms.gates[{i}]"
        gid = _id(g, f, source)
        gate_ids.append(gid)
        gate_states[gid] = (g.get("initial_state", "closed"), f"{f}.initial_state")
        objects.append({"id": gid, "kind": "gate", "color": "grey", "pos": list(pos(g.get("position"), f"{f}.position"))})
    switches = []
    for i, s in enumerate(_items(mech, "switches", source)):
        f = f"mechanisms.switches[{i}]"
        kind = s.get("switch_type", "toggle")
        if kind != "toggle":
            raise BadInput(source, f"{f}.switch_type",
                           f"{kind!r} switches have no gridbench equivalent (only toggle switches convert)")
        state = s.get("initial_state", "off")
        if state not in ("on", "off"):
            raise BadInput(source, f"{f}.initial_state", f"{state!r} is not on or off")
        controls = s.get("controls") or []
        if not isinstance(controls, list):
            raise BadInput(source, f"{f}.controls", "must be a list of gate ids")
        sw = {"id": _id(s, f, source), "kind": "switch", "color": "grey",
              "pos": list(pos(s.get("position"), f"{f}.position")), "on": state == "on", "controls": list(controls)}
        switches.append(sw)
        objects.append(sw)
    # a gate takes the color of its first switch, so the pair reads as one mechanism
    palette = [c for c in COLORS if c != "grey"]
    gate_color: dict[str, str] = {}
    for j, sw in enumerate(switches):
        sw["color"] = palette[j % len(palette)]
        for gid in sw["controls"]:
            gate_color.setdefault(gid, sw["color"])
    for o in objects:
        if o["kind"] == "gate":
            o["color"] = gate_color.get(o["id"], "grey")
    # gridbench derives a gate's state from its switches: a file that says otherwise would change meaning
    for gid, (state, field) in gate_states.items():
        is_open = any(sw["on"] and gid in sw["controls"] for sw in switches)
        if state not in ("open", "closed"):
            raise BadInput(source, field, f"{state!r} is not open or closed")
        if (state == "open") != is_open:
            raise BadInput(source, field, f"gate {gid} is {state} but its switches make it "
                           f"{'open' if is_open else 'closed'}; in gridbench a gate is open exactly when a switch controlling it is on")

    rules = doc.get("rules") or {}
    consumed = bool(rules.get("key_consumption")) if isinstance(rules, dict) else False
    notes = []
    if consumed:
        notes.append("rules.key_consumption: keys are used up by their doors in MultiNet but never "
                     "in gridbench; the converted maze keeps every key after use")
    out = {
        "format": FORMAT,
        "id": maze_id,
        "grid": ["".join(r) for r in rows],
        "start": {"pos": list(start), "dir": "east"},
        "goal": list(goal),
        "objects": objects,
        "meta": {
            "category": "mechanism" if objects else "scale",
            "topology": "multinet",
            "chain": [],
            "distractors": [],
            "source": f"imported:multinet:{origin}" if origin else "imported:multinet",
            "generator": {},
            "multinet": {"key_consumption": consumed,
                         "note": "keys are never consumed in gridbench" if consumed else ""},
        },
    }
    m = maze_from_dict(out, source)
    return _with_chain(m, source), notes


def _with_chain(maze: Maze, source: str) -> Maze:
    """``meta.chain`` in the order the oracle's plan operates the mechanisms: a door with the
    key that unlocked it, a switch with the gates it opened that the plan then walks through."""
    from env.oracle import solve
    from env.state import initial_state, step

    sol = solve(maze)
    if sol.status != "solved" or not maze.objects:
        return maze
    chain: list[list[str]] = []
    state = initial_state(maze)
    pending: dict[str, list[str]] = {}
    for a in sol.plan:
        carried = state.carrying
        nxt, event = step(maze, state, a)
        if event == "door_unlocked":
            door = next(d for i, d in enumerate(maze.doors) if nxt.doors[i] != state.doors[i])
            chain.append([maze.keys[carried].id, door.id])
        elif event == "switch_on":
            sw = next(s for i, s in enumerate(maze.switches) if nxt.switches[i] != state.switches[i])
            if sw.id not in pending:
                pending[sw.id] = list(sw.controls)
                chain.append([sw.id])
        elif event in ("moved", "goal"):
            for step_ in chain:
                gates = pending.get(step_[0], [])
                for g in maze.gates:
                    if g.id in gates and tuple(g.pos) == nxt.pos and g.id not in step_:
                        step_.append(g.id)
        state = nxt
    d = maze.to_dict()
    d["meta"]["chain"] = chain
    return maze_from_dict(d, source)


def _section(doc: dict, name: str, source: str) -> dict:
    v = doc.get(name)
    if not isinstance(v, dict):
        raise BadInput(source, name, "is required (an object with dimensions, walls, start, goal)")
    return v


def _items(mech: dict, name: str, source: str) -> list[dict]:
    v = mech.get(name) or []
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise BadInput(source, f"mechanisms.{name}", "must be a list of objects")
    return v


def _id(obj: dict, field: str, source: str) -> str:
    v = obj.get("id")
    if not isinstance(v, str | int):
        raise BadInput(source, f"{field}.id", "is required")
    return str(v)
