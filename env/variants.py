"""Maze variants: from any maze, a twin that changes one thing, recorded (docs/variants.md).

A variant is a maze whose ``meta.variant`` says what it is: its ``kind``, the ``params`` that
made it, what ``changed`` (in words), the ``family`` of the change, and the maze it is the twin of
(``twin_of``, ``twin_of_checksum``). Its id is the source's id and the variant's name
(``p0037.mirror-tb``, ``p0037.recolor-s7``), so the same source, kind and parameters always give
the same id. Families:

- ``isomorphic``: rotations, mirrors and a colour permutation that change no count under the
  maze's ruleset; ``near-isomorphic`` the same transformations where the ruleset makes them
  inexact (under ``multinet-r1`` the agent always starts facing east, so a rotation or a
  left-right mirror turns the start relative to the layout);
- ``reskin``: the maze in another skin (``env.skins``), dynamics untouched;
- ``ablation``: a mechanism removed (every switch and gate, every key and door, the distractors,
  one link of the chain), re-solved and re-checked;
- ``control``: a generated maze of the same grid, ruleset and optimal count (within
  ``control_band``) with no mechanism, or with the other kind of mechanism;
- ``projection``: the maze itself, shown another way (the 2D frame, a 3D camera, the text map):
  its content is the source's, its record names the observation and render a run shows it with
  (``PROJECTIONS``; the protocol is laid over by ``agents.protocol.projected``).

``build_variants`` makes the variants of one maze; ``assess`` solves and checks one against its
source and says whether it is kept (``Assessment.kept``).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from env.checks import CheckResult, run_checks
from env.errors import BadInput
from env.maze import COLORS, DIRECTIONS, MINIGRID, STUDY_RULESETS, Maze, infer_category, maze_from_dict
from env.mechanics import MECHANICS, removal_twins
from env.names import MAX_NAME
from env.oracle import solve
from env.skins import SKINS, with_skin

# kinds, by family, in the order a variant set lists them
ISOMORPHIC = ("rotate", "mirror", "recolor")
# the study's later tiles, each kind removed (its cells left as floor): the no-mechanism twins the
# discovery of each kind is measured against (each mechanic declares its twin: env.mechanics)
TILE_REMOVALS = {twin: m.kinds[0] for twin, m in removal_twins().items() if MINIGRID not in m.rulesets}
ABLATIONS = ("no-switches", "no-keys", "no-distractors", "drop-link", *TILE_REMOVALS)
CONTROLS = ("control-none", "control-other")
PROJECTION = "projection"
KINDS = (*ISOMORPHIC, "reskin", *ABLATIONS, *CONTROLS, PROJECTION)
GROUPS = {"isomorphic": ISOMORPHIC, "ablation": ABLATIONS, "control": CONTROLS, "all": KINDS}
ROTATIONS = (90, 180, 270)  # clockwise, as the frame shows it
MIRRORS = {"lr": "left-right", "tb": "top-bottom"}
# a matched control's optimal count lies within the larger of 5% of its source's count and 2 actions
CONTROL_TOLERANCE = (0.05, 2)
CONTROL_ATTEMPTS = 50  # generator sub-seeds tried per topology
ORIGINAL = "original"


def _projections() -> dict[str, dict[str, Any]]:
    """Per projection, what a run shows the maze with: the protocol's ``observation`` and
    ``render`` block, set outright (a frame alone or the text alone), and in words."""
    from env.render3d.cameras import CAMERAS

    out: dict[str, dict[str, Any]] = {
        "2d": {"observation": "image", "render": {"backend": "minigrid"}, "words": "the 2D frame alone"}}
    for name, camera in CAMERAS.items():
        view = "through the agent's eyes" if camera.first_person else "from straight above"
        out[name] = {"observation": "image", "render": {"backend": "mujoco3d", "camera": name, "resolution": "grid"},
                     "words": f"a 3D frame {view} (camera {name}, 32 px a cell) alone"}
    out["text"] = {"observation": "text", "render": {"backend": "minigrid"}, "words": "the text map alone"}
    return out


# every projection a twin may have: the 2D frame, each 3D camera, the text map
PROJECTIONS = _projections()
# what the kind ``projection`` makes: the interfaces the study names (language, 2D, 3D from above
# and through the agent's eyes); the study's earlier eye is a single variant, projection-first_person_narrow
DEFAULT_PROJECTIONS = ("2d", "top_down", "first_person", "text")


@dataclass(frozen=True)
class Variant:
    """A variant maze and its record (the one in its ``meta.variant``): ``kind``; ``name``, the kind
    with its parameters as the id ends (``rotate-90``, ``recolor-s7``); ``family``; ``params``;
    ``changed``; ``twin_of`` and ``twin_of_checksum``, the source's id and checksum."""

    maze: Maze
    record: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.record["kind"]

    @property
    def name(self) -> str:
        return self.record["name"]

    @property
    def family(self) -> str:
        return self.record["family"]

    @property
    def params(self) -> dict[str, Any]:
        return self.record["params"]

    @property
    def changed(self) -> list[str]:
        return self.record["changed"]

    @property
    def twin_of(self) -> str:
        return self.record["twin_of"]


@dataclass(frozen=True)
class Skipped:
    """A variant that could not be made from a maze, and why."""

    source: str
    kind: str
    name: str
    reason: str


@dataclass(frozen=True)
class Assessment:
    """A variant solved and checked beside its source."""

    variant: Variant
    status: str
    optimal: int | None
    source_optimal: int | None
    checks: tuple[CheckResult, ...]
    new_failures: tuple[CheckResult, ...]  # failing checks its source passes
    reasons: tuple[str, ...]  # why it is not kept (none: kept)

    @property
    def kept(self) -> bool:
        return not self.reasons


def kinds_from(spec: str, source: str = "--kinds") -> list[str]:
    """Kind names from a comma-separated list of kinds, groups (``isomorphic``, ``ablation``,
    ``control``, ``all``) and single variants (``rotate-90``, ``mirror-tb``, ``drop-link-2``), in
    the order given, each once."""
    out: list[str] = []
    for word in (w.strip() for w in spec.split(",")):
        if not word:
            continue
        names = GROUPS.get(word) or ((word,) if word in KINDS or _single(word) else None)
        if names is None:
            raise BadInput(source, word, f"not a kind of variant (kinds: {', '.join(KINDS)}; groups: "
                                         f"{', '.join(GROUPS)}; or one variant, e.g. rotate-90, mirror-tb)")
        out += [n for n in names if n not in out]
    if not out:
        raise BadInput(source, "", "names no kind of variant")
    return out


def _single(word: str) -> bool:
    """A single variant of a kind: ``rotate-90``, ``mirror-lr``, ``drop-link-2``."""
    return (word in {f"rotate-{r}" for r in ROTATIONS} | {f"mirror-{m}" for m in MIRRORS}
            | {f"{PROJECTION}-{p}" for p in PROJECTIONS}
            or (word.startswith("drop-link-") and word[10:].isdigit() and int(word[10:]) >= 1))


def build_variants(maze: Maze, spec: str, seed: int = 0) -> Iterator[Variant | Skipped]:
    """The variants of ``maze`` that one kind (or single variant) names, each made or skipped."""
    kind = next((k for k in KINDS if spec == k or spec.startswith(k + "-")), spec)
    if kind == "rotate":
        for angle in ([int(spec[7:])] if spec != kind else list(ROTATIONS)):
            yield rotate(maze, angle)
    elif kind == "mirror":
        for axis in ([spec[7:]] if spec != kind else list(MIRRORS)):
            yield mirror(maze, axis)
    elif kind == "recolor":
        yield recolor(maze, seed)
    elif kind == "reskin":
        yield reskin(maze)
    elif kind in ("no-switches", "no-keys", "no-distractors", *TILE_REMOVALS):
        yield ablate(maze, kind)
    elif kind == PROJECTION:
        for name in ([spec[len(PROJECTION) + 1:]] if spec != kind else list(DEFAULT_PROJECTIONS)):
            yield projection(maze, name)
    elif kind == "drop-link":
        steps = [int(spec[10:])] if spec != kind else list(range(1, len(_chain(maze)) + 1))
        if len(_chain(maze)) < 2:
            yield Skipped(maze.id, kind, spec, f"its chain has {len(_chain(maze))} step(s): a link is dropped "
                                               "from chains of two or more (no-keys, no-switches remove one whole)")
            return
        for step in steps:
            yield drop_link(maze, step)
    else:
        yield control(maze, kind, seed)


# ---- ids and records ------------------------------------------------------------------------


def variant_id(source_id: str, name: str) -> str:
    """``<source id>.<variant name>``; a source id too long for that is cut and given a hash of
    itself, so the id stays a safe file name and stays the same for the same source and name."""
    vid = f"{source_id}.{name}"
    if len(vid) <= MAX_NAME:
        return vid
    tag = hashlib.sha256(source_id.encode()).hexdigest()[:8]
    return f"{source_id[:MAX_NAME - len(name) - len(tag) - 2]}-{tag}.{name}"


def _variant(source: Maze, doc: dict[str, Any], kind: str, name: str, family: str, params: dict[str, Any],
             changed: list[str], meta: dict[str, Any] | None = None) -> Variant:
    """The variant maze made from ``doc`` (a maze's content), with its record in ``meta.variant``.
    ``meta`` is the variant's own meta (a control's); by default the source's, less what only
    describes the source: its generator record (``regenerate`` would rebuild the source; its dead
    ends are kept, moved with the cells) and the study's stored counts (``meta.study``). An
    ablation's category is inferred afresh (without its keys and doors a maze may be navigation
    only)."""
    vid = variant_id(source.id, name)
    if meta is None:
        meta = dict(doc.get("meta") or {})
        meta.pop("study", None)
        deadends = (meta.pop("generator", None) or {}).get("deadends")
        if deadends:
            meta["generator"] = {"deadends": deadends}
        if family == "ablation":
            meta["category"] = infer_category(maze_from_dict({**doc, "meta": {**meta, "category": None}},
                                                             f"<{vid}>"))
    record = {"kind": kind, "name": name, "family": family, "params": params, "changed": changed,
              "twin_of": source.id, "twin_of_checksum": source.checksum}
    maze = maze_from_dict({**doc, "id": vid, "meta": {**meta, "variant": record}}, f"<{vid}>")
    return Variant(maze, record)


def record_of(maze: Maze) -> dict[str, Any] | None:
    """A variant maze's record (``meta.variant``), None for a maze that is no variant."""
    extra = maze.meta.model_extra if maze.meta else None
    return (extra or {}).get("variant")


# ---- isomorphic: rotations, mirrors, colours -------------------------------------------------

Cell = tuple[int, int]


def _transformed(maze: Maze, where: Callable[[Cell], Cell], facing: Callable[[int], int], width: int,
                 height: int) -> dict[str, Any]:
    """The maze's content with every cell moved by ``where`` and every direction by ``facing``
    (the grid, the start, the goal, each object's cells, the dead ends' cells)."""
    d = maze.to_dict()
    rows = [["#"] * width for _ in range(height)]
    for y, row in enumerate(maze.grid):
        for x, ch in enumerate(row):
            nx, ny = where((x, y))
            rows[ny][nx] = ch
    d["grid"] = ["".join(r) for r in rows]
    d["start"] = {"pos": list(where(maze.start.pos)), "dir": DIRECTIONS[facing(maze.start_dir)]}
    d["goal"] = list(where(maze.goal))
    for o in d["objects"]:
        o["pos"] = list(where(tuple(o["pos"])))
        if "to" in o:
            o["to"] = list(where(tuple(o["to"])))
        if "dir" in o:  # an object's heading (an arrow's) turns with the layout
            o["dir"] = DIRECTIONS[facing(DIRECTIONS.index(o["dir"]))]
    generator = (d.get("meta") or {}).get("generator") or {}
    if generator.get("deadends"):
        generator["deadends"] = [[list(where(tuple(c))) for c in cells] for cells in generator["deadends"]]
    return d


def _geometric(maze: Maze, kind: str, name: str, params: dict[str, Any], where: Callable[[Cell], Cell],
               facing: Callable[[int], int], width: int, height: int, what: str, mirrored: bool = False) -> Variant:
    d = _transformed(maze, where, facing, width, height)
    changed = [what]
    family = "isomorphic"
    for m in MECHANICS:  # what a mirror image does not carry over (``Mechanic.unmirrored``)
        if mirrored and m.unmirrored and any(maze.of_kind(k) for k in m.kinds):
            family = "near-isomorphic"
            changed.append(m.unmirrored)
    heading = d["start"]["dir"]
    if maze.study_rules and heading != "east":
        # the rulebook starts every maze facing east: the start now faces another way in the layout
        d["start"]["dir"] = "east"
        family = "near-isomorphic"
        changed.append(f"start heading: the layout's {heading} became east (under {maze.ruleset} the agent "
                       "always starts facing east)")
    return _variant(maze, d, kind, name, family, params, changed)


def rotate(maze: Maze, angle: int) -> Variant:
    """The maze turned ``angle`` degrees clockwise (90, 180, 270)."""
    if angle not in ROTATIONS:
        raise BadInput("rotate", "angle", f"{angle} is not one of {', '.join(map(str, ROTATIONS))}")
    w, h = maze.width, maze.height
    turns = angle // 90

    def where(c: Cell) -> Cell:
        for _ in range(turns):
            c = (h - 1 - c[1], c[0]) if _ % 2 == 0 else (w - 1 - c[1], c[0])
        return c

    size = (h, w) if turns % 2 else (w, h)
    return _geometric(maze, "rotate", f"rotate-{angle}", {"angle": angle}, where,
                      lambda d: (d + turns) % 4, *size, f"turned {angle} degrees clockwise")


def mirror(maze: Maze, axis: str) -> Variant:
    """The maze mirrored left to right (``lr``: columns reversed) or top to bottom (``tb``)."""
    if axis not in MIRRORS:
        raise BadInput("mirror", "axis", f"{axis!r} is not one of {', '.join(MIRRORS)}")
    w, h = maze.width, maze.height
    if axis == "lr":
        return _geometric(maze, "mirror", "mirror-lr", {"axis": MIRRORS[axis]}, lambda c: (w - 1 - c[0], c[1]),
                          lambda d: (2 - d) % 4, w, h, "mirrored left to right (east and west swapped)", mirrored=True)
    return _geometric(maze, "mirror", "mirror-tb", {"axis": MIRRORS[axis]}, lambda c: (c[0], h - 1 - c[1]),
                      lambda d: (4 - d) % 4, w, h, "mirrored top to bottom (north and south swapped)", mirrored=True)


def color_permutation(seed: int, ruleset: str) -> dict[str, str]:
    """A permutation of the colours that moves every one it may: grey stays under multinet-r1 (its
    frames draw every gate grey, so a grey door would look like a gate); white, a switch's colour
    only, always stays."""
    movable = [c for c in COLORS if not (ruleset in STUDY_RULESETS and c == "grey")]
    rng = random.Random(f"gridbench-variants/recolor:{seed}")
    while True:
        image = rng.sample(movable, len(movable))
        if all(a != b for a, b in zip(movable, image, strict=True)):
            return dict(zip(movable, image, strict=True))


def recolor(maze: Maze, seed: int) -> Variant:
    """Every colour changed by one permutation (the same for every maze and one seed): a key still
    opens the doors of its colour, a switch still works the gates it names."""
    perm = color_permutation(seed, maze.ruleset)
    d = maze.to_dict()
    for o in d["objects"]:
        if "color" in o:
            o["color"] = perm.get(o["color"], o["color"])
    used = sorted({o.color for o in maze.objects if hasattr(o, "color") and o.color in perm})
    what = ", ".join(f"{c} -> {perm[c]}" for c in used) or "no object has a colour"
    return _variant(maze, d, "recolor", f"recolor-s{seed}", "isomorphic", {"seed": seed, "colors": perm},
                    [f"colours permuted: {what}"])


def reskin(maze: Maze) -> Variant:
    """The maze in the other skin: same dynamics, other glyphs and words (env.skins)."""
    target = "neutral" if maze.skin == "classic" else "classic"
    d = {**maze.to_dict(), "skin": target}
    nouns = SKINS[target].nouns
    words = ", ".join(f"{kind} -> {nouns[kind][0]}" for kind in sorted({o.kind for o in maze.objects}))
    return _variant(maze, d, "reskin", f"reskin-{target}", "reskin", {"skin": target},
                    [f"skin {maze.skin} -> {target}" + (f" ({words})" if words else "")])


def projection(maze: Maze, name: str) -> Variant | Skipped:
    """The maze itself, shown as ``name`` (``PROJECTIONS``): the same content under its own id
    (``<id>.projection-<name>``), the observation and render in its record. A 3D projection of a
    maze the 3D frames cannot draw is skipped with the reason."""
    if name not in PROJECTIONS:
        raise BadInput(PROJECTION, "name", f"{name!r} is not one of {', '.join(PROJECTIONS)}")
    shown = PROJECTIONS[name]
    if shown["render"]["backend"] != "minigrid":
        from env.render3d.scene import check_drawable

        try:
            check_drawable(maze, PROJECTION)
        except BadInput as err:
            return Skipped(maze.id, PROJECTION, f"{PROJECTION}-{name}", err.message.removeprefix(f"{maze.id}: "))
    params = {"projection": name, "observation": shown["observation"], "render": dict(shown["render"])}
    return _variant(maze, maze.to_dict(), PROJECTION, f"{PROJECTION}-{name}", PROJECTION, params,
                    [f"shown as {shown['words']}"])


def projection_of(maze: Maze) -> dict[str, Any] | None:
    """A projection twin's ``params`` (``projection``, ``observation``, ``render``); None for any
    other maze."""
    record = record_of(maze)
    return record["params"] if record and record.get("kind") == PROJECTION else None


# ---- ablations ------------------------------------------------------------------------------


def _chain(maze: Maze) -> tuple[tuple[str, ...], ...]:
    return maze.meta.chain if maze.meta else ()


def _removed(maze: Maze, gone: set[str], walled: frozenset[Cell] = frozenset()) -> dict[str, Any]:
    """The maze's content without the objects ``gone`` (a door or gate leaves floor behind) and
    with the cells ``walled`` turned to wall; chain steps, distractors and switch controls that
    named them lose them."""
    d = maze.to_dict()
    d["objects"] = [o for o in d["objects"] if o["id"] not in gone]
    for o in d["objects"]:
        if o["kind"] == "switch":
            o["controls"] = [g for g in o["controls"] if g not in gone]
    if walled:
        rows = [list(r) for r in d["grid"]]
        for x, y in walled:
            rows[y][x] = "#"
        d["grid"] = ["".join(r) for r in rows]
    meta = d.get("meta")
    if meta:
        chain = [[i for i in step if i not in gone] for step in meta.get("chain", [])]
        meta["chain"] = [step for step in chain if step]
        meta["distractors"] = [e for e in meta.get("distractors", []) if e not in gone]
    return d


def ablate(maze: Maze, kind: str) -> Variant | Skipped:
    """Every switch and gate (``no-switches``), every key and door (``no-keys``), every
    distractor (``no-distractors``: decoy objects removed, dead ends walled up), or every object
    of a later tile (its removal twin, ``Mechanic.removal``) taken out."""
    if kind == "no-switches":
        gone = {s.id for s in maze.switches} | {g.id for g in maze.gates}
        what = "every switch and gate removed"
    elif kind == "no-keys":
        gone = {k.id for k in maze.keys} | {d.id for d in maze.doors}
        what = "every key and door removed"
    elif kind == "no-distractors":
        return _without_distractors(maze)
    elif kind in TILE_REMOVALS:
        gone = {o.id for o in maze.objects if o.kind == TILE_REMOVALS[kind]}
        what = f"every {TILE_REMOVALS[kind]} removed (its cells left as floor)"
    else:
        raise BadInput("ablation", "kind", f"{kind!r} is not one of {', '.join(ABLATIONS)}")
    if not gone:
        return Skipped(maze.id, kind, kind, f"it has no {kind[3:].replace('-', ' ')}")
    return _variant(maze, _removed(maze, gone), kind, kind, "ablation", {},
                    [f"{what}: {', '.join(sorted(gone))}"])


def _without_distractors(maze: Maze) -> Variant | Skipped:
    entries = maze.meta.distractors if maze.meta else ()
    if not entries:
        return Skipped(maze.id, "no-distractors", "no-distractors", "it has no distractors (meta.distractors)")
    from env.checks import deadend_cells

    gone = {e for e in entries if not e.startswith("deadend:")}
    walled: set[Cell] = set()
    occupied = {maze.start.pos, maze.goal} | {o.pos for o in maze.objects if o.id not in gone}
    for e in entries:
        if e.startswith("deadend:"):
            cells = deadend_cells(maze, e)
            if cells is None or occupied & set(cells):
                return Skipped(maze.id, "no-distractors", "no-distractors",
                               f"{e}: its cells are not recorded or hold the start, the goal or an object")
            walled |= set(cells)
    d = _removed(maze, gone, frozenset(walled))
    if d.get("meta"):
        d["meta"]["distractors"] = []
        if walled:
            d["meta"]["generator"]["deadends"] = []
    what = [f"decoys removed: {', '.join(sorted(gone))}"] if gone else []
    if walled:
        what.append(f"dead ends walled up: {len(walled)} cells")
    return _variant(maze, d, "no-distractors", "no-distractors", "ablation", {}, what)


def drop_link(maze: Maze, step: int) -> Variant | Skipped:
    """Step ``step`` (from 1) of the chain taken out: its objects that no other step names."""
    chain = _chain(maze)
    name = f"drop-link-{step}"
    if not 1 <= step <= len(chain):
        return Skipped(maze.id, "drop-link", name, f"its chain has {len(chain)} step(s), no step {step}")
    others = {i for j, s in enumerate(chain, 1) if j != step for i in s}
    gone = set(chain[step - 1]) - others
    if not gone:
        return Skipped(maze.id, "drop-link", name, f"every object of step {step} belongs to another step too")
    d = _removed(maze, gone)
    d["meta"]["chain"] = [list(s) for j, s in enumerate(chain, 1) if j != step]  # what the others share stays
    return _variant(maze, d, "drop-link", name, "ablation", {"step": step},
                    [f"chain step {step} of {len(chain)} removed: {', '.join(sorted(gone))}"])


# ---- matched controls -----------------------------------------------------------------------


def control_band(optimal: int) -> tuple[int, int]:
    """The optimal counts a matched control may have: within the larger of 5% and 2 actions."""
    share, least = CONTROL_TOLERANCE
    tol = max(least, round(share * optimal))
    return max(1, optimal - tol), optimal + tol


def step_kinds(maze: Maze) -> list[str] | None:
    """Per chain step, ``key`` (a key and door) or ``switch`` (a switch and gate); None when a
    step holds both."""
    out = []
    for step in _chain(maze):
        kinds = {maze.by_id[i].kind for i in step}
        if kinds <= {"key", "door"}:
            out.append("key")
        elif kinds <= {"switch", "gate"}:
            out.append("switch")
        else:
            return None
    return out


def _pattern(kinds: list[str]) -> tuple[str, int] | None:
    """The generator's chain pattern (and its ``mechanisms``) for a list of step kinds, None when
    none has it. A mix of three or more steps is ``mixed_sequence``, whose order the generator
    draws."""
    fixed = {("key",): "key_door", ("switch",): "switch_gate", ("key", "switch"): "gate_behind_door",
             ("switch", "key"): "door_behind_gate"}
    if tuple(kinds) in fixed:
        return fixed[tuple(kinds)], 2
    if not 2 <= len(kinds) <= 4:
        return None
    if set(kinds) == {"key"}:
        return "key_sequence", len(kinds)
    if set(kinds) == {"switch"}:
        return "switch_sequence", len(kinds)
    return "mixed_sequence", len(kinds)


def _decoys(maze: Maze) -> tuple[int, int, int]:
    """Decoy keys, decoy switches and dead ends among the maze's distractors."""
    entries = maze.meta.distractors if maze.meta else ()
    kinds = [maze.by_id[e].kind for e in entries if not e.startswith("deadend:")]
    return kinds.count("key"), kinds.count("switch"), sum(e.startswith("deadend:") for e in entries)


def control(maze: Maze, kind: str, seed: int) -> Variant | Skipped:
    """A generated maze of the same grid, ruleset and optimal count (``control_band``) with no
    mechanism (``control-none``), or with each chain step of the other kind (``control-other``: a
    key and door for a switch and gate and back; decoy keys and switches swapped too, dead ends
    kept), from the first topology that gives one (the source's own first, when the generator has
    it). Deterministic in the seed and the source."""
    from env.generator import TOPOLOGIES, GenerationError, GenParams, generate

    if kind not in CONTROLS:
        raise BadInput("control", "kind", f"{kind!r} is not one of {', '.join(CONTROLS)}")
    name = f"{kind}-s{seed}"
    skip = lambda why: Skipped(maze.id, kind, name, why)  # noqa: E731
    sol = solve(maze)
    if sol.optimal_actions is None:
        return skip(f"the source is {sol.status}")
    if not (7 <= maze.width <= 40 and 7 <= maze.height <= 40):
        return skip(f"the generator makes grids of 7 to 40 cells a side, this one is {maze.width}x{maze.height}")
    band = control_band(sol.optimal_actions)
    shape: dict[str, Any] = {"chain": "none"}
    changed = ["a generated maze of the same grid with no mechanism"]
    if kind == "control-other":
        kinds = step_kinds(maze)
        if not _chain(maze):
            return skip("it has no mechanism chain (meta.chain) to give the other kind")
        if kinds is None:
            return skip("a step of its chain holds both a key or door and a switch or gate")
        swapped = ["switch" if k == "key" else "key" for k in kinds]
        pattern = _pattern(swapped)
        if pattern is None:
            return skip(f"the generator has no chain of {len(swapped)} steps")
        keys, switches, deadends = _decoys(maze)
        shape = {"chain": pattern[0], "mechanisms": pattern[1], "decoy_keys": min(3, switches),
                 "decoy_switches": min(3, keys), "deadends": min(3, deadends)}
        changed = [f"a generated maze of the same grid whose chain steps are {'/'.join(swapped)} where the "
                   f"source's are {'/'.join(kinds)}"]
    source_topology = maze.meta.topology if maze.meta else None
    order = sorted(TOPOLOGIES, key=lambda t: t != source_topology)
    digest = hashlib.sha256(f"gridbench-variants/{kind}:{seed}:{maze.checksum}".encode()).hexdigest()
    gen_seed = int(digest[:8], 16)
    vid = variant_id(maze.id, name)
    for topology in order:
        params = GenParams(width=maze.width, height=maze.height, topology=topology, band=band,
                           ruleset=maze.ruleset, **shape)
        try:
            made = generate(params, gen_seed, vid, max_attempts=CONTROL_ATTEMPTS).maze
        except GenerationError:
            continue
        d = with_skin(made, maze.skin).to_dict()
        record_params = {"seed": seed, "band": list(band), "topology": topology, **shape}
        return _variant(maze, d, kind, name, "control", record_params,
                        [*changed, f"optimal count within {band[0]}..{band[1]} (the source's: {sol.optimal_actions})"],
                        meta=dict(d["meta"]))
    return skip(f"the generator found none within {band[0]}..{band[1]} actions in {CONTROL_ATTEMPTS} attempts "
                f"for each of {', '.join(order)}")


# ---- solving and checking ---------------------------------------------------------------------


def exact(variant: Variant) -> bool:
    """Whether the variant keeps every count of its source by construction (isomorphic, reskin,
    projection)."""
    return variant.family in ("isomorphic", "reskin", PROJECTION)


def assess(variant: Variant, source: Maze, source_checks: list[CheckResult] | None = None) -> Assessment:
    """The variant solved and checked by the four checks beside its source. It is kept when it is
    solved, exact variants keep the source's count, and it fails no check (for no object) that its
    source passes: a failure the source has too is inherited, not new, and so is a decoy key that is
    a trap by the multinet-r1 rulebook (no swap, no drop), which the generator accepts as well."""
    from env.generator.generator import trap_by_the_rulebook

    sol, src = solve(variant.maze), solve(source)
    checks = tuple(run_checks(variant.maze))
    before = {(r.check, r.object_id) for r in (source_checks if source_checks is not None else run_checks(source))
              if not r.passed}
    new = tuple(r for r in checks if not r.passed and (r.check, r.object_id) not in before
                and not trap_by_the_rulebook(variant.maze, r))
    reasons = []
    if sol.status != "solved":
        reasons.append(f"oracle: {sol.status}")
    if exact(variant) and sol.optimal_actions != src.optimal_actions:
        reasons.append(f"an exact variant changed the count: {src.optimal_actions} -> {sol.optimal_actions}")
    reasons += [f"{r.check} fails ({r.object_id or 'maze'}): {r.reason}" for r in new]
    return Assessment(variant, sol.status, sol.optimal_actions, src.optimal_actions, checks, new, tuple(reasons))


def entry_record(a: Assessment) -> dict[str, Any]:
    """The variant's part of its manifest entry."""
    return {**a.variant.record, "source_optimal_actions": a.source_optimal,
            "checks": [_check_json(r) for r in a.checks]}



# ---- a variant set ----------------------------------------------------------------------------


@dataclass
class VariantSet:
    """Sources and their kept variants, in manifest order (each source, then its variants by
    kind), their manifest entries, and every variant not written with the reason."""

    mazes: list[Maze]
    entries: list[dict[str, Any]]
    not_written: list[dict[str, Any]]


def variant_set(sources: list[Maze], kinds: list[str], seed: int = 0,
                progress: Callable[[int], None] | None = None) -> VariantSet:
    """Every variant of every source that ``kinds`` name, assessed; ``progress(1)`` after each
    source and kind. Sources must have distinct ids (a variant's id is its source's and its name)."""
    from env.generator.maze_pool import manifest_entry

    seen: dict[str, int] = {}
    for i, m in enumerate(sources):
        if m.id in seen:
            raise BadInput(m.id, "id", f"two source mazes have this id (numbers {seen[m.id] + 1} and {i + 1}): "
                                       "their variants would have the same ids")
        seen[m.id] = i
    out = VariantSet([], [], [])
    for source in sources:
        checks = run_checks(source)
        sol = solve(source)
        out.mazes.append(source)
        out.entries.append({**manifest_entry(source, sol.optimal_actions or 0), "variant": {
            "kind": ORIGINAL, "name": ORIGINAL, "family": ORIGINAL, "params": {}, "changed": [], "twin_of": None,
            "twin_of_checksum": None, "source_optimal_actions": sol.optimal_actions,
            "checks": [_check_json(r) for r in checks]}})
        for kind in kinds:
            for made in build_variants(source, kind, seed):
                if isinstance(made, Skipped):
                    out.not_written.append({"id": variant_id(source.id, made.name), "source": source.id,
                                            "kind": made.kind, "name": made.name, "reason": made.reason})
                    continue
                a = assess(made, source, checks)
                record = entry_record(a)
                if a.kept:
                    out.mazes.append(made.maze)
                    out.entries.append({**manifest_entry(made.maze, a.optimal or 0), "variant": record})
                else:
                    out.not_written.append({"id": made.maze.id, "source": source.id, "kind": made.kind,
                                            "name": made.name, "reason": "; ".join(a.reasons),
                                            "optimal_actions": a.optimal, **record})
            if progress is not None:
                progress(1)
    return out


def _check_json(r: CheckResult) -> dict[str, Any]:
    return {"check": r.check, "passed": r.passed, "object": r.object_id, "reason": r.reason}
