"""Task files of the MultiNet v2.0 gridworld (the study's maze format), converted into
``gridbench.maze/1`` mazes under the ``multinet-r1`` ruleset, or for a file of the later harness
(one with a field only it has, ``Mechanic.later_fields`` and ``study_later``) ``multinet-pr57``
(docs/maze-format.md#rulesets). Each mechanic reads its own fields (``Mechanic.study_reads``).

Their format: ``maze.dimensions`` is ``[width, height]`` counting a border ring of walls that is
always wall; ``maze.walls`` lists walls as ``[x, y]`` (or ``{"x": .., "y": ..}``); ``maze.start``
and ``maze.goal`` are cells, and the agent always starts facing east. A nested ``maze.layout``
(walls, start, goal; mechanisms under ``maze`` too) is read as well. ``goal.target`` is the goal
when given (``goal.type: reach_position``), otherwise ``maze.goal``. ``mechanisms`` holds
``keys`` ``[{id, position, color}]``, ``doors`` ``[{id, position, requires_key, initial_state}]``,
``switches`` ``[{id, position, controls, switch_type, initial_state, color}]``, ``gates``
``[{id, position, initial_state}]``, ``blocks`` and ``hazards`` ``[{id, position}]``,
``teleporters`` ``[{id, position_a, position_b, bidirectional}]``, ``kill_cells`` and
``frozen_tiles`` (cells) with ``freeze_steps``; ``rules.key_consumption`` (default true). The
later harness adds ``death_portals`` (kill cells by another name), ``rotating_tiles`` with
``rotating_initial_directions`` (0 east, 1 south, 2 west, 3 north) and a ``color`` per teleporter.

Every field of the format is read or refused by name (``FIELDS``): a field gridbench does not know,
or a value it cannot play as the study played it (hidden mechanisms, a partial view, a goal with
extra conditions, a block that is pushed under the later harness), is one ``BadInput``, never a
maze that plays differently from the file. Descriptive fields (``description``, ``seed``,
``max_steps``, ...) change nothing in the game.

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
from env.maze import (
    COLORS,
    FORMAT,
    MULTINET_PR57,
    MULTINET_R1,
    SWITCH_COLORS,
    DoorObject,
    GateObject,
    Maze,
    maze_from_dict,
)
from env.mechanics import MECHANICS, later_fields, study_fields
from env.names import MAX_NAME, is_name, name_chars

Cell = tuple[int, int]
SWITCH_TYPES = ("toggle", "one_shot", "hold")

# Every field of the study's task format, by where it sits. A field not listed is refused by name.
# Labels (descriptive, never part of the game): the task id and its aliases ``id`` and ``name``,
# ``version``, ``seed``, ``difficulty_tier``, ``description``, ``metadata``, ``dependency_chain``
# and ``distractors`` (gridbench works its chain and decoys out from the oracle's plan), and
# ``max_steps`` (the study's step cap; gridbench's is the protocol's, a factor of the optimum).
FIELDS: dict[str, frozenset[str]] = {
    "": frozenset({"task_id", "id", "name", "version", "seed", "difficulty_tier", "description", "maze",
                   "mechanisms", "rules", "goal", "metadata", "max_steps", "dependency_chain", "distractors"}),
    "maze": frozenset({"dimensions", "walls", "start", "goal", "layout", "mechanisms"}),
    "maze.layout": frozenset({"walls", "start", "goal"}),
    "mechanisms": study_fields(),  # each mechanic names its own (env.mechanics)
    "rules": frozenset({"key_consumption", "switch_type", "hidden_mechanisms", "observability", "view_size"}),
    "goal": frozenset({"type", "goal_type", "target", "auxiliary_conditions"}),
    "keys": frozenset({"id", "position", "color"}),
    "doors": frozenset({"id", "position", "color", "requires_key", "initial_state"}),
    "switches": frozenset({"id", "position", "controls", "color", "switch_type", "initial_state"}),
    "gates": frozenset({"id", "position", "color", "initial_state"}),
    # and the fields of each later tile's entries, as its mechanic reads them
    **{name: fields for m in MECHANICS for name, fields in m.study_items.items()},
}
# what only the later harness's files hold: such a file is played under multinet-pr57
LATER_FIELDS = later_fields()
# the mechanics that read objects from a task file, in the order the files' objects are laid out
# (``Mechanic.study_rank``: blocks before hazards, as gridbench always laid them, so imported mazes
# keep their object order and checksums)
READERS = sorted((m for m in MECHANICS if m.study_reads is not None), key=lambda m: m.study_rank)


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


def import_study_file(text: str) -> Maze:
    """The maze of the MultiNet task file at ``text`` (see ``import_study_path`` for folders)."""
    return convert_file(Path(text))


def import_study_path(path: Path, provenance: Provenance | None = None, ruleset: str | None = None,
                         rules: dict[str, Any] | None = None) -> list[Maze]:
    """A task file, or every ``*.json`` under a folder (recursively, in path order). In a folder a
    maze is named after its path below the folder (``M1/8x8_corridor_kr_0.json`` ->
    ``M1_8x8_corridor_kr_0``): task ids repeat across the study's families. ``ruleset`` None: each
    file's own (``multinet-pr57`` when it holds any of ``LATER_FIELDS`` or a coloured teleporter);
    ``rules`` sets fields of every maze's ``rules`` (docs/maze-format.md#rulesets)."""
    if not path.is_dir():
        return [convert_file(path, provenance, ruleset=ruleset, rules=rules)]
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
        out.append(convert_file(p, prov, maze_id=_safe_id("_".join((*rel.parts[:-1], rel.stem))),
                                ruleset=ruleset, rules=rules))
    return out


def convert_file(path: Path, provenance: Provenance | None = None, maze_id: str | None = None,
                 ruleset: str | None = None, rules: dict[str, Any] | None = None) -> Maze:
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
    return convert(doc, source, maze_id or _maze_id(doc, path), origin=origin, provenance=provenance,
                   ruleset=ruleset, rules=rules)


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
    ruleset: str = MULTINET_R1
    default_switch: str = "toggle"  # rules.switch_type: a switch's kind where it names none
    width: int = 0
    height: int = 0
    walls: set[Cell] = field(default_factory=set)
    taken: dict[Cell, str] = field(default_factory=dict)  # cell -> the field of the object on it

    def bad(self, where: str, message: str) -> BadInput:
        return BadInput(self.source, where, message)

    def known(self, obj: dict, where: str, table: str) -> None:
        """Refuse, by name, the first field of ``obj`` that ``FIELDS[table]`` does not list."""
        for name in obj:
            if name not in FIELDS[table]:
                path = f"{where}.{name}" if where else str(name)
                raise self.bad(path, "is not a field of the study's task format that gridbench reads: "
                                     "refused rather than played as another maze")

    @property
    def later(self) -> bool:
        return self.ruleset == MULTINET_PR57

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
        for i, x in enumerate(v):
            self.known(x, f"mechanisms.{name}[{i}]", name)
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

    def flag(self, obj: dict, name: str, default: bool, where: str) -> bool:
        """A true/false field of an entry, ``default`` when left out."""
        v = obj.get(name, default)
        if not isinstance(v, bool):
            raise self.bad(f"{where}.{name}", "must be true or false")
        return v

    def ident(self, obj: dict, where: str) -> str:
        v = obj.get("id")
        if not isinstance(v, str | int) or isinstance(v, bool):
            raise self.bad(f"{where}.id", "is required")
        return str(v)


def convert(doc: Any, source: str, maze_id: str, origin: str = "",
            provenance: Provenance | None = None, ruleset: str | None = None, rules: dict[str, Any] | None = None) -> Maze:
    """The maze of a parsed task file, under ``ruleset`` (None: ``multinet-pr57`` for a file of the
    later harness, else ``multinet-r1``); ``BadInput`` naming the file's field for anything the
    study's format does not allow or gridbench does not read. ``origin`` (a file name or a path
    inside the source repository, never a local path) goes into ``meta.source``."""
    if not isinstance(doc, dict):
        raise BadInput(source, "(file)", "a MultiNet task file is a JSON object")
    r = _Reader(source, doc)
    r.known(doc, "", "")
    layout, mech = _layout(r)
    r.ruleset = ruleset or _ruleset_of(mech)
    if r.ruleset not in (MULTINET_R1, MULTINET_PR57):
        raise BadInput("--ruleset", "", f"{r.ruleset!r} is not one of {MULTINET_R1}, {MULTINET_PR57}")
    settings = _rules(r, mech, rules or {})
    start, goal = _grid(r, layout)
    r.taken = {goal: "goal"}  # the start may hold an object under the study's rules, the goal may not
    objects = [*_keys(r, mech), *_doors(r, mech), *_switches_and_gates(r, mech),
               *(o for m in READERS if m.study_reads is not None for o in m.study_reads(r, mech))]
    grid = ["".join("#" if (x, y) in r.walls else "." for x in range(r.width)) for y in range(r.height)]
    out = {
        "format": FORMAT, "id": maze_id, "ruleset": r.ruleset, **settings,
        "grid": grid, "start": {"pos": list(start), "dir": "east"}, "goal": list(goal),
        "objects": [{k: list(v) if isinstance(v, tuple) else v for k, v in o.items()} for o in objects],
        "meta": _meta(doc, objects, origin, provenance),
    }
    return _with_chain(maze_from_dict(out, source), source)


def _ruleset_of(mech: dict) -> str:
    """The later harness's rulebook for a file with its fields, else R1's."""
    later = any(name in mech for name in LATER_FIELDS) or any(
        m.study_later is not None and m.study_later(mech) for m in MECHANICS)
    return MULTINET_PR57 if later else MULTINET_R1


def _layout(r: _Reader) -> tuple[dict, dict]:
    """The layout section (``maze``, or its nested ``maze.layout``) and the mechanisms."""
    maze = r.doc.get("maze")
    if not isinstance(maze, dict):
        raise r.bad("maze", "is required (an object with dimensions, walls, start, goal)")
    r.known(maze, "maze", "maze")
    dims = maze.get("dimensions")
    if not (isinstance(dims, list) and len(dims) == 2 and all(isinstance(v, int) for v in dims)):
        raise r.bad("maze.dimensions", "must be [width, height]")
    if not (3 <= dims[0] <= 64 and 3 <= dims[1] <= 64):
        raise r.bad("maze.dimensions", f"{dims}: each side from 3 to 64 (the border ring included)")
    r.width, r.height = dims
    nested = maze.get("layout")
    layout: dict = nested if isinstance(nested, dict) else maze
    if layout is not maze:
        r.known(layout, "maze.layout", "maze.layout")
    mech = maze.get("mechanisms", r.doc.get("mechanisms")) if layout is not maze else r.doc.get("mechanisms")
    mech = mech or {}
    if not isinstance(mech, dict):
        raise r.bad("mechanisms", "must be an object")
    r.known(mech, "maze.mechanisms" if "mechanisms" in maze else "mechanisms", "mechanisms")
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
    r.known(goal_spec, "goal", "goal")
    if goal_spec.get("auxiliary_conditions"):
        raise r.bad("goal.auxiliary_conditions", "must be empty: gridbench's goal is reaching a cell, nothing more")
    if goal_spec.get("target"):
        goal = r.cell(goal_spec["target"], "goal.target")
        if layout.get("goal") is not None:  # read, and superseded: the harness scores goal.target
            r.cell(layout["goal"], f"{where}.goal")
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
        kind = s.get("switch_type", r.default_switch)
        if kind not in SWITCH_TYPES:
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


def _rules(r: _Reader, mech: dict, given: dict[str, Any]) -> dict[str, Any]:
    """``rules`` (and ``freeze_steps``); what the study's harness never played (hidden mechanisms,
    a partial view) is refused. ``view_size`` is read and changes nothing: the view is full."""
    rules = r.doc.get("rules") or {}
    if not isinstance(rules, dict):
        raise r.bad("rules", "must be an object")
    r.known(rules, "rules", "rules")
    if rules.get("hidden_mechanisms"):
        raise r.bad("rules.hidden_mechanisms", "must be empty: gridbench draws every mechanism")
    if rules.get("observability", "full") != "full":
        raise r.bad("rules.observability", f"{rules['observability']!r}: only full observability converts")
    view = rules.get("view_size", 7)
    if not isinstance(view, int) or isinstance(view, bool) or view < 1:
        raise r.bad("rules.view_size", "must be a whole number (it changes nothing under full observability)")
    r.default_switch = rules.get("switch_type", "toggle")
    if r.default_switch not in SWITCH_TYPES:
        raise r.bad("rules.switch_type", f"{r.default_switch!r} is not one of {', '.join(SWITCH_TYPES)}")
    consumption = rules.get("key_consumption", True)
    if not isinstance(consumption, bool):
        raise r.bad("rules.key_consumption", "must be true or false")
    out: dict[str, Any] = {"key_consumption": consumption}
    for m in MECHANICS:  # a mechanic's settings of the rulebook (the freeze's length)
        if m.study_rules is not None:
            out.update(m.study_rules(r, mech))
    return {"rules": {**out, **given}}  # what the importer was told for every maze, checked with the maze


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
        elif event in ("moved", "goal", "teleported", "rode", "froze"):
            for step_ in chain:
                gates = pending.get(step_[0], [])
                for g in maze.gates:
                    if g.id in gates and tuple(g.pos) == nxt.pos and g.id not in step_:
                        step_.append(g.id)
        state = nxt
    used = {oid for s in chain for oid in s}
    operable = [o for o in maze.objects if o.kind in ("key", "switch")
                or (isinstance(o, DoorObject) and o.state == "locked") or (isinstance(o, GateObject) and not o.open)]
    decoys = [o.id for o in operable if o.id not in used]
    d = maze.to_dict()
    d["meta"]["chain"] = chain
    d["meta"]["distractors"] = decoys
    if decoys:
        d["meta"]["category"] = "distractor"
    return maze_from_dict(d, source)
