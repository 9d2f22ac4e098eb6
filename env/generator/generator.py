"""The maze generator: parameters in, a checked ``gridbench.maze/1`` maze out.

``generate(params, seed)`` draws candidates from sub-seeds ``(seed, 0), (seed, 1), ...``; each
candidate is fully determined by ``(params, seed, attempt, id)``, goes through the oracle and
the four checks, and the first that passes (with its optimal plan inside the target band) is
returned. ``meta.generator`` records exactly those four things, so ``regenerate(meta)`` rebuilds
the same maze without searching again.

``GenParams.ruleset`` ``multinet-r1`` lays out the same compositions under the MultiNet study's
rules (keys walkable and picked up from underfoot, used up by their doors, the start facing east),
so the study's composition can be drawn again under the rules its counts were made with.
``multinet-pr57`` does the same under the study's later rules, and ``GenParams.tile`` then adds one
later mechanism (a mechanic that lays itself, ``Mechanic.lay``) where it matters: the maze's optimal
count must differ from that of its removal twin (the same maze with those tiles taken out).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

import numpy as np

from env.errors import BadInput
from env.generator.chains import (
    PATTERNS,
    carve_deadend,
    chain_kinds,
    cut_cells,
    fewest_keys,
    key_cells_ok,
    natural_deadend,
    regions,
)
from env.generator.floor_search import Floor
from env.generator.topology import (
    RECIPE_SIDE,
    TOPOLOGIES,
    Cell,
    FloorSearches,
    grid_rows,
    layout,
    neighbours,
)
from env.maze import (
    COLORS,
    FORMAT,
    MAX_SIDE,
    MINIGRID,
    MULTINET_PR57,
    MULTINET_R1,
    STUDY_RULESETS,
    Maze,
    Meta,
    maze_from_dict,
)
from env.mechanics import by_name, generated
from env.mechanics.base import Laying
from env.oracle.solution import STATE_CAP

GENERATOR_VERSION = 1
MAX_MECHANISMS = 8  # steps of a *_sequence chain
# the rulesets the generator lays mazes out for
GENERATOR_RULESETS = (MINIGRID, MULTINET_R1, MULTINET_PR57)
# the later mechanisms a multinet-pr57 maze can be given (GenParams.tile), with the object kind
# each becomes and the removal twin (env.variants) that takes it out again, as each declares them
# (env.mechanics)
TILE_OBJECT = {m.name: m.kinds[0] for m in generated()}
TILE_TWIN = {m.name: str(m.removal) for m in generated()}
TILES = ("none", *TILE_OBJECT)
_STEPS = ((1, 0), (0, 1), (-1, 0), (0, -1))
PLACEMENT_TRIES = 80
# Past what any recipe draws (pool, long-horizon and discovery specs, the variants' controls: at
# most three chain steps and three distractors, sides up to RECIPE_SIDE), a candidate's reachable states
# multiply: each decoy switch doubles them, decoy keys swapped through the key cells multiply them
# by the keys' arrangements. Such parameters are verified with this cap on the maze without its
# idle switches (``idle_switches_out``); within the recipes' reach nothing changes, so every maze
# generated before is generated again byte for byte.
RECIPE_STEPS = RECIPE_DISTRACTORS = 3
SCALED_STATE_CAP = 12_000_000


class PlannedStep(TypedDict):
    """One chain step as placed: its kind, the cell of its enabler and of its barrier."""

    kind: str
    enabler: Cell
    barrier: Cell


@dataclass(frozen=True)
class GenParams:
    """Everything that shapes a generated maze except the seed."""

    width: int = 10
    height: int = 10
    topology: str = "perfect"
    chain: str = "key_door"
    mechanisms: int = 2  # steps in a *_sequence chain; fixed patterns ignore it
    decoy_keys: int = 0
    decoy_switches: int = 0
    deadends: int = 0
    band: tuple[int, int] = (1, 1000)  # accepted optimal action counts, both ends included
    ruleset: str = MINIGRID
    tile: str = "none"  # a later mechanism laid where it matters (multinet-pr57 only)

    def __post_init__(self) -> None:
        where = "generator parameters"
        if self.ruleset not in GENERATOR_RULESETS:
            raise BadInput(where, "ruleset", f"{self.ruleset!r} is not one of {', '.join(GENERATOR_RULESETS)}")
        if self.tile not in TILES:
            raise BadInput(where, "tile", f"{self.tile!r} is not one of {', '.join(TILES)}")
        if self.tile != "none" and self.ruleset != MULTINET_PR57:
            raise BadInput(where, "tile", f"{self.tile!r} exists only under ruleset {MULTINET_PR57!r}")
        if self.topology not in TOPOLOGIES:
            raise BadInput(where, "topology", f"{self.topology!r} is not one of {', '.join(TOPOLOGIES)}")
        if self.chain not in PATTERNS:
            raise BadInput(where, "chain", f"{self.chain!r} is not one of {', '.join(PATTERNS)}")
        if not (7 <= self.width <= MAX_SIDE and 7 <= self.height <= MAX_SIDE):
            raise BadInput(where, "width/height", f"{self.width}x{self.height}: sides from 7 to {MAX_SIDE}")
        if not 1 <= self.mechanisms <= MAX_MECHANISMS:
            raise BadInput(where, "mechanisms", f"from 1 to {MAX_MECHANISMS} chain steps")
        for name in ("decoy_keys", "decoy_switches", "deadends"):
            if not 0 <= getattr(self, name) <= 3:
                raise BadInput(where, name, "from 0 to 3")
        # a door opens to every key of its colour, so each door needs a colour of its own, and a
        # decoy key one that no door has
        keys = fewest_keys(self.chain, self.mechanisms)
        if keys + bool(self.decoy_keys) > len(COLORS):
            field_name = "decoy_keys" if keys <= len(COLORS) else "mechanisms"
            raise BadInput(where, field_name, f"{keys} doors{' and a decoy key' if self.decoy_keys else ''} need "
                                              f"{keys + bool(self.decoy_keys)} colours; there are {len(COLORS)}")
        if self.chain == "none" and self.distractor_count:
            raise BadInput(where, "chain", "distractors sit on top of mechanisms: a 'none' chain takes none")
        lo, hi = self.band
        if not 1 <= lo <= hi:
            raise BadInput(where, "band", f"{list(self.band)} is not [low, high] with 1 <= low <= high")

    @property
    def distractor_count(self) -> int:
        return self.decoy_keys + self.decoy_switches + self.deadends

    @property
    def steps(self) -> int:
        """Chain steps: ``mechanisms`` (two at the least) for a ``*_sequence`` chain, else the pattern's."""
        fixed = PATTERNS[self.chain]
        return max(2, self.mechanisms) if fixed is None else len(fixed)

    @property
    def scaled(self) -> bool:
        """Beyond every recipe's parameters: verified with ``SCALED_STATE_CAP`` on the maze without
        its idle switches (``idle_switches_out``), where a candidate's states multiply."""
        return (self.steps > RECIPE_STEPS or self.distractor_count > RECIPE_DISTRACTORS
                or max(self.width, self.height) > RECIPE_SIDE)

    @property
    def state_cap(self) -> int:
        """The most states the oracle and the checks search per candidate."""
        return SCALED_STATE_CAP if self.scaled else STATE_CAP

    @property
    def category(self) -> str:
        if self.chain == "none":
            return "scale" if self.tile == "none" else "mechanism"
        return "distractor" if self.distractor_count else "mechanism"

    def to_json(self) -> dict[str, Any]:
        """The parameters as ``meta.generator.params`` records them; the ruleset only when it is
        not minigrid, so gridbench's own generated mazes keep their content and checksum."""
        d = asdict(self)
        d["band"] = list(self.band)
        if d["ruleset"] == MINIGRID:
            del d["ruleset"]
        if d["tile"] == "none":
            del d["tile"]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GenParams:
        d = dict(d)
        if "band" in d:
            d["band"] = tuple(d["band"])
        return cls(**d)


@dataclass
class GenStats:
    """How many candidates a generation took: the acceptance rate is accepted / candidates."""

    candidates: int = 0  # went through the oracle and the checks
    accepted: int = 0
    unplaced: int = 0  # the layout had no placement in the band; nothing to check
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> count

    def add(self, other: GenStats) -> None:
        self.candidates += other.candidates
        self.accepted += other.accepted
        self.unplaced += other.unplaced
        for k, v in other.rejected.items():
            self.rejected[k] = self.rejected.get(k, 0) + v

    @property
    def acceptance(self) -> float:
        return self.accepted / self.candidates if self.candidates else 0.0


class GenerationError(RuntimeError):
    def __init__(self, message: str, stats: GenStats):
        super().__init__(message)
        self.stats = stats


@dataclass
class Generated:
    maze: Maze
    optimal_actions: int
    stats: GenStats


# ---- estimating a plan's length without the oracle ----------------------------------------


def _nav(state: tuple[int, int, int], passable: set[Cell], target: Cell, facing: bool,
         grid: tuple[Floor, np.ndarray] | None) -> tuple[int, tuple[int, int, int]] | None:
    """Fewest turn/forward actions from ``state`` (x, y, dir) to standing on ``target`` or, with
    ``facing``, facing it, and the state reached; ``grid``: the floor and ``passable`` as its flags."""
    if grid is not None:
        return grid[0].turns(grid[1], state, target, facing)
    return python_nav(state, passable, (_facing if facing else _standing)(target))


def python_nav(state: tuple[int, int, int], passable: set[Cell], done) -> tuple[int, tuple[int, int, int]] | None:
    """``_nav`` in plain Python, towards a state where ``done`` holds (the compiled one is held to it)."""
    if done(state):
        return 0, state
    dist = {state: 0}
    q = deque([state])
    while q:
        s = q.popleft()
        x, y, d = s
        dx, dy = _STEPS[d]
        nexts = [(x, y, (d - 1) % 4), (x, y, (d + 1) % 4)]
        if (x + dx, y + dy) in passable:
            nexts.append((x + dx, y + dy, d))
        for n in nexts:
            if n not in dist:
                dist[n] = dist[s] + 1
                if done(n):
                    return dist[n], n
                q.append(n)
    return None


def _facing(target: Cell):
    def done(s):
        dx, dy = _STEPS[s[2]]
        return (s[0] + dx, s[1] + dy) == target
    return done


def _standing(target: Cell):
    return lambda s: (s[0], s[1]) == target


def estimate_actions(floor: set[Cell], start: tuple[int, int, int], goal: Cell, steps: list[PlannedStep],
                     key_cells: set[Cell], ruleset: str = MINIGRID,
                     searches: FloorSearches | None = None) -> int | None:
    """Actions for the intended route: each step's enabler, then its barrier, then the goal.
    Under multinet-r1 keys are walked over and picked up from underfoot. ``searches``: the
    floor's, to search it compiled.

    The oracle has the last word; this only keeps candidates far outside the band from it.
    """
    r1 = ruleset in STUDY_RULESETS
    barriers = {s["barrier"] for s in steps}
    closed = barriers | (set() if r1 else key_cells)
    passable = floor - closed
    compiled = searches.compiled if searches is not None else None
    grid = None if compiled is None else (compiled, compiled.without(closed))

    def let(c: Cell) -> None:
        passable.add(c)
        if grid is not None:
            grid[0].let(grid[1], c)

    total, state = 0, start
    carrying = False
    for s in steps:
        if s["kind"] == "key":
            r = _nav(state, passable, s["enabler"], not r1, grid)
            if r is None:
                return None
            total, state = total + r[0] + 1, r[1]
            if not carrying:  # a swap leaves the carried key where this one lay
                let(s["enabler"])
            carrying = True
            r = _nav(state, passable, s["barrier"], True, grid)
            if r is None:
                return None
            total, state = total + r[0] + 1, r[1]
        else:
            r = _nav(state, passable, s["enabler"], False, grid)
            if r is None:
                return None
            total, state = total + r[0] + 1, r[1]
        let(s["barrier"])
    r = _nav(state, passable, goal, False, grid)
    if r is None:
        return None
    return total + r[0]


# ---- one candidate ---------------------------------------------------------------------------


def build_candidate(params: GenParams, seed: int, attempt: int, maze_id: str) -> Maze | None:
    """The maze for one sub-seed, or None when this layout has no placement in the band."""
    rng = random.Random(f"gridbench-generator/{GENERATOR_VERSION}:{seed}:{attempt}")
    floor = layout(params.topology, params.width, params.height, rng)
    kinds = chain_kinds(params.chain, params.mechanisms, rng)
    if kinds.count("key") + bool(params.decoy_keys) > len(COLORS):
        return None  # a long mixed chain drew more doors than there are colours (never at 4 steps or fewer)
    lo, hi = params.band
    cells = sorted(floor)
    if len(cells) < 4 + 2 * len(kinds):
        return None
    # cells a key may hold: taking one out of the floor leaves the rest connected
    searches = FloorSearches(floor)
    key_safe = searches.removable(cells)
    # how hard to stretch the route: nudged up after a plan too short, down after one too long
    stretch = min(0.9, lo / (hi + 1) * 0.8)
    if params.tile != "none":
        # a shortcut comes off the intended route: aim that route a little longer (``route_slack``)
        slack = by_name(params.tile).route_slack
        lo, hi = lo + slack, hi + slack
    for _ in range(PLACEMENT_TRIES):
        placed = _place(searches, cells, key_safe, kinds, params, rng, stretch)
        if placed is None:
            continue
        est = estimate_actions(floor, placed["start"], placed["goal"], placed["steps"], placed["key_cells"],
                               params.ruleset, searches)
        if est is None:
            continue
        if est < lo:
            stretch = min(1.0, stretch + 0.1)
        elif est > hi:
            stretch = max(0.0, stretch - 0.1)
        else:
            placed["max_saving"] = est - params.band[0]
            return _assemble(params, seed, attempt, maze_id, floor, kinds, placed, rng)
    return None


def _place(searches: FloorSearches, cells: list[Cell], key_safe: set[Cell], kinds: tuple[str, ...],
           params: GenParams, rng: random.Random, stretch: float) -> dict | None:
    floor = searches.floor
    if rng.random() < stretch:
        # near one end of the layout's longest walks
        start = rng.choice(searches.farthest(rng.choice(cells), cells, max(3, len(cells) // 8)))
    else:
        start = rng.choice(cells)
    lo, hi = params.band
    reach = searches.band(start, 2, hi)  # in order of distance
    if not reach:
        return None
    far = reach[int(len(reach) * min(0.95, stretch)):] or reach
    goal = rng.choice(far)
    path = searches.path(start, goal)
    n = len(kinds)
    barrier_idx: list[int] = []
    regs: list[set[Cell]] = [floor]
    if n:
        cuts = cut_cells(path, floor)
        # doors and gates look like doors: a cell with floor on two opposite sides
        good = [i for i in cuts if _doorlike(path[i], floor)] or cuts
        if len(good) < n:
            return None
        barrier_idx = sorted(rng.sample(good, n))
        if any(b - a < 2 for a, b in zip(barrier_idx, barrier_idx[1:], strict=False)):
            return None
        got = regions(path, barrier_idx, floor)
        if got is None:
            return None
        regs = got
    used = {start, goal} | {path[i] for i in barrier_idx}
    # toggling while standing on a switch flips the switch, never the door in front: a switch
    # on a door's doorstep would make that door impossible to open from there
    doorsteps = {c for i, k in zip(barrier_idx, kinds, strict=True) if k == "key" for c in neighbours(path[i], floor)}
    off_route = searches.dist(list(path)) if n else {}
    steps: list[PlannedStep] = []
    key_cells: set[Cell] = set()
    for i, kind in enumerate(kinds):
        region = sorted(c for c in regs[i] if c not in used)
        if kind == "key":
            region = [c for c in region if c in key_safe]
        else:
            region = [c for c in region if c not in doorsteps]
        if not region:
            return None
        if rng.random() < stretch:
            # far off the route: the detour is what makes a long plan
            region.sort(key=lambda c: -off_route.get(c, 0))
            region = region[: max(1, len(region) // 4)]
        cell = rng.choice(region)
        used.add(cell)
        if kind == "key":
            key_cells.add(cell)
        steps.append({"kind": kind, "enabler": cell, "barrier": path[barrier_idx[i]]})
    decoy_keys: list[Cell] = []
    decoy_switches: list[Cell] = []
    for _ in range(params.decoy_keys):
        real = [s["enabler"] for s in steps if s["kind"] == "key"]
        free = [c for c in cells if c not in used and c in key_safe]
        near = [c for r in real for c in _ring(r, 2) if c in free]
        # half the time next to a real key: the look-alike the agent meets first
        options = near if near and rng.random() < 0.5 else free
        if not options:
            return None
        c = rng.choice(sorted(set(options)))
        used.add(c)
        key_cells.add(c)
        decoy_keys.append(c)
    for _ in range(params.decoy_switches):
        options = [c for c in cells if c not in used and c not in doorsteps]
        if not options:
            return None
        c = rng.choice(options)
        used.add(c)
        decoy_switches.append(c)
    if key_cells and not key_cells_ok(floor, key_cells):
        return None
    start_dir = rng.randrange(4)
    if params.ruleset in STUDY_RULESETS:
        start_dir = 0  # the study's agent always starts facing east
    return {
        "start": (start[0], start[1], start_dir), "goal": goal, "path": path, "steps": steps,
        "key_cells": key_cells, "decoy_keys": decoy_keys, "decoy_switches": decoy_switches, "used": used,
    }


def _tiles(tile: str, floor: set[Cell], path: list[Cell], steps: list[PlannedStep], taken: set[Cell],
           max_saving: int, rng: random.Random) -> list[dict[str, Any]] | None:
    """The objects of one later mechanism, laid by the mechanic itself (``Mechanic.lay``) on the
    start-goal shortest path, so that it is met: the path is cut into stretches between barriers,
    and the cells already taken are left out. Whether it matters is the oracle's to say (``verify``)."""
    barrier_at = {s["barrier"] for s in steps}
    stretches: list[list[Cell]] = [[]]
    for c in path[1:-1]:
        if c in barrier_at:
            stretches.append([])
        elif c not in taken:
            stretches[-1].append(c)
    lay = by_name(tile).lay
    assert lay is not None, tile
    return lay(Laying(frozenset(floor), tuple(path), tuple(tuple(st) for st in stretches), max_saving), rng)


def _doorlike(c: Cell, floor: set[Cell]) -> bool:
    x, y = c
    horiz = (x - 1, y) in floor and (x + 1, y) in floor and (x, y - 1) not in floor and (x, y + 1) not in floor
    vert = (x, y - 1) in floor and (x, y + 1) in floor and (x - 1, y) not in floor and (x + 1, y) not in floor
    return horiz or vert


def _ring(c: Cell, r: int) -> list[Cell]:
    return [(c[0] + dx, c[1] + dy) for dx in range(-r, r + 1) for dy in range(-r, r + 1)
            if (dx, dy) != (0, 0) and abs(dx) + abs(dy) <= r]


def _assemble(params: GenParams, seed: int, attempt: int, maze_id: str, floor: set[Cell],
              kinds: tuple[str, ...], placed: dict, rng: random.Random) -> Maze | None:
    floor = set(floor)
    if len(kinds) <= len(COLORS):
        colors = rng.sample(COLORS, len(kinds))
    else:  # more steps than colours: each door keeps a colour of its own, gates (named by their switches) share
        door_colours = iter(rng.sample(COLORS, kinds.count("key")))
        colors = [next(door_colours) if k == "key" else rng.choice(COLORS) for k in kinds]
    door_colors = {colors[i] for i, k in enumerate(kinds) if k == "key"}
    keys: list[dict] = []
    switches: list[dict] = []
    doors: list[dict] = []
    gates: list[dict] = []
    chain_refs: list[tuple[dict, dict]] = []
    for i, (kind, st) in enumerate(zip(kinds, placed["steps"], strict=True)):
        c = colors[i]
        en: dict[str, Any]
        bar: dict[str, Any]
        if kind == "key":
            en = {"kind": "key", "color": c, "pos": list(st["enabler"])}
            bar = {"kind": "door", "color": c, "pos": list(st["barrier"]), "state": "locked"}
            keys.append(en)
            doors.append(bar)
        else:
            bar = {"kind": "gate", "color": c, "pos": list(st["barrier"])}
            en = {"kind": "switch", "color": c, "pos": list(st["enabler"]), "on": False, "controls": [bar]}
            if kind == "switch2":
                en["controls"].append(chain_refs[-1][1])  # also holds the previous gate open
            switches.append(en)
            gates.append(bar)
        chain_refs.append((en, bar))
    spare = [c for c in COLORS if c not in door_colors]
    decoys: list[dict] = []
    d: dict[str, Any]
    for cell in placed["decoy_keys"]:
        d = {"kind": "key", "color": rng.choice(spare), "pos": list(cell)}
        keys.append(d)
        decoys.append(d)
    for cell in placed["decoy_switches"]:
        d = {"kind": "switch", "color": rng.choice(COLORS), "pos": list(cell), "on": False, "controls": []}
        switches.append(d)
        decoys.append(d)
    deadends: list[list[Cell]] = []
    route = set(placed["path"])
    for _ in range(params.deadends):
        anchors = sorted(c for c in floor if c not in placed["used"] and c != placed["goal"])
        spur = carve_deadend(floor, params.width, params.height, anchors, rng, rng.randint(2, 5))
        if spur is None:
            occupied = set(placed["used"]) | {c for d in deadends for c in d}
            spur = natural_deadend(floor, occupied, route)
        if spur is None:
            return None
        floor |= set(spur)
        deadends.append(spur)
    # ids say nothing of a role: keys and switches are numbered in a shuffled order
    rng.shuffle(keys)
    rng.shuffle(switches)
    for prefix, group in (("k", keys), ("d", doors), ("s", switches), ("g", gates)):
        for j, o in enumerate(group, 1):
            o["id"] = f"{prefix}{j}"
    objects = []
    for o in keys + doors + switches + gates:
        out = {"id": o["id"], **{k: v for k, v in o.items() if k != "id"}}
        if o["kind"] == "switch":
            out["controls"] = [g["id"] for g in o["controls"]]
        objects.append(out)
    if params.tile != "none":
        taken = set(placed["used"]) | {c for d in deadends for c in d}
        tiles = _tiles(params.tile, floor, placed["path"], placed["steps"], taken, placed["max_saving"], rng)
        if tiles is None:
            return None
        objects += tiles
    start = placed["start"]
    doc = {
        "format": FORMAT,
        "id": maze_id,
        **({"ruleset": params.ruleset} if params.ruleset != MINIGRID else {}),
        "grid": grid_rows(params.width, params.height, floor),
        "start": {"pos": [start[0], start[1]], "dir": ("east", "south", "west", "north")[start[2]]},
        "goal": list(placed["goal"]),
        "objects": objects,
        "meta": {
            "category": params.category,
            "topology": params.topology,
            "chain": [[en["id"], bar["id"]] for en, bar in chain_refs],
            "distractors": [d["id"] for d in decoys] + [f"deadend:{j}" for j in range(1, len(deadends) + 1)],
            "source": "generated",
            "generator": {
                "version": GENERATOR_VERSION,
                "seed": seed,
                "attempt": attempt,
                "id": maze_id,
                "params": params.to_json(),
                "chain_kinds": list(kinds),
                "deadends": [[list(c) for c in d] for d in deadends],
            },
        },
    }
    return maze_from_dict(doc, f"<generated {maze_id}>")


# ---- checking and the retry loop ----------------------------------------------------------


def verify(maze: Maze, band: tuple[int, int] | None = None, tile: str = "none",
           cap: int = STATE_CAP) -> tuple[int | None, str | None]:
    """(optimal actions, None) when the maze passes the oracle, the band, the four checks and,
    for a ``tile``, the tile's test (``tile_matters``), else (optimal actions or None, the first
    reason it fails). ``cap``: the most states each search may take."""
    from env.oracle import solve

    sol = solve(maze, cap=cap)
    opt = sol.optimal_actions
    if opt is None:  # unsolvable or undecided
        return None, f"oracle: {sol.status}"
    if band is not None and not band[0] <= opt <= band[1]:
        return opt, "band"
    if tile != "none" and not tile_matters(maze, tile, opt, cap):
        return opt, "tile_matters"
    for r in _run_checks(maze, cap):
        if not r.passed and not trap_by_the_rulebook(maze, r):
            return opt, f"{r.check}"
    return opt, None


def tile_matters(maze: Maze, tile: str, optimal: int, cap: int = STATE_CAP) -> bool:
    """A later mechanism matters when taking it out changes the optimal count: its removal twin
    (``env.variants``: the tiles' cells left as floor) must be solvable, in fewer actions for a
    shortcut (``Mechanic.shortens``: the plan takes it), in more for anything else (the plan pays
    for the detour, the wait or the ride the tile costs)."""
    from env.oracle import solve
    from env.variants import Variant, ablate

    twin = ablate(maze, TILE_TWIN[tile])
    twin_opt = solve(twin.maze, cap=cap).optimal_actions if isinstance(twin, Variant) else None
    if twin_opt is None:
        return False
    return optimal < twin_opt if by_name(tile).shortens else optimal > twin_opt


def trap_by_the_rulebook(maze: Maze, failed) -> bool:
    """Under multinet-r1 picking up a decoy key is final (no swap, no drop), as with the study's own
    wrong-colour keys: the distractor check reports it, and the generator accepts it."""
    return (maze.ruleset in STUDY_RULESETS and failed.check == "distractor_safety"
            and failed.object_id in {k.id for k in maze.keys})


def _run_checks(maze: Maze, cap: int = STATE_CAP) -> list:
    try:
        from env.checks import run_checks
    except ImportError:  # the checks module is optional while it is being built
        return []
    return run_checks(maze, cap)


def idle_switches_out(maze: Maze) -> Maze:
    """The maze without its idle switches, for the checks of a scaled candidate (``GenParams.scaled``).

    Under minigrid rules a switch that controls nothing and has no door beside it (the generator
    keeps every switch off a door's doorstep) differs from floor only in its own on/off state:
    toggling it changes nothing any move, pickup or toggle reads. So the maze without it has the
    same optimal count, every check the same verdict (a switch that controls nothing cannot make
    the goal unreachable), and half the states per such switch. Other rulesets' switches (hold,
    one-shot) are kept.
    """
    if maze.ruleset != MINIGRID:
        return maze
    doors = {d.pos for d in maze.doors}
    idle = {s.id for s in maze.switches
            if not s.controls and s.switch_type == "toggle" and not any((s.pos[0] + dx, s.pos[1] + dy) in doors for dx, dy in _STEPS)}
    if not idle:
        return maze
    d = maze.to_dict()
    d["objects"] = [o for o in d["objects"] if o["id"] not in idle]
    if "meta" in d:
        d["meta"]["distractors"] = [e for e in d["meta"].get("distractors", []) if e not in idle]
    return maze_from_dict(d, f"<{maze.id} without its idle switches>")


def generate(params: GenParams, seed: int, maze_id: str = "generated", max_attempts: int = 200,
             first_attempt: int = 0) -> Generated:
    """The first candidate from sub-seeds ``first_attempt, first_attempt + 1, ...`` that passes."""
    stats = GenStats()
    for attempt in range(first_attempt, first_attempt + max_attempts):
        maze = build_candidate(params, seed, attempt, maze_id)
        if maze is None:
            stats.unplaced += 1
            continue
        stats.candidates += 1
        checked = idle_switches_out(maze) if params.scaled else maze
        opt, why = verify(checked, params.band, params.tile, params.state_cap)
        if why is None:
            assert opt is not None  # verify passes solved mazes only
            stats.accepted += 1
            return Generated(maze, opt, stats)
        stats.rejected[why] = stats.rejected.get(why, 0) + 1
    raise GenerationError(
        f"no maze for {params.to_json()} seed {seed} in {max_attempts} attempts "
        f"({stats.candidates} checked, rejected: {stats.rejected or 'none'}, {stats.unplaced} unplaced)",
        stats,
    )


def regenerate(meta: Meta | Mapping[str, Any]) -> Maze:
    """Rebuild a generated maze from its ``meta`` (a ``Meta`` record or a dict)."""
    gen = meta.generator if isinstance(meta, Meta) else dict(meta).get("generator", {})
    if not gen or "params" not in gen:
        raise BadInput("meta", "generator", "has no generator parameters: not a generated maze")
    if gen.get("version") != GENERATOR_VERSION:
        raise BadInput("meta", "generator.version",
                       f"{gen.get('version')!r}: this generator is version {GENERATOR_VERSION}")
    try:
        params = GenParams.from_json(gen["params"])
        seed, attempt, maze_id = int(gen["seed"]), int(gen["attempt"]), str(gen["id"])
    except (KeyError, TypeError, ValueError) as e:
        raise BadInput("meta", "generator", f"not a generator record: {e}") from None
    maze = build_candidate(params, seed, attempt, maze_id)
    if maze is None:
        raise BadInput("meta", "generator", "these parameters do not give a maze with this generator")
    return maze
