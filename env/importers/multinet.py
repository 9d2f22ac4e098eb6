"""Task files of the MultiNet v2.0 gridworld (the study's maze format), converted into
``gridbench.maze/1`` mazes under the ``multinet-r1`` ruleset (docs/maze-format.md#rulesets).

Their format: ``maze.dimensions`` is ``[width, height]`` counting a border ring of walls that is
always wall; ``maze.walls`` lists walls as ``[x, y]`` (or ``{"x": .., "y": ..}``); ``maze.start``
and ``maze.goal`` are cells, and the agent always starts facing east. A nested ``maze.layout``
(walls, start, goal; mechanisms under ``maze`` too) is read as well. ``goal.target`` is the goal
when given (``goal.type: reach_position``), otherwise ``maze.goal``. ``mechanisms`` holds
``keys`` ``[{id, position, color}]``, ``doors`` ``[{id, position, requires_key, initial_state}]``,
``switches`` ``[{id, position, controls, switch_type, initial_state, color}]``, ``gates``
``[{id, position, initial_state}]``, ``blocks`` and ``hazards`` ``[{id, position}]``,
``teleporters`` ``[{id, position_a, position_b, bidirectional}]``, ``kill_cells`` and
``frozen_tiles`` (cells) with ``freeze_steps``; ``rules.key_consumption`` (default true).

Every mechanism converts. What is drawn follows the study's renderer: a door in the colour of
the key it needs (its own ``color`` field is never drawn), gates grey, switches in their own
colour. Nothing the rules ignore is kept beyond ``meta.multinet`` (the task id and the file's
labels) and, when given, ``meta.provenance`` (repository, path, commit, licence).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from env.errors import BadInput
from env.maze import COLORS, FORMAT, MULTINET_R1, SWITCH_COLORS, Maze, maze_from_dict
from env.names import MAX_NAME, is_name, name_chars

Cell = tuple[int, int]
TELEPORTER_COLOR = "purple"  # the study's teleporter colour


@dataclass
class Provenance:
    """Where a task file came from, recorded in ``meta.provenance`` when anything is known."""

    repository: str | None = None
    path: str | None = None
    commit: str | None = None
    licence: str | None = None
    reconstructed: bool | None = None
    note: str | None = None

    def record(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def import_multinet(text: str) -> Maze:
    """The maze of the MultiNet task file at ``text`` (see ``import_multinet_path`` for folders)."""
    return convert_file(Path(text))


def import_multinet_path(path: Path, provenance: Provenance | None = None) -> list[Maze]:
    """A task file, or every ``*.json`` under a folder (recursively, in path order). In a folder a
    maze is named after its path below the folder (``M1/8x8_corridor_kr_0.json`` ->
    ``M1_8x8_corridor_kr_0``): task ids repeat across the study's families."""
    if not path.is_dir():
        return [convert_file(path, provenance)]
    files = sorted(p for p in path.rglob("*.json") if p.is_file())
    if not files:
        raise BadInput(f"multinet:{path}", "", "folder holds no task files (*.json)")
    out = []
    for p in files:
        rel = p.relative_to(path)
        prov = None
        if provenance is not None:
            inner = "/".join(rel.parts)
            prov = Provenance(**{**provenance.__dict__,
                                 "path": f"{provenance.path.rstrip('/')}/{inner}" if provenance.path else inner})
        out.append(convert_file(p, prov, maze_id=_safe_id("_".join((*rel.parts[:-1], rel.stem)))))
    return out


def convert_file(path: Path, provenance: Provenance | None = None, maze_id: str | None = None) -> Maze:
    source = f"multinet:{path}"
    if not path.is_file():
        raise BadInput(source, "", "no such file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(source, "", f"cannot read: {e.__class__.__name__}") from None
    except json.JSONDecodeError as e:
        raise BadInput(source, "(file)", f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    origin = provenance.path if provenance and provenance.path else path.name
    return convert(doc, source, maze_id or _maze_id(doc, path), origin=origin, provenance=provenance)


def _maze_id(doc: Any, path: Path) -> str:
    for key in ("id", "task_id", "name"):
        v = doc.get(key) if isinstance(doc, dict) else None
        if is_name(v):
            return v
    return _safe_id(path.stem)


def _safe_id(text: str) -> str:
    return name_chars(text)[:MAX_NAME].strip("-.") or "multinet"


# ---- reading one task file -------------------------------------------------------------------

@dataclass
class _Reader:
    """The parts of one task file, read field by field; every error names the file's field."""

    source: str
    doc: dict[str, Any]
    width: int = 0
    height: int = 0
    walls: set[Cell] = field(default_factory=set)
    taken: dict[Cell, str] = field(default_factory=dict)  # cell -> the field of the object on it

    def bad(self, where: str, message: str) -> BadInput:
        return BadInput(self.source, where, message)

    def cell(self, value: Any, where: str) -> Cell:
        """A position inside the border ring: ``[x, y]`` or ``{"x": x, "y": y}``."""
        if isinstance(value, dict) and set(value) >= {"x", "y"}:
            value = [value["x"], value["y"]]
        if not (isinstance(value, list) and len(value) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise self.bad(where, f"must be [x, y], got {json.dumps(value)[:40]}")
        x, y = value
        if not (0 < x < self.width - 1 and 0 < y < self.height - 1):
            raise self.bad(where, f"{value} is not inside the {self.width}x{self.height} border ring")
        return x, y

    def place(self, value: Any, where: str) -> Cell:
        """The cell of an object: a floor cell no other object holds."""
        c = self.cell(value, where)
        if c in self.walls:
            raise self.bad(where, f"{list(c)} is a wall")
        if self.taken.get(c) in ("start", "goal"):
            raise self.bad(where, f"{list(c)} is the {self.taken[c]} cell: gridbench keeps objects off it")
        if c in self.taken:
            raise self.bad(where, f"{list(c)} already holds {self.taken[c]}: one object per cell")
        self.taken[c] = where
        return c

    def items(self, mech: dict, name: str) -> list[dict]:
        v = mech.get(name) or []
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise self.bad(f"mechanisms.{name}", "must be a list of objects")
        return v

    def cells(self, mech: dict, name: str) -> list[Any]:
        v = mech.get(name) or []
        if not isinstance(v, list):
            raise self.bad(f"mechanisms.{name}", "must be a list of cells")
        return v

    def color(self, value: Any, where: str, palette: tuple[str, ...] = COLORS) -> str:
        c = value.lower() if isinstance(value, str) else value
        c = "grey" if c == "gray" else c
        if c not in palette:
            raise self.bad(where, f"{value!r} is not one of {', '.join(palette)}")
        return c

    def ident(self, obj: dict, where: str) -> str:
        v = obj.get("id")
        if not isinstance(v, str | int) or isinstance(v, bool):
            raise self.bad(f"{where}.id", "is required")
        return str(v)


def convert(doc: Any, source: str, maze_id: str, origin: str = "",
            provenance: Provenance | None = None) -> Maze:
    """The ``multinet-r1`` maze of a parsed task file; ``BadInput`` naming the file's field for
    anything the study's format does not allow. ``origin`` (a file name or a path inside the
    source repository, never a local path) goes into ``meta.source``."""
    if not isinstance(doc, dict):
        raise BadInput(source, "(file)", "a MultiNet task file is a JSON object")
    r = _Reader(source, doc)
    layout, mech = _layout(r)
    start, goal = _grid(r, layout)
    r.taken = {goal: "goal"}  # the start may hold an object under multinet-r1, the goal may not
    objects = [*_keys(r, mech), *_doors(r, mech), *_switches_and_gates(r, mech), *_teleporters(r, mech),
               *_solid(r, mech), *_cell_kinds(r, mech)]
    grid = ["".join("#" if (x, y) in r.walls else "." for x in range(r.width)) for y in range(r.height)]
    out = {
        "format": FORMAT, "id": maze_id, "ruleset": MULTINET_R1, **_rules(r, mech),
        "grid": grid, "start": {"pos": list(start), "dir": "east"}, "goal": list(goal),
        "objects": [{k: list(v) if isinstance(v, tuple) else v for k, v in o.items()} for o in objects],
        "meta": _meta(doc, objects, origin, provenance),
    }
    return _with_chain(maze_from_dict(out, source), source)


def _layout(r: _Reader) -> tuple[dict, dict]:
    """The layout section (``maze``, or its nested ``maze.layout``) and the mechanisms."""
    maze = r.doc.get("maze")
    if not isinstance(maze, dict):
        raise r.bad("maze", "is required (an object with dimensions, walls, start, goal)")
    dims = maze.get("dimensions")
    if not (isinstance(dims, list) and len(dims) == 2 and all(isinstance(v, int) for v in dims)):
        raise r.bad("maze.dimensions", "must be [width, height]")
    if not (3 <= dims[0] <= 64 and 3 <= dims[1] <= 64):
        raise r.bad("maze.dimensions", f"{dims}: each side from 3 to 64 (the border ring included)")
    r.width, r.height = dims
    nested = maze.get("layout")
    layout: dict = nested if isinstance(nested, dict) else maze
    mech = maze.get("mechanisms", r.doc.get("mechanisms")) if layout is not maze else r.doc.get("mechanisms")
    mech = mech or {}
    if not isinstance(mech, dict):
        raise r.bad("mechanisms", "must be an object")
    return layout, mech


def _grid(r: _Reader, layout: dict) -> tuple[Cell, Cell]:
    """The walls (listed ones and the ring), the start, and the goal the rules test."""
    where = "maze.layout" if layout is not r.doc["maze"] else "maze"
    r.walls = {(x, y) for x in range(r.width) for y in range(r.height)
               if x in (0, r.width - 1) or y in (0, r.height - 1)}
    walls = layout.get("walls") or []
    if not isinstance(walls, list):
        raise r.bad(f"{where}.walls", "must be a list of cells")
    for i, w in enumerate(walls):
        if isinstance(w, list | dict) and _on_ring(r, w):
            continue  # the ring is wall whatever the file says
        r.walls.add(r.cell(w, f"{where}.walls[{i}]"))
    start = r.cell(layout.get("start"), f"{where}.start")
    goal_spec = r.doc.get("goal") or {}
    if not isinstance(goal_spec, dict):
        raise r.bad("goal", "must be an object")
    kind = goal_spec.get("type", goal_spec.get("goal_type", "reach_position"))
    if kind != "reach_position":
        raise r.bad("goal.type", f"{kind!r}: only reach_position goals convert (gridbench's goal is a cell)")
    if goal_spec.get("target"):
        goal = r.cell(goal_spec["target"], "goal.target")
    else:
        goal = r.cell(layout.get("goal"), f"{where}.goal")
    for name, c in (("start", start), ("goal", goal)):
        if c in r.walls:
            raise r.bad(f"{where}.{name}" if name == "start" or not goal_spec.get("target") else "goal.target",
                        f"{list(c)} is a wall")
    if start == goal:
        raise r.bad("goal.target" if goal_spec.get("target") else f"{where}.goal", "is the start cell")
    return start, goal


def _on_ring(r: _Reader, w: Any) -> bool:
    v = [w["x"], w["y"]] if isinstance(w, dict) and set(w) >= {"x", "y"} else w
    return (isinstance(v, list) and len(v) == 2 and all(isinstance(a, int) for a in v)
            and (v[0] in (0, r.width - 1) or v[1] in (0, r.height - 1))
            and 0 <= v[0] < r.width and 0 <= v[1] < r.height)


def _keys(r: _Reader, mech: dict) -> list[dict]:
    out = []
    for i, k in enumerate(r.items(mech, "keys")):
        f = f"mechanisms.keys[{i}]"
        out.append({"id": r.ident(k, f), "kind": "key", "color": r.color(k.get("color"), f"{f}.color"),
                    "pos": r.place(k.get("position"), f"{f}.position")})
    return out


def _doors(r: _Reader, mech: dict) -> list[dict]:
    """A door opens for the key whose colour is its ``requires_key``, and is drawn in that colour;
    any ``initial_state`` other than locked means open from the start."""
    out = []
    for i, d in enumerate(r.items(mech, "doors")):
        f = f"mechanisms.doors[{i}]"
        if "requires_key" not in d:
            raise r.bad(f"{f}.requires_key", "is required (the colour of the key that opens the door)")
        state = d.get("initial_state", "locked")
        if not isinstance(state, str):
            raise r.bad(f"{f}.initial_state", f"must be a string, got {json.dumps(state)}")
        out.append({"id": r.ident(d, f), "kind": "door", "color": r.color(d["requires_key"], f"{f}.requires_key"),
                    "pos": r.place(d.get("position"), f"{f}.position"),
                    "state": "locked" if state == "locked" else "open"})
    return out


def _switches_and_gates(r: _Reader, mech: dict) -> list[dict]:
    gates = []
    for i, g in enumerate(r.items(mech, "gates")):
        f = f"mechanisms.gates[{i}]"
        state = g.get("initial_state", "closed")
        if state not in ("open", "closed"):
            raise r.bad(f"{f}.initial_state", f"{state!r} is not open or closed")
        gate: dict[str, Any] = {"id": r.ident(g, f), "kind": "gate", "color": "grey",
                "pos": r.place(g.get("position"), f"{f}.position")}
        if state == "open":
            gate["open"] = True
        gates.append(gate)
    gate_ids = {g["id"] for g in gates}
    switches = []
    for i, s in enumerate(r.items(mech, "switches")):
        f = f"mechanisms.switches[{i}]"
        kind = s.get("switch_type", "toggle")
        if kind not in ("toggle", "one_shot", "hold"):
            raise r.bad(f"{f}.switch_type", f"{kind!r} is not one of toggle, one_shot, hold")
        state = s.get("initial_state", "off")
        if state not in ("on", "off"):
            raise r.bad(f"{f}.initial_state", f"{state!r} is not on or off")
        controls = s.get("controls") or []
        if not isinstance(controls, list):
            raise r.bad(f"{f}.controls", "must be a list of gate ids")
        for j, c in enumerate(controls):
            if str(c) not in gate_ids:
                raise r.bad(f"{f}.controls[{j}]", f"{c!r} is not the id of a gate")
        sw = {"id": r.ident(s, f), "kind": "switch",
              "color": r.color(s.get("color", "yellow"), f"{f}.color", SWITCH_COLORS),
              "pos": r.place(s.get("position"), f"{f}.position"), "on": state == "on",
              "controls": [str(c) for c in controls]}
        if kind != "toggle":
            sw["switch_type"] = kind
        switches.append(sw)
    return [*gates, *switches]


def _teleporters(r: _Reader, mech: dict) -> list[dict]:
    out = []
    for i, t in enumerate(r.items(mech, "teleporters")):
        f = f"mechanisms.teleporters[{i}]"
        two_way = t.get("bidirectional", True)
        if not isinstance(two_way, bool):
            raise r.bad(f"{f}.bidirectional", "must be true or false")
        out.append({"id": r.ident(t, f), "kind": "teleporter", "color": TELEPORTER_COLOR,
                    "pos": r.place(t.get("position_a"), f"{f}.position_a"),
                    "to": r.place(t.get("position_b"), f"{f}.position_b"), "bidirectional": two_way})
    return out


def _solid(r: _Reader, mech: dict) -> list[dict]:
    """Blocks (drawn in their colour; never pushed, whatever ``pushable`` says) and hazards."""
    out = []
    for i, b in enumerate(r.items(mech, "blocks")):
        f = f"mechanisms.blocks[{i}]"
        out.append({"id": r.ident(b, f), "kind": "block", "color": r.color(b.get("color", "grey"), f"{f}.color"),
                    "pos": r.place(b.get("position"), f"{f}.position")})
    for i, h in enumerate(r.items(mech, "hazards")):
        f = f"mechanisms.hazards[{i}]"
        out.append({"id": r.ident(h, f), "kind": "hazard", "pos": r.place(h.get("position"), f"{f}.position")})
    return out


def _cell_kinds(r: _Reader, mech: dict) -> list[dict]:
    """Kill cells and frozen tiles: cells without ids in the file; named here by kind and index."""
    out = []
    for name, kind in (("kill_cells", "kill"), ("frozen_tiles", "frozen")):
        for i, c in enumerate(r.cells(mech, name)):
            f = f"mechanisms.{name}[{i}]"
            out.append({"id": f"{kind}{i}", "kind": kind, "pos": r.place(c, f)})
    return out


def _rules(r: _Reader, mech: dict) -> dict[str, Any]:
    rules = r.doc.get("rules") or {}
    if not isinstance(rules, dict):
        raise r.bad("rules", "must be an object")
    consumption = rules.get("key_consumption", True)
    if not isinstance(consumption, bool):
        raise r.bad("rules.key_consumption", "must be true or false")
    out: dict[str, Any] = {"key_consumption": consumption}
    if mech.get("frozen_tiles"):
        steps = mech.get("freeze_steps", 5)
        if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 1000:
            raise r.bad("mechanisms.freeze_steps", "must be a whole number from 1 to 1000")
        out["freeze_steps"] = steps
    return {"rules": out}


def _meta(doc: dict, objects: list[dict], origin: str, provenance: Provenance | None) -> dict[str, Any]:
    labels = {k: doc[k] for k in ("task_id", "difficulty_tier", "metadata") if k in doc}
    meta: dict[str, Any] = {
        "category": "mechanism" if objects else "scale",
        "topology": "multinet",
        "chain": [],
        "distractors": [],
        "source": f"imported:multinet:{origin}" if origin else "imported:multinet",
        "generator": {},
        "multinet": labels,
    }
    if provenance is not None and provenance.record():
        meta["provenance"] = provenance.record()
    return meta


def _with_chain(maze: Maze, source: str) -> Maze:
    """``meta.chain`` in the order the oracle's plan operates the mechanisms (a door with the key
    that unlocked it, a switch with the gates it opened that the plan then walks through), and
    ``meta.distractors``: the keys, doors, switches and gates the plan never uses. With any of
    those the category is ``distractor``."""
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
        elif event in ("moved", "goal", "teleported"):
            for step_ in chain:
                gates = pending.get(step_[0], [])
                for g in maze.gates:
                    if g.id in gates and tuple(g.pos) == nxt.pos and g.id not in step_:
                        step_.append(g.id)
        state = nxt
    used = {oid for s in chain for oid in s}
    operable = [o for o in maze.objects if o.kind in ("key", "switch")
                or (o.kind == "door" and o.state == "locked") or (o.kind == "gate" and not o.open)]
    decoys = [o.id for o in operable if o.id not in used]
    d = maze.to_dict()
    d["meta"]["chain"] = chain
    d["meta"]["distractors"] = decoys
    if decoys:
        d["meta"]["category"] = "distractor"
    return maze_from_dict(d, source)
