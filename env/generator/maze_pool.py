"""The maze pool and the stratified sets drawn from it.

``pool_recipe(count, seed)`` lays out what each pool maze should be (grid, optimal-path band,
category, chain pattern, topology, distractors) from quotas that give the study's selection
room to spare in every stratum; ``build_one`` generates one maze from its spec; the command
line runs the specs on all cores. ``select_sets`` draws the eval and held-out sets with an
integer program over the study's constraints (``env.generator.strata``), so a feasible draw is
always found when one exists.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from env.errors import BadInput
from env.files import atomic_folder, atomic_write
from env.generator.generator import GenerationError, GenParams, GenStats, generate
from env.generator.strata import (
    STUDY_EVAL,
    Constraint,
    Witness,
    achieved,
    constraints_for,
    largest_remainder,
)
from env.maze import MINIGRID, MULTINET_PR57, Maze, load_maze, maze_from_dict
from env.mechanics import by_name, generated
from env.sets import LONG_HORIZON_BANDS
from env.study_facts import STUDY_MODEL_COUNT

MANIFEST_FORMAT = "gridbench.mazeset/1"
PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600  # a sealed set's folder and files: its owner's alone

# ---- manifest entries -----------------------------------------------------------------------


def counts(maze: Maze) -> dict[str, int]:
    return {"key": len(maze.keys), "door": len(maze.doors), "switch": len(maze.switches), "gate": len(maze.gates)}


# what a set's recipe records in a maze's meta and its manifest entry: the discovery set's kind and
# band, the long-horizon set's band
SET_LABELS = ("discovery", "long_horizon")


def manifest_entry(maze: Maze, optimal: int) -> dict[str, Any]:
    meta = maze.meta
    gen = (meta.generator if meta else {}) or {}
    return {
        "id": maze.id,
        "file": f"{maze.id}.json",
        "optimal_actions": optimal,
        "grid": f"{maze.width}x{maze.height}",
        "category": maze.category,
        "topology": meta.topology if meta else None,
        "chain_pattern": (gen.get("params") or {}).get("chain"),
        "source": meta.source if meta else None,
        "counts": counts(maze),
        "chain_length": len(meta.chain) if meta else 0,
        "distractors": len(meta.distractors) if meta else 0,
        "checksum": maze.checksum,
        **{label: dict(meta.model_extra[label]) for label in SET_LABELS
           if meta and meta.model_extra and label in meta.model_extra},
    }


def content_key(maze: Maze) -> str:
    """What makes two mazes the same maze: everything but the id and the meta."""
    d = maze.to_dict()
    d.pop("id")
    d.pop("meta", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()


def write_set(folder: Path, name: str, mazes: list[Maze], entries: list[dict[str, Any]],
              provenance: dict[str, Any], extra: Callable[[Path], None] | None = None,
              header: dict[str, Any] | None = None, private: bool = False) -> None:
    """Write a set folder whole: into a temporary sibling first, then swapped into place.
    ``header``: more manifest fields, after the provenance (a variant set's ``variants``).
    ``private`` (a sealed set): the folder is its owner's alone (0700) before anything is written
    in it, and every file in it ends 0600."""
    with atomic_folder(folder) as tmp:
        if private:
            os.chmod(tmp, PRIVATE_FOLDER)
        for m in mazes:
            (tmp / f"{m.id}.json").write_text(m.to_json(), encoding="utf-8")
        manifest = {"format": MANIFEST_FORMAT, "set": name, "count": len(entries), "provenance": provenance,
                    **(header or {}), "mazes": entries}
        (tmp / "manifest.json").write_text(manifest_text(manifest), encoding="utf-8")
        if extra is not None:
            extra(tmp)
        if private:
            for p in tmp.iterdir():
                os.chmod(p, PRIVATE_FILE)


def manifest_text(manifest: dict[str, Any]) -> str:
    """The header fields indented, then one line per maze: diffs show which maze changed. A list
    of records in the header (a variant set's ``not_written``) is written one record a line too."""
    listed = [k for k, v in manifest.items() if k == "mazes" or (isinstance(v, list) and v and
                                                                   all(isinstance(e, dict) for e in v))]
    head = {k: v for k, v in manifest.items() if k not in listed}
    body = json.dumps(head, indent=1)[:-2]
    for k in sorted(listed, key=lambda k: k == "mazes"):  # the mazes last
        lines = ",\n  ".join(json.dumps(e) for e in manifest[k])
        body += f',\n {json.dumps(k)}: [\n  {lines}\n ]'
    return body + "\n}\n"


def read_set(folder: Path) -> tuple[dict[str, Any], list[Maze]]:
    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    mazes = [load_maze(folder / e["file"]) for e in manifest["mazes"]]
    return manifest, mazes


# ---- the pool recipe ------------------------------------------------------------------------

# (grid side, band low, band high, share of the pool; the shares add up to 214): every eval and
# held-out stratum gets at least twice what the two sets need, in the finer bands the study's
# two band systems cut each other into (26-30 and 31-39; 40-45 and 46-59; 61-79 and 81+, with 60
# and 80 in no band). 10x10 starts at 48 where the study's 46-59 mazes mostly must (the eval
# set's "optimal >= 48" row). Two one-maze cells hold the ends of the study's pool, 9 and 106.
POOL_CELLS: tuple[tuple[int, int, int, int], ...] = (
    (8, 9, 9, 1), (8, 10, 19, 9), (8, 20, 25, 12), (8, 26, 30, 30), (8, 31, 39, 8), (8, 40, 45, 8),
    (10, 20, 25, 6), (10, 26, 30, 14), (10, 31, 39, 8), (10, 40, 45, 26), (10, 48, 59, 14), (10, 61, 79, 10),
    (14, 46, 59, 8), (14, 61, 79, 24), (14, 81, 105, 35), (14, 106, 106, 1),
)
# where a walk alone can fill the band (navigation-only mazes): 8x8 up to 25, 10x10 up to 39
SCALE_CELLS = {(8, 10), (8, 20), (10, 20), (10, 26), (10, 31), (14, 61)}
# where the study's solves can fall (no switch, no distractor, at most 45 actions on 8x8 and
# 10x10): a share of the mechanism mazes there has keys and doors only
SOLVABLE_CELLS = {(8, 20), (8, 26), (8, 31), (8, 40), (10, 20), (10, 26), (10, 31), (10, 40)}
# mechanism specs of a solvable cell below this share of the cell (scale ones come first) have
# keys and doors only
KEY_ONLY_UNTIL = 0.40
SHORT_CHAINS = ("key_door", "switch_gate", "gate_behind_door", "door_behind_gate", "two_switches_one_gate")
# a single step cannot stretch a small grid's plan this far
LONG_CHAINS = ("gate_behind_door", "door_behind_gate", "two_switches_one_gate", "mixed_sequence",
               "switch_sequence", "key_sequence")
CHAIN_WEIGHTS = {
    "gate_behind_door": 18, "door_behind_gate": 18, "mixed_sequence": 14, "switch_gate": 12,
    "two_switches_one_gate": 10, "switch_sequence": 6, "key_door": 14, "key_sequence": 8,
}
TOPOLOGY_WEIGHTS = {"perfect": 3, "rooms": 3, "open": 2, "winding": 2}
# where a layout can hardly stretch a plan that far, others take its share (measured: open
# floors rarely reach 80 actions on 14x14; 8x8 reaches 40 mostly through partitioned floors)
TOPOLOGY_WEIGHTS_BY_CELL = {
    (8, 40): {"open": 2, "perfect": 2},
    (10, 61): {"perfect": 4, "winding": 1},
    (14, 81): {"perfect": 5, "winding": 4, "rooms": 1},
    (14, 106): {"perfect": 5, "winding": 4, "rooms": 1},
}
FALLBACK_ORDER = ("perfect", "winding", "open", "rooms")


@dataclass(frozen=True)
class PoolSpec:
    index: int  # 1-based; the maze id is the prefix and %04d
    seed: int
    params: GenParams
    prefix: str = "p"
    keep_chain: bool = False  # no fallback to another chain pattern (the discovery set's kinds)
    discovery: tuple[str, str] | None = None  # (mechanism kind, band name) in the discovery set
    long_horizon: str | None = None  # the path band's name in the long-horizon set

    @property
    def maze_id(self) -> str:
        return f"{self.prefix}{self.index:04d}"

    def labels(self) -> dict[str, dict[str, str]]:
        """What the maze's meta says of its place in the set (``SET_LABELS``), beside ``meta.generator``."""
        out = {}
        if self.discovery:
            out["discovery"] = {"kind": self.discovery[0], "band": self.discovery[1]}
        if self.long_horizon:
            out["long_horizon"] = {"band": self.long_horizon}
        return out


def pool_recipe(count: int, seed: int, ruleset: str = MINIGRID) -> list[PoolSpec]:
    """``count`` specs in the proportions of ``POOL_CELLS``: in each cell about 14% scale (where
    a walk can fill the band), 28% distractor, the rest mechanism, and in the solvable cells the
    first mechanism specs up to ``KEY_ONLY_UNTIL`` with keys and doors only (every third of them
    two key-door steps). Deterministic in ``(count, seed)``; ``ruleset`` changes only the rules
    the mazes are made for, not the draw."""
    rng = random.Random(f"gridbench-pool:{seed}:{count}")
    shares = {i: c[3] for i, c in enumerate(POOL_CELLS)}
    per_cell = largest_remainder(shares, count) if count else {}
    drawn: list[GenParams] = []
    for i, (side, lo, hi, _) in enumerate(POOL_CELLS):
        n = per_cell.get(i, 0)
        key_only = 0
        for j in range(n):
            u = (j + 0.5) / n
            chain = None
            if (side, lo) in SCALE_CELLS and u < 0.14:
                category = "scale"
            elif u > 0.72:
                category = "distractor"
            else:
                category = "mechanism"
                if (side, lo) in SOLVABLE_CELLS and u < KEY_ONLY_UNTIL:
                    long_for_grid = side == 8 and lo >= 40
                    chain = "key_sequence" if long_for_grid or key_only % 3 == 1 else "key_door"
                    key_only += 1
            drawn.append(_spec_params(rng, side, lo, hi, category, chain))
    rng.shuffle(drawn)
    out = []
    for k, p in enumerate(drawn, 1):
        # under multinet-pr57 every maze also gets one of the later mechanisms, in turn
        tile = POOL_TILES[k % len(POOL_TILES)] if ruleset == MULTINET_PR57 else "none"
        out.append(PoolSpec(index=k, seed=rng.randrange(2**31), params=replace(p, ruleset=ruleset, tile=tile)))
    return out


# the later tiles of the first edition (Mechanic.edition), which the multinet-pr57 pool gives its
# mazes in turn; a later edition's tiles are drawn by the discovery set and GenParams.tile
POOL_TILES = tuple(m.name for m in generated() if m.edition == 1)
# the discovery set: one mechanism per maze, each kind in each path band equally often; the
# kinds of the first edition, then each kind a later edition added
FIRST_DISCOVERY_KINDS = ("switch_gate", *POOL_TILES)
DISCOVERY_KINDS = (*FIRST_DISCOVERY_KINDS, *(m.name for m in generated() if m.edition > 1))
DISCOVERY_BANDS = {"short": (8, 15, 30), "medium": (12, 31, 50), "long": (16, 51, 80)}  # side, low, high
# a tile the route must go round (``Mechanic.detours``) needs layouts with loops
LOOP_TOPOLOGIES = {"open": 1, "rooms": 1}


def discovery_recipe(count: int, seed: int) -> list[PoolSpec]:
    """``count`` (a multiple of kinds x bands) ``multinet-pr57`` specs, the same number in every
    (mechanism kind, path band) cell: a switch and its gate (chain ``switch_gate``), or one later
    tile on a walk (chain ``none``) laid where it matters. The first edition's kinds are drawn from
    one random stream as they always were; each later kind from a stream of its own, after them,
    so adding a mechanic leaves every earlier maze of the set as it was."""
    cells = [(k, b) for k in DISCOVERY_KINDS for b in DISCOVERY_BANDS]
    if count % len(cells):
        raise BadInput("--count", "", f"{count}: the discovery set needs a multiple of {len(cells)} "
                                      f"({len(DISCOVERY_KINDS)} kinds x {len(DISCOVERY_BANDS)} bands)")
    per_cell = count // len(cells)
    first = [(k, b) for k in FIRST_DISCOVERY_KINDS for b in DISCOVERY_BANDS]
    rng = random.Random(f"gridbench-discovery:{seed}:{per_cell * len(first)}")
    drawn = [(rng, *first[k % len(first)]) for k in range(per_cell * len(first))]
    for kind in DISCOVERY_KINDS[len(FIRST_DISCOVERY_KINDS):]:
        own = random.Random(f"gridbench-discovery:{seed}:{per_cell}:{kind}")
        drawn += [(own, kind, band) for _ in range(per_cell) for band in DISCOVERY_BANDS]
    out = []
    for k, (stream, kind, band) in enumerate(drawn):
        side, lo, hi = DISCOVERY_BANDS[band]
        loops = kind != "switch_gate" and by_name(kind).detours
        topology = _weighted(stream, LOOP_TOPOLOGIES if loops else TOPOLOGY_WEIGHTS)
        chain, tile = ("switch_gate", "none") if kind == "switch_gate" else ("none", kind)
        params = GenParams(width=side, height=side, topology=topology, chain=chain, band=(lo, hi),
                           ruleset=MULTINET_PR57, tile=tile)
        out.append(PoolSpec(index=k + 1, seed=stream.randrange(2**31), params=params, prefix="d",
                            keep_chain=True, discovery=(kind, band)))
    return out


# the long-horizon set: the eval set's strata carried on past the study's longest plans, one grid
# per path band (env.sets.LONG_HORIZON_BANDS: side, low, high)
LONG_HORIZON_COUNT = 36
# layouts that stretch a plan that far: mostly one-cell corridors (measured: open floors and most
# rooms layouts fall short, and every miss costs a full oracle search on a large grid)
LONG_HORIZON_TOPOLOGIES = {"perfect": 5, "winding": 4, "rooms": 1}
# the eval set's category shares (3 scale, 37 mechanism, 10 distractor of 50), as the study gives them
EVAL_CATEGORIES = {c.what.removeprefix("category "): c.target for c in STUDY_EVAL if c.group == "category"}
RECIPES = ("pool", "discovery", "long-horizon")


def long_horizon_recipe(count: int, seed: int) -> list[PoolSpec]:
    """``count`` (a multiple of the bands) specs, the same number in every band of
    ``LONG_HORIZON_BANDS`` and in each band the eval set's category shares (largest remainders),
    chains and distractors drawn as the pool's are. Deterministic in ``(count, seed)``."""
    if count % len(LONG_HORIZON_BANDS):
        raise BadInput("--count", "", f"{count}: the long-horizon set needs a multiple of "
                                      f"{len(LONG_HORIZON_BANDS)} (its path bands)")
    rng = random.Random(f"gridbench-long-horizon:{seed}:{count}")
    per_band = count // len(LONG_HORIZON_BANDS)
    out: list[PoolSpec] = []
    for band, (side, lo, hi) in LONG_HORIZON_BANDS.items():
        for category, n in largest_remainder(EVAL_CATEGORIES, per_band).items():
            for _ in range(n):
                p = _spec_params(rng, side, lo, hi, category, topologies=LONG_HORIZON_TOPOLOGIES)
                out.append(PoolSpec(index=len(out) + 1, seed=rng.randrange(2**31), params=p, prefix="lh",
                                    long_horizon=band))
    return out


def recipe_specs(recipe: str, count: int, seed: int, ruleset: str = MINIGRID) -> list[PoolSpec]:
    """The specs of a named recipe; ``ruleset`` is the pool recipe's alone."""
    if recipe == "discovery":
        return discovery_recipe(count, seed)
    if recipe == "long-horizon":
        return long_horizon_recipe(count, seed)
    return pool_recipe(count, seed, ruleset)


def _weighted(rng: random.Random, weights: dict[str, int], allowed: Iterable[str] | None = None) -> str:
    items = [(k, w) for k, w in weights.items() if allowed is None or k in allowed]
    return rng.choices([k for k, _ in items], weights=[w for _, w in items])[0]


def _spec_params(rng: random.Random, side: int, lo: int, hi: int, category: str,
                 chain: str | None = None, topologies: dict[str, int] | None = None) -> GenParams:
    if category == "scale":
        topology = _weighted(rng, {"winding": 3, "perfect": 1 if hi <= 39 else 0, "rooms": 1 if hi <= 25 else 0})
        return GenParams(width=side, height=side, topology=topology, chain="none", band=(lo, hi))
    long_for_grid = (side == 8 and lo >= 40) or (side == 10 and lo >= 60)
    allowed = (("key_door", "switch_gate") if hi <= 14 else SHORT_CHAINS if hi <= 25
               else LONG_CHAINS if long_for_grid else None)
    chain = chain or _weighted(rng, CHAIN_WEIGHTS, allowed)
    mechanisms = 3 if (lo >= 60 and chain.endswith("sequence") and (side < 14 or rng.random() < 0.5)) else 2
    topology = _weighted(rng, topologies or TOPOLOGY_WEIGHTS_BY_CELL.get((side, lo), TOPOLOGY_WEIGHTS))
    dk = ds = de = 0
    if category == "distractor":
        for _ in range(rng.choice((1, 1, 2, 3))):
            kind = rng.choice(("decoy_key", "decoy_switch", "deadend"))
            if kind == "decoy_key":
                dk += 1
            elif kind == "decoy_switch":
                ds += 1
            else:
                de += 1
    return GenParams(width=side, height=side, topology=topology, chain=chain, mechanisms=mechanisms,
                     decoy_keys=dk, decoy_switches=ds, deadends=de, band=(lo, hi))


def build_one(spec: PoolSpec, first_attempt: int = 0, attempts: int = 40) -> dict[str, Any]:
    """Generate one pool maze. When its topology cannot fill the band, the others are tried in
    a fixed order, then a three-step mixed chain; the maze's meta records what worked."""
    stats = GenStats()
    base = spec.params.to_json()
    tries = [(dict(base), attempts)]
    tries += [({**base, "topology": t}, attempts // 3) for t in FALLBACK_ORDER if t != base["topology"]]
    if spec.params.chain != "none" and not spec.keep_chain:
        for t in ("open", "perfect"):
            tries.append(({**base, "topology": t, "chain": "mixed_sequence", "mechanisms": 3}, attempts // 2))
    last = ""
    for params_json, n in tries:
        params = GenParams.from_json(params_json)
        try:
            g = generate(params, spec.seed, spec.maze_id, max_attempts=n, first_attempt=first_attempt)
        except GenerationError as e:
            last = str(e)
            stats.add(e.stats)
            continue
        stats.add(g.stats)
        maze = g.maze.to_dict()
        maze["meta"].update(spec.labels())
        return {"index": spec.index, "maze": maze, "optimal": g.optimal_actions,
                "stats": stats.__dict__}
    return {"index": spec.index, "error": last, "stats": stats.__dict__}


# ---- the stratified draw --------------------------------------------------------------------


@dataclass
class Selection:
    eval_ids: list[str]
    heldout_ids: list[str]
    witness: Witness  # per solve reading, the eval mazes the study's solves can fall on
    eval_rows: list[tuple[Constraint, int]]  # each constraint with the count the draw achieved
    heldout_rows: list[tuple[Constraint, int]]
    met: bool


def select_sets(entries: list[dict[str, Any]], n_eval: int, n_heldout: int, seed: int) -> Selection:
    """Draw disjoint eval and held-out sets meeting their constraints (``env.generator.strata``),
    with a solve witness per reading inside eval: an integer program whose random objective
    (from ``seed``) makes the draw a random one among the feasible. Each constraint has a costly
    slack, so a pool that cannot meet a row still gives a draw, and ``met`` says whether every
    row holds."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    ev_c, ho_c = constraints_for(n_eval), constraints_for(n_heldout, heldout=True)
    n = len(entries)
    if n < n_eval + n_heldout:
        raise ValueError(f"the pool of {n} mazes cannot hold {n_eval} + {n_heldout} disjoint mazes")
    readings = list(dict.fromkeys(c.reading for c in ev_c if c.reading))
    # variable blocks of n: x (eval), y (held-out), then per reading v (the maze is solved) and
    # w (solves it takes, up to one per model); then an (under, over) slack pair per constraint
    block = {"eval": 0, "heldout": 1}
    for r in readings:
        block[f"v {r}"], block[f"w {r}"] = len(block), len(block) + 1
    rows_of = [("heldout", c) for c in ho_c]
    for c in ev_c:
        var = {"set": "eval", "solved mazes": f"v {c.reading}", "solved episodes": f"w {c.reading}"}[c.over]
        rows_of.append((var, c))
    nb = len(block) * n
    nv = nb + 2 * len(rows_of)
    a: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(coef: dict[int, float], low: float, high: float) -> np.ndarray:
        row = np.zeros(nv)
        for j, v in coef.items():
            row[j] = v
        a.append(row)
        lo.append(low)
        hi.append(high)
        return row

    for i, (name, c) in enumerate(rows_of):
        b0 = block[name] * n
        row = add({b0 + j: c.per_maze(e) for j, e in enumerate(entries)}, c.target,
                  c.target if c.op == "==" else np.inf)
        row[nb + 2 * i] = 1.0  # under: counts as if selected
        row[nb + 2 * i + 1] = -1.0  # over
    for name, size in (("eval", n_eval), ("heldout", n_heldout)):
        add({block[name] * n + j: 1 for j in range(n)}, size, size)
    for j in range(n):
        add({j: 1, n + j: 1}, 0, 1)  # disjoint
        for r in readings:
            v, w = block[f"v {r}"] * n + j, block[f"w {r}"] * n + j
            add({v: 1, j: -1}, -1, 0)  # a solved maze is an eval maze
            add({w: 1, v: -STUDY_MODEL_COUNT}, -np.inf, 0)  # solves only on a solved maze, one per model
            add({w: 1, v: -1}, 0, np.inf)  # and at least one there
    rng = np.random.default_rng(seed)
    cost = np.concatenate([rng.random(n), rng.random(n), np.zeros(nb - 2 * n), np.full(nv - nb, 1000.0)])
    upper = np.concatenate([np.ones(2 * n)] + [np.ones(n) if b.startswith("v") else np.full(n, STUDY_MODEL_COUNT)
                                               for b in list(block)[2:]] + [np.full(nv - nb, np.inf)])
    integrality = np.concatenate([np.ones(nb), np.zeros(nv - nb)])
    res = milp(cost, constraints=LinearConstraint(np.array(a), lo, hi), integrality=integrality,
               bounds=Bounds(np.zeros(nv), upper))
    if res.x is None:
        raise ValueError(f"no draw of {n_eval} + {n_heldout} mazes from this pool: {res.message}")
    x = np.round(res.x).astype(int)
    ev = [entries[j] for j in range(n) if x[j]]
    ho = [entries[j] for j in range(n) if x[n + j]]
    witness: Witness = {r: [(entries[j], int(x[block[f"w {r}"] * n + j])) for j in range(n)
                            if x[block[f"v {r}"] * n + j]] for r in readings}
    ev_rows = [(c, achieved(c, ev, witness)) for c in ev_c]
    ho_rows = [(c, achieved(c, ho)) for c in ho_c]
    return Selection(
        eval_ids=sorted(e["id"] for e in ev), heldout_ids=sorted(e["id"] for e in ho), witness=witness,
        eval_rows=ev_rows, heldout_rows=ho_rows, met=all(c.holds(got) for c, got in ev_rows + ho_rows),
    )


def witness_ids(witness: Witness) -> dict[str, list[str]]:
    """Per reading, the witness's maze ids, an id once per solve it takes."""
    return {r: sorted(e["id"] for e, times in solves for _ in range(times)) for r, solves in witness.items()}


def constraint_rows(rows: list[tuple[Constraint, int]]) -> list[dict[str, Any]]:
    """The rows as a manifest's provenance records them."""
    return [{"what": c.what, "target": c.wanted, "achieved": got} for c, got in rows]


# ---- the contact sheet ----------------------------------------------------------------------


def contact_sheet(mazes: list[Maze], entries: list[dict[str, Any]], columns: int = 10, tile: int = 12,
                  side: int = 14) -> bytes:
    """One PNG with every maze's start frame, labelled with its id, optimal actions and category.
    Each cell holds a ``side`` x ``side`` grid at ``tile`` pixels a square; a larger maze is drawn
    with smaller squares to fit."""
    from PIL import Image, ImageDraw

    from env.render import render_state
    from env.state import initial_state

    cell = side * tile + 8
    label_h = 14
    rows = (len(mazes) + columns - 1) // columns
    sheet = Image.new("RGB", (columns * cell, rows * (cell + label_h)), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    by_id = {e["id"]: e for e in entries}
    for i, m in enumerate(mazes):
        frame = Image.fromarray(render_state(m, initial_state(m), min(tile, side * tile // max(m.width, m.height))))
        cx, cy = (i % columns) * cell, (i // columns) * (cell + label_h)
        sheet.paste(frame, (cx + (cell - frame.width) // 2, cy + (cell - frame.height) // 2))
        e = by_id.get(m.id, {})
        label = f"{m.id} {e.get('optimal_actions', '?')} {str(e.get('category', ''))[:4]}"
        draw.text((cx + 4, cy + cell), label, fill=(0, 0, 0))
    buf = io.BytesIO()
    sheet.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


# ---- building the whole pool ----------------------------------------------------------------


@dataclass
class PoolBuild:
    mazes: list[Maze]
    entries: list[dict[str, Any]]
    stats: GenStats
    errors: list[str]
    duplicates_redrawn: int


def build_command(count: int, seed: int | None, ruleset: str = MINIGRID, recipe: str = "pool") -> str:
    """The ``gridbench pool build`` that makes a set, as its manifest's provenance records it;
    ``seed`` None: a sealed set's, whose seed stays secret."""
    drawn = "--sealed" if seed is None else f"--seed {seed}"
    return (f"gridbench pool build --count {count} {drawn}"
            + (f" --recipe {recipe}" if recipe != "pool" else "" if ruleset == MINIGRID else f" --ruleset {ruleset}"))


def build_pool(count: int, seed: int, workers: int = 0,
               on_done: Callable[[int], None] | None = None, ruleset: str = MINIGRID,
               recipe: str = "pool") -> PoolBuild:
    """Generate every spec of ``recipe_specs(recipe, count, seed, ruleset)`` on ``workers``
    processes (0: all cores). A maze identical to
    one already built is drawn again from later sub-seeds, so the set is pairwise distinct; the
    result does not depend on the number of workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    specs = recipe_specs(recipe, count, seed, ruleset)
    workers = workers or os.cpu_count() or 1
    results: dict[int, dict[str, Any]] = {}
    stats = GenStats()
    # forkserver: workers never inherit the parent's threads (the progress bar's among them)
    ctx = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
        futures = [ex.submit(build_one, s) for s in specs]
        for fut in as_completed(futures):
            r = fut.result()
            results[r["index"]] = r
            stats.add(GenStats(**r["stats"]))
            if on_done:
                on_done(1)
    # duplicates are settled in index order, so the outcome is the same however work was split
    seen: dict[str, int] = {}
    redrawn = 0
    errors = []
    for spec in specs:
        r = results[spec.index]
        bump = 0
        while "maze" in r:
            key = content_key(maze_from_dict(r["maze"], spec.maze_id))
            if key not in seen:
                seen[key] = spec.index
                break
            bump += 1
            redrawn += 1
            r = build_one(spec, first_attempt=1000 * bump)
            stats.add(GenStats(**r["stats"]))
        results[spec.index] = r
        if "error" in r:
            errors.append(f"{spec.maze_id}: {r['error']}")
    mazes, entries = [], []
    for spec in specs:
        r = results[spec.index]
        if "maze" in r:
            m = maze_from_dict(r["maze"], spec.maze_id)
            mazes.append(m)
            entries.append(manifest_entry(m, r["optimal"]))
    return PoolBuild(mazes, entries, stats, errors, redrawn)



def refresh_manifest(folder: str | os.PathLike, name: str, provenance: dict[str, Any]) -> Path:
    """Rewrite ``manifest.json`` of a hand-kept set from its maze files (the oracle gives each
    maze's optimal actions)."""
    from env.oracle import solve

    folder = Path(folder)
    mazes = [load_maze(p) for p in sorted(folder.glob("*.json")) if p.name != "manifest.json"]
    entries = []
    for m in mazes:
        sol = solve(m)
        if sol.optimal_actions is None:  # unsolvable or undecided
            raise ValueError(f"{m.id}: {sol.status}")
        entries.append(manifest_entry(m, sol.optimal_actions))
    manifest = {"format": MANIFEST_FORMAT, "set": name, "count": len(entries), "provenance": provenance,
                "mazes": entries}
    return atomic_write(folder / "manifest.json", manifest_text(manifest))
