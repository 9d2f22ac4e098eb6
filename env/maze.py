"""``gridbench.maze/1`` files: the typed record, validation, load and save (docs/design.md §2)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, Union, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from pydantic_core import ErrorDetails

from env.errors import BadInput, pydantic_field
from env.files import atomic_write
from env.mechanics import MECHANICS, covered_cells, kinds_only_in, of_kind
from env.mechanics.base import COLORS as COLORS
from env.mechanics.base import DIR_VECTORS as DIR_VECTORS  # re-exported: where callers have always found it
from env.mechanics.base import DIRECTIONS, Direction, Pos, Strict
from env.mechanics.key_door import DOOR_STATES as DOOR_STATES
from env.mechanics.key_door import DoorObject, KeyObject
from env.mechanics.switch_gate import SWITCH_COLORS as SWITCH_COLORS
from env.mechanics.switch_gate import GateObject, SwitchObject
from env.names import NAME_RULE, is_name
from env.rulesets import MINIGRID, MULTINET_PR57, MULTINET_R1, STUDY_RULESETS, Ruleset

FORMAT = "gridbench.maze/1"
# each list of values declared once, as the type the file's fields take; the tuple read off it
SkinName = Literal["classic", "neutral"]
# how objects are drawn and named (env.skins); the default is left out of the content and checksum
SKIN_NAMES: tuple[str, ...] = get_args(SkinName)
CLASSIC = SKIN_NAMES[0]
# every kind of object, in the order of the mechanics they make (env.mechanics); the kinds only the
# study's rulesets have (docs/maze-format.md#rulesets), and what only multinet-pr57 adds to them
KINDS = tuple(k for m in MECHANICS for k in m.kinds)
STUDY_KINDS = kinds_only_in(*STUDY_RULESETS)
PR57_KINDS = kinds_only_in(MULTINET_PR57)
R1_KINDS = tuple(k for k in STUDY_KINDS if k not in PR57_KINDS)
MAX_SIDE = 64



# the record class of every kind, each declared by its mechanic (``Mechanic.objects``)
_OBJECT_CLASSES = tuple(c for m in MECHANICS for c in m.objects)
if TYPE_CHECKING:  # the kinds a type checker sees by name; every other kind is read through its mechanic
    class _OtherObject(Protocol):
        id: str
        kind: str
        pos: Pos

        def __getattr__(self, name: str) -> Any: ...

    MazeObject = KeyObject | DoorObject | SwitchObject | GateObject | _OtherObject
else:
    MazeObject = Annotated[Union[_OBJECT_CLASSES], Field(discriminator="kind")]  # noqa: UP007 (a tuple of types)


# the settings of the study's rulebooks a mechanic declares (``Mechanic.settings``), in the record's order
SETTINGS = tuple(sorted((s for m in MECHANICS for s in m.settings), key=lambda s: s.rank))
if TYPE_CHECKING:
    class Rules(Strict):
        key_consumption: bool = True

        def __getattr__(self, name: str) -> Any: ...
else:
    # Per-maze settings of the study's rulebooks: a key used up by the door it opens, and each
    # mechanic's own
    Rules = create_model("Rules", __base__=Strict, key_consumption=(bool, True),
                         **{s.name: (s.annotation, s.default) for s in SETTINGS})


class Start(Strict):
    pos: Pos
    dir: Direction


class Meta(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, strict=True)

    category: Literal["scale", "mechanism", "distractor"] | None = None
    topology: str | None = None
    chain: tuple[tuple[str, ...], ...] = ()
    distractors: tuple[str, ...] = ()
    source: str | None = None
    generator: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source")
    @classmethod
    def _source(cls, v: str | None) -> str | None:
        if v is None or v in ("generated", "hand") or (v.startswith("imported:") and len(v) > 9):
            return v
        raise ValueError("must be 'generated', 'hand' or 'imported:<origin>'")

    @field_validator("distractors")
    @classmethod
    def _distractors(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for d in v:
            if d.startswith("deadend:") and not re.fullmatch(r"deadend:\d+", d):
                raise ValueError(f"{d!r}: dead ends are written 'deadend:N'")
        return v


class Maze(BaseModel):
    """A validated maze. Immutable; derived tables are computed once and cached."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    format: Literal["gridbench.maze/1"]
    id: str
    ruleset: Ruleset = "minigrid"
    rules: Rules | None = None  # the study's rulesets only; left out, the rulebook's defaults
    skin: SkinName = "classic"  # looks and words only (env.skins), never dynamics
    grid: tuple[str, ...]
    start: Start
    goal: Pos
    objects: tuple[MazeObject, ...] = ()
    meta: Meta | None = None

    # ---- derived, cached ------------------------------------------------------------
    @property
    def width(self) -> int:
        return len(self.grid[0])

    @property
    def height(self) -> int:
        return len(self.grid)

    @cached_property
    def walls(self) -> np.ndarray:
        """Boolean array indexed ``[x, y]``: True where the cell is a wall."""
        return np.array([[row[x] == "#" for row in self.grid] for x in range(self.width)], dtype=bool)

    @cached_property
    def keys(self) -> tuple[KeyObject, ...]:
        return tuple(o for o in self.objects if isinstance(o, KeyObject))

    @cached_property
    def doors(self) -> tuple[DoorObject, ...]:
        return tuple(o for o in self.objects if isinstance(o, DoorObject))

    @cached_property
    def switches(self) -> tuple[SwitchObject, ...]:
        return tuple(o for o in self.objects if isinstance(o, SwitchObject))

    @cached_property
    def gates(self) -> tuple[GateObject, ...]:
        return tuple(o for o in self.objects if isinstance(o, GateObject))

    @property
    def study_rules(self) -> bool:
        """Played under one of the study's rulebooks (``multinet-r1`` or ``multinet-pr57``)?"""
        return self.ruleset in STUDY_RULESETS

    @cached_property
    def by_id(self) -> dict[str, MazeObject]:
        return {o.id: o for o in self.objects}

    def cells_of(self, kind: str) -> frozenset[Pos]:
        """The cells holding objects of one kind (``covered_cells``: some cover two)."""
        cells = self._cells_by_kind.get(kind)
        return frozenset() if cells is None else cells

    @cached_property
    def _cells_by_kind(self) -> dict[str, frozenset[Pos]]:
        return {kind: frozenset(c for o in objs for c in covered_cells(o)) for kind, objs in self._by_kind.items()}

    def object_on(self, cell: Pos) -> MazeObject | None:
        """The object covering ``cell`` (one object per cell; None: none)."""
        return self._on.get(cell)

    @cached_property
    def _on(self) -> dict[Pos, MazeObject]:
        return {c: o for o in self.objects for c in covered_cells(o)}

    def of_kind(self, kind: str) -> tuple[MazeObject, ...]:
        """The objects of one kind, in the file's order."""
        return self._by_kind.get(kind, ())

    @cached_property
    def _by_kind(self) -> dict[str, tuple[MazeObject, ...]]:
        out: dict[str, list[MazeObject]] = {}
        for o in self.objects:
            out.setdefault(o.kind, []).append(o)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def solid_cells(self) -> frozenset[Pos]:
        """The cells nothing ever enters: those of the solid mechanics (env.mechanics: hazards, blocks)."""
        return frozenset().union(*(self.cells_of(k) for m in MECHANICS if m.solid for k in m.kinds))

    @cached_property
    def rulebook(self) -> Rules:
        """The multinet-r1 settings in force (the defaults when the file gives none)."""
        return self.rules or Rules()

    @cached_property
    def gate_switches(self) -> tuple[tuple[int, ...], ...]:
        """For each gate (in ``gates`` order) the indices of the switches controlling it."""
        return tuple(
            tuple(i for i, s in enumerate(self.switches) if g.id in s.controls) for g in self.gates
        )

    def gates_open(self, switches_on: tuple[bool, ...]) -> tuple[bool, ...]:
        """A gate is open exactly when it started open (multinet-r1 only) or at least one switch
        controlling it is on."""
        return tuple(g.open or any(switches_on[i] for i in sw)
                     for g, sw in zip(self.gates, self.gate_switches, strict=True))

    @property
    def start_dir(self) -> int:
        return DIRECTIONS.index(self.start.dir)

    @property
    def category(self) -> str:
        return (self.meta.category if self.meta and self.meta.category else "") or infer_category(self)

    def to_dict(self) -> dict[str, Any]:
        """The content as JSON data. What only multinet-r1 has is left out at its default, and so
        is the classic skin, so a minigrid maze has the content (and the checksum) it had before
        rulesets and skins existed."""
        d = self.model_dump(mode="json", exclude_none=False)
        if d["ruleset"] == MINIGRID:
            del d["ruleset"]
        if d["skin"] == CLASSIC:
            del d["skin"]
        if d["rules"] is None:
            del d["rules"]
        else:
            for s in SETTINGS:
                if s.omitted_at_default and d["rules"][s.name] == Rules.model_fields[s.name].default:
                    del d["rules"][s.name]
        for o in d["objects"]:
            if o["kind"] == "switch":
                o["controls"] = list(o["controls"])
                if o["switch_type"] == "toggle":
                    del o["switch_type"]
            elif o["kind"] == "gate" and not o["open"]:
                del o["open"]
        if d["meta"] is None:
            del d["meta"]
        else:
            d["meta"] = {k: v for k, v in d["meta"].items() if v is not None}
        return d

    def to_json(self) -> str:
        """Canonical text: one grid row, one object, one meta field per line; leaves compact."""
        d = self.to_dict()

        def compact(v: Any) -> str:
            return json.dumps(v, separators=(", ", ": "))

        rows = ",\n           ".join(json.dumps(r) for r in d["grid"])
        lines = [
            f'  "format": {compact(d["format"])}',
            f'  "id": {compact(d["id"])}',
            *(f'  "{k}": {compact(d[k])}' for k in ("ruleset", "rules", "skin") if k in d),
            f'  "grid": [{rows}]',
            f'  "start": {compact(d["start"])}',
            f'  "goal": {compact(d["goal"])}',
        ]
        objs = ",\n".join(f"    {compact(o)}" for o in d["objects"])
        lines.append(f'  "objects": [\n{objs}\n  ]' if objs else '  "objects": []')
        if "meta" in d:
            meta = ",\n".join(f"    {compact(k)}: {compact(v)}" for k, v in d["meta"].items())
            lines.append(f'  "meta": {{\n{meta}\n  }}')
        return "{\n" + ",\n".join(lines) + "\n}\n"

    def __hash__(self) -> int:
        return hash(self.checksum)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Maze) and other.checksum == self.checksum

    @cached_property
    def checksum(self) -> str:
        """sha256 of the canonical content (independent of whitespace in the file)."""
        canon = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()


def infer_category(maze: Maze) -> str:
    if not maze.objects:
        return "scale"
    meta = maze.meta
    if meta and meta.distractors:
        return "distractor"
    return "mechanism"


def _check_rules(m: Maze) -> None:
    """Every rule of docs/design.md §2 that the types alone cannot express.

    Raises ``BadInput`` with an empty source; callers fill in the file name.
    """
    if not is_name(m.id):
        raise _bad("id", f"{m.id!r} is not a safe file name ({NAME_RULE})")
    _check_grid(m.grid)
    _floor(m, "start.pos", m.start.pos)
    _floor(m, "goal", m.goal)
    if m.start.pos == m.goal:
        raise _bad("goal", "the start and the goal must be two distinct cells")
    r1 = m.study_rules
    if m.rules is not None and not r1:
        raise _bad("rules", f"exists only under rulesets {MULTINET_R1!r} and {MULTINET_PR57!r} "
                            f"(this maze's ruleset is {m.ruleset!r})")
    for s in SETTINGS:
        if (m.rules is not None and s.rulesets is not None and m.ruleset not in s.rulesets
                and getattr(m.rules, s.name) != Rules.model_fields[s.name].default):
            raise _bad(f"rules.{s.name}", f"exists only under ruleset {', '.join(map(repr, s.rulesets))} "
                                          f"(this maze's ruleset is {m.ruleset!r})")
    if r1 and m.start.dir != "east":
        raise _bad("start.dir", f"under ruleset {m.ruleset!r} the agent always starts facing east, "
                                f"got {m.start.dir!r}")
    ids = _check_objects(m)
    if m.meta is not None:
        _check_meta(m.meta, ids)


def _bad(field: str, msg: str) -> BadInput:
    return BadInput("", field, msg)


def _check_grid(grid: tuple[str, ...]) -> None:
    if len(grid) < 3:
        raise _bad("grid", f"needs at least 3 rows, has {len(grid)}")
    width = len(grid[0])
    if width < 3:
        raise _bad("grid", f"rows need at least 3 cells, row 0 has {width}")
    if width > MAX_SIDE or len(grid) > MAX_SIDE:
        raise _bad("grid", f"at most {MAX_SIDE}x{MAX_SIDE} cells, got {width}x{len(grid)}")
    for y, row in enumerate(grid):
        if len(row) != width:
            raise _bad(f"grid[{y}]", f"has {len(row)} cells, row 0 has {width}: all rows must be the same length")
        bad_chars = sorted(set(row) - {"#", "."})
        if bad_chars:
            raise _bad(f"grid[{y}]", f"unknown cell {bad_chars[0]!r}: only '#' (wall) and '.' (floor)")
        if y in (0, len(grid) - 1) and set(row) != {"#"}:
            raise _bad(f"grid[{y}]", "the outer ring must be wall")
        if row[0] != "#" or row[-1] != "#":
            raise _bad(f"grid[{y}]", "the outer ring must be wall")


def _floor(m: Maze, field: str, p: Pos) -> None:
    x, y = p
    width, height = len(m.grid[0]), len(m.grid)
    if not (0 <= x < width and 0 <= y < height):
        raise _bad(field, f"{list(p)} is outside the {width}x{height} grid")
    if m.grid[y][x] != ".":
        raise _bad(field, f"{list(p)} is a wall, not a floor cell")


def _check_objects(m: Maze) -> dict[str, int]:
    """Each object's id, its ruleset's fields and its cells (one object per floor cell, neither
    the goal nor, under ``minigrid``, the start); returns object id -> index."""
    r1 = m.study_rules
    seen_ids: dict[str, int] = {}
    cells: dict[Pos, str] = {}
    gate_ids = {o.id for o in m.objects if o.kind == "gate"}

    def place(field: str, o: MazeObject, p: Pos) -> None:
        _floor(m, field, p)
        if p == m.start.pos and not r1:  # the study's mazes put objects on the start cell
            raise _bad(field, f"{list(p)} is the start cell")
        if p == m.goal:
            raise _bad(field, f"{list(p)} is the goal cell")
        if p in cells:
            raise _bad(field, f"{list(p)} already holds {cells[p]!r}: one object per cell")
        cells[p] = o.id

    for i, o in enumerate(m.objects):
        f = f"objects[{i}]"
        if not is_name(o.id):
            raise _bad(f"{f}.id", f"{o.id!r} is not a valid id ({NAME_RULE})")
        if o.id in seen_ids:
            raise _bad(f"{f}.id", f"{o.id!r} is used twice (also objects[{seen_ids[o.id]}])")
        seen_ids[o.id] = i
        only_r1 = _r1_only_field(o)
        if only_r1 and not r1:
            value = getattr(o, only_r1)
            raise _bad(f"{f}.{only_r1}", f"{json.dumps(value)} exists only under rulesets {MULTINET_R1!r} and "
                                         f"{MULTINET_PR57!r} (this maze's ruleset is {m.ruleset!r})")
        if o.kind in PR57_KINDS and m.ruleset != MULTINET_PR57:
            raise _bad(f"{f}.kind", f"{json.dumps(o.kind)} exists only under ruleset {MULTINET_PR57!r} "
                                    f"(this maze's ruleset is {m.ruleset!r})")
        if r1 and isinstance(o, DoorObject) and o.state == "closed":
            raise _bad(f"{f}.state", f"under ruleset {m.ruleset!r} a door is 'locked' or 'open' "
                                     "(a door that is not locked is open from the start)")
        for name, cell in zip(("pos", *of_kind(o.kind).more_cells), covered_cells(o), strict=True):
            place(f"{f}.{name}", o, cell)
        if isinstance(o, SwitchObject):
            for j, c in enumerate(o.controls):
                if c not in gate_ids:
                    raise _bad(f"{f}.controls[{j}]", f"{c!r} is not the id of a gate")
            if len(set(o.controls)) != len(o.controls):
                raise _bad(f"{f}.controls", "lists a gate twice")
    return seen_ids


def _check_meta(meta: Meta, ids: dict[str, int]) -> None:
    for i, step in enumerate(meta.chain):
        if not step:
            raise _bad(f"meta.chain[{i}]", "is empty")
        for j, oid in enumerate(step):
            if oid not in ids:
                raise _bad(f"meta.chain[{i}][{j}]", f"{oid!r} is not the id of an object")
    for i, d in enumerate(meta.distractors):
        if not d.startswith("deadend:") and d not in ids:
            raise _bad(f"meta.distractors[{i}]", f"{d!r} is neither an object id nor 'deadend:N'")


def _r1_only_field(o: MazeObject) -> str | None:
    """The field of ``o`` that only the multinet-r1 ruleset has, if any."""
    if o.kind in R1_KINDS:
        return "kind"
    if isinstance(o, SwitchObject) and o.switch_type != "toggle":
        return "switch_type"
    if isinstance(o, GateObject) and o.open:
        return "open"
    return None


_JSON_TYPES = {
    "tuple_type": "a JSON list",
    "list_type": "a JSON list",
    "dict_type": "a JSON object",
    "model_type": "a JSON object",
    "model_attributes_type": "a JSON object",
    "bool_type": "true or false",
    "int_type": "an integer",
    "string_type": "a string",
}


def _got(value: Any) -> str:
    """The offending value as JSON, shortened so the message stays one readable line."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_error_message(err: ErrorDetails) -> str:
    """Pydantic's error, said in the words of the JSON file."""
    typ = err.get("type", "")
    loc = [str(part) for part in err.get("loc", ())]
    if typ == "extra_forbidden":
        return "unknown field"
    if _short_position(err):
        return f"must be [x, y] (two integers), got {_got(err.get('input'))}"
    if typ == "missing":
        return "is required"
    if typ == "union_tag_invalid":
        return f"{_got(err.get('ctx', {}).get('tag'))} is not one of {', '.join(KINDS)}"
    if typ == "union_tag_not_found":
        return f"is required (one of {', '.join(KINDS)})"
    if typ == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"{_got(err.get('input'))} is not one of {expected}"
    if typ in ("too_short", "too_long") and loc and loc[-1] in ("pos", "goal", "to"):
        return f"must be [x, y] (two integers), got {_got(err.get('input'))}"
    if typ in _JSON_TYPES:
        return f"must be {_JSON_TYPES[typ]}, got {_got(err.get('input'))}"
    if typ == "value_error":
        return str(err.get("ctx", {}).get("error", err.get("msg", "invalid")))
    return str(err.get("msg", "invalid"))


def _short_position(err: ErrorDetails) -> bool:
    """``[3]`` for a position: pydantic reports the missing y, the file's author meant the pair."""
    loc = err.get("loc", ())
    return err.get("type") == "missing" and len(loc) >= 2 and isinstance(loc[-1], int) and loc[-2] in ("pos", "goal", "to")


def _error_field(err: ErrorDetails) -> str:
    field = pydantic_field(err["loc"][:-1] if _short_position(err) else err["loc"])
    if err.get("type") in ("union_tag_invalid", "union_tag_not_found"):
        field += ".kind"
    return field


def maze_from_dict(data: Any, source: str = "<maze>") -> Maze:
    """Validate a parsed maze document; raise ``BadInput`` naming the field on any broken rule."""
    if not isinstance(data, dict):
        raise BadInput(source, "(file)", f"a maze file is a JSON object, not {type(data).__name__}")
    fmt = data.get("format")
    if fmt != FORMAT:
        raise BadInput(source, "format", f"must be {FORMAT!r}, got {fmt!r}")
    # JSON has no tuples; strict mode wants them for positions. Lists are converted here only.
    try:
        maze = Maze.model_validate(_tuplify(data))
    except ValidationError as e:
        err = e.errors()[0]
        raise BadInput(source, _error_field(err), _type_error_message(err)) from None
    try:
        _check_rules(maze)
    except BadInput as e:
        raise BadInput(source, e.field, e.message) from None
    return maze


def _tuplify(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_tuplify(x) for x in v)
    if isinstance(v, dict):
        # meta.generator is free-form; keep it as plain JSON
        return {k: (x if k == "generator" else _tuplify(x)) for k, x in v.items()}
    return v


def load_maze(path: str | os.PathLike) -> Maze:
    """Load and validate one maze file. Errors name the file and the field."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(str(path), "", "no such maze file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(str(path), "(file)", f"not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise BadInput(str(path), "", f"cannot read: {e.strerror or e.__class__.__name__}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(str(path), "(file)", f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    return maze_from_dict(data, str(path))


def save_maze(maze: Maze, path: str | os.PathLike) -> Path:
    """Write the canonical text atomically (``env.files.atomic_write``)."""
    return atomic_write(path, maze.to_json())
