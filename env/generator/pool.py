"""The maze pool and the stratified sets drawn from it.

``pool_recipe(count, seed)`` lays out what each pool maze should be (grid, optimal-path band,
category, chain pattern, topology, distractors) from quotas that give the study's selection
room to spare in every stratum; ``build_one`` generates one maze from its spec; the command
line runs the specs on all cores. ``select_sets`` draws the eval and held-out sets with an
integer program over the strata, so a feasible draw is always found when one exists.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from env.generator.generator import GenerationError, GenParams, GenStats, generate
from env.maze import Maze, load_maze, maze_from_dict, save_maze

MANIFEST_FORMAT = "gridbench.mazeset/1"

# ---- strata ---------------------------------------------------------------------------------

BANDS: tuple[tuple[str, int, int], ...] = (
    ("20-25", 20, 25), ("26-39", 26, 39), ("40-59", 40, 59), ("60-79", 60, 79), ("80+", 80, 10**9),
)
GRIDS = ("8x8", "10x10", "14x14")
CATEGORIES = ("scale", "mechanism", "distractor")

# the study's eval set: 50 mazes
STUDY_EVAL = {
    "band": {"20-25": 2, "26-39": 12, "40-59": 14, "60-79": 8, "80+": 14},
    "grid": {"8x8": 11, "10x10": 19, "14x14": 20},
    "category": {"scale": 3, "mechanism": 37, "distractor": 10},
    "at_least": {"switch+gate": 35, "key+door": 20},
}
STUDY_EVAL_SIZE = 50


def band_of(optimal: int) -> str | None:
    for name, lo, hi in BANDS:
        if lo <= optimal <= hi:
            return name
    return None


def _largest_remainder(weights: dict[str, int], total: int) -> dict[str, int]:
    s = sum(weights.values())
    raw = {k: v * total / s for k, v in weights.items()}
    out = {k: int(r) for k, r in raw.items()}
    rest = total - sum(out.values())
    for k in sorted(raw, key=lambda k: (-(raw[k] - out[k]), list(raw).index(k)))[:rest]:
        out[k] += 1
    return out


def targets_for(size: int) -> dict[str, dict[str, int]]:
    """The study's strata scaled to ``size`` mazes (exactly the study's at 50)."""
    if size == STUDY_EVAL_SIZE:
        return json.loads(json.dumps(STUDY_EVAL))
    out: dict[str, dict[str, int]] = {}
    for axis in ("band", "grid", "category"):
        out[axis] = _largest_remainder(STUDY_EVAL[axis], size)
    out["at_least"] = {k: v * size // STUDY_EVAL_SIZE for k, v in STUDY_EVAL["at_least"].items()}
    return out


# ---- manifest entries -----------------------------------------------------------------------


def counts(maze: Maze) -> dict[str, int]:
    return {"key": len(maze.keys), "door": len(maze.doors), "switch": len(maze.switches), "gate": len(maze.gates)}


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
    }


def has_switch_gate(entry: dict[str, Any]) -> bool:
    return entry["counts"]["switch"] > 0 and entry["counts"]["gate"] > 0


def has_key_door(entry: dict[str, Any]) -> bool:
    return entry["counts"]["key"] > 0 and entry["counts"]["door"] > 0


def content_key(maze: Maze) -> str:
    """What makes two mazes the same maze: everything but the id and the meta."""
    d = maze.to_dict()
    d.pop("id")
    d.pop("meta", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()


def write_set(folder: Path, name: str, mazes: list[Maze], entries: list[dict[str, Any]],
              provenance: dict[str, Any], extra: Callable[[Path], None] | None = None) -> None:
    """Write a set folder whole: into a temporary sibling first, then swapped into place."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    for m in mazes:
        save_maze(m, tmp / f"{m.id}.json")
    manifest = {"format": MANIFEST_FORMAT, "set": name, "count": len(entries), "provenance": provenance,
                "mazes": entries}
    (tmp / "manifest.json").write_text(manifest_text(manifest), encoding="utf-8")
    if extra is not None:
        extra(tmp)
    old = folder.with_name(f".{folder.name}.old{os.getpid()}")
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    if old.exists():
        shutil.rmtree(old)


def manifest_text(manifest: dict[str, Any]) -> str:
    """The header fields indented, then one line per maze: diffs show which maze changed."""
    head = {k: v for k, v in manifest.items() if k != "mazes"}
    body = json.dumps(head, indent=1)[:-2]
    lines = ",\n  ".join(json.dumps(e) for e in manifest["mazes"])
    return f'{body},\n "mazes": [\n  {lines}\n ]\n}}\n'


def read_set(folder: Path) -> tuple[dict[str, Any], list[Maze]]:
    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    mazes = [load_maze(folder / e["file"]) for e in manifest["mazes"]]
    return manifest, mazes


# ---- the pool recipe ------------------------------------------------------------------------

# (grid side, band low, band high, share of the pool): the study's pool ran from 9 to 106
# optimal actions; every eval stratum gets at least twice what the eval and held-out sets need
POOL_CELLS: tuple[tuple[int, int, int, int], ...] = (
    (8, 9, 14, 6), (8, 15, 19, 10), (8, 20, 25, 14), (8, 26, 39, 30), (8, 40, 59, 4),
    (10, 20, 25, 6), (10, 26, 39, 16), (10, 40, 59, 40), (10, 60, 79, 8),
    (14, 40, 59, 10), (14, 60, 79, 26), (14, 80, 110, 44),
)
# where a walk alone can fill the band (navigation-only mazes): 8x8 up to 25, 10x10 up to 39
SCALE_CELLS = {(8, 9), (8, 15), (8, 20), (10, 20), (10, 26), (14, 40), (14, 60)}
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
    (10, 60): {"perfect": 4, "winding": 1},
    (14, 80): {"perfect": 5, "winding": 4, "rooms": 1},
}
FALLBACK_ORDER = ("perfect", "winding", "open", "rooms")


@dataclass(frozen=True)
class PoolSpec:
    index: int  # 1-based; the maze id is p%04d
    seed: int
    params: GenParams

    @property
    def maze_id(self) -> str:
        return f"p{self.index:04d}"


def pool_recipe(count: int, seed: int) -> list[PoolSpec]:
    """``count`` specs in the proportions of ``POOL_CELLS``; categories about 10% scale, 25%
    distractor, the rest mechanism. Deterministic in ``(count, seed)``."""
    rng = random.Random(f"gridbench-pool:{seed}:{count}")
    shares = {i: c[3] for i, c in enumerate(POOL_CELLS)}
    per_cell = _largest_remainder(shares, count) if count else {}
    specs: list[PoolSpec] = []
    for i, (side, lo, hi, _) in enumerate(POOL_CELLS):
        n = per_cell.get(i, 0)
        for j in range(n):
            # scale mazes stay where a walk alone can fill the band
            can_scale = (side, lo) in SCALE_CELLS
            u = (j + 0.5) / n
            if can_scale and u < 0.14:
                category = "scale"
            elif u > 0.72:
                category = "distractor"
            else:
                category = "mechanism"
            specs.append(_spec_params(rng, side, lo, hi, category))
    rng.shuffle(specs)
    out = []
    for k, p in enumerate(specs, 1):
        out.append(PoolSpec(index=k, seed=rng.randrange(2**31), params=p))
    return out


def _weighted(rng: random.Random, weights: dict[str, int], allowed: Iterable[str] | None = None) -> str:
    items = [(k, w) for k, w in weights.items() if allowed is None or k in allowed]
    return rng.choices([k for k, _ in items], weights=[w for _, w in items])[0]


def _spec_params(rng: random.Random, side: int, lo: int, hi: int, category: str) -> GenParams:
    if category == "scale":
        topology = _weighted(rng, {"winding": 3, "perfect": 1 if hi <= 39 else 0, "rooms": 1 if hi <= 25 else 0})
        return GenParams(width=side, height=side, topology=topology, chain="none", band=(lo, hi))
    long_for_grid = (side == 8 and lo >= 40) or (side == 10 and lo >= 60)
    allowed = (("key_door", "switch_gate") if hi <= 14 else SHORT_CHAINS if hi <= 25
               else LONG_CHAINS if long_for_grid else None)
    chain = _weighted(rng, CHAIN_WEIGHTS, allowed)
    mechanisms = 3 if (lo >= 60 and chain.endswith("sequence") and (side < 14 or rng.random() < 0.5)) else 2
    topology = _weighted(rng, TOPOLOGY_WEIGHTS_BY_CELL.get((side, lo), TOPOLOGY_WEIGHTS))
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
    if spec.params.chain != "none":
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
        return {"index": spec.index, "maze": g.maze.to_dict(), "optimal": g.optimal_actions,
                "stats": stats.__dict__}
    return {"index": spec.index, "error": last, "stats": stats.__dict__}


# ---- the stratified draw --------------------------------------------------------------------


@dataclass
class Selection:
    eval_ids: list[str]
    heldout_ids: list[str]
    eval_targets: dict[str, dict[str, int]]
    heldout_targets: dict[str, dict[str, int]]
    achieved_eval: dict[str, dict[str, int]]
    achieved_heldout: dict[str, dict[str, int]]
    met: bool


def tally(entries: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {
        "band": {b[0]: 0 for b in BANDS}, "grid": {g: 0 for g in GRIDS},
        "category": {c: 0 for c in CATEGORIES}, "at_least": {"switch+gate": 0, "key+door": 0},
    }
    for e in entries:
        b = band_of(e["optimal_actions"])
        if b:
            out["band"][b] += 1
        if e["grid"] in out["grid"]:
            out["grid"][e["grid"]] += 1
        if e["category"] in out["category"]:
            out["category"][e["category"]] += 1
        out["at_least"]["switch+gate"] += has_switch_gate(e)
        out["at_least"]["key+door"] += has_key_door(e)
    return out


def meets(achieved: dict[str, dict[str, int]], targets: dict[str, dict[str, int]]) -> bool:
    for axis, want in targets.items():
        for k, v in want.items():
            got = achieved[axis].get(k, 0)
            if (axis == "at_least" and got < v) or (axis != "at_least" and got != v):
                return False
    return True


def select_sets(entries: list[dict[str, Any]], n_eval: int, n_heldout: int, seed: int) -> Selection:
    """Draw disjoint eval and held-out sets meeting their strata: an integer program whose
    random objective (from ``seed``) makes the draw a random one among the feasible."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    ev_t, ho_t = targets_for(n_eval), targets_for(n_heldout)
    n = len(entries)
    rng = np.random.default_rng(seed)
    rows: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    # variables: x (eval) n, y (held-out) n, then one slack pair (under, over) per constraint
    groups = []
    for which, targets in ((0, ev_t), (1, ho_t)):
        for axis, want in targets.items():
            for k, v in want.items():
                mask = np.array([_in_stratum(e, axis, k) for e in entries], dtype=float)
                groups.append((which, axis, k, v, mask))
    n_slack = 2 * len(groups)
    nv = 2 * n + n_slack
    for gi, (which, axis, _k, v, mask) in enumerate(groups):
        row = np.zeros(nv)
        row[which * n: which * n + n] = mask
        row[2 * n + 2 * gi] = 1.0  # under: counts as if selected
        row[2 * n + 2 * gi + 1] = -1.0  # over
        rows.append(row)
        lo.append(v)
        hi.append(np.inf if axis == "at_least" else v)
    for which, size in ((0, n_eval), (1, n_heldout)):
        row = np.zeros(nv)
        row[which * n: which * n + n] = 1
        rows.append(row)
        lo.append(size)
        hi.append(size)
    for i in range(n):  # disjoint
        row = np.zeros(nv)
        row[i] = row[n + i] = 1
        rows.append(row)
        lo.append(0)
        hi.append(1)
    cost = np.concatenate([rng.random(n), rng.random(n), np.full(n_slack, 1000.0)])
    integrality = np.concatenate([np.ones(2 * n), np.zeros(n_slack)])
    upper = np.concatenate([np.ones(2 * n), np.full(n_slack, np.inf)])
    res = milp(cost, constraints=LinearConstraint(np.array(rows), lo, hi), integrality=integrality,
               bounds=Bounds(np.zeros(nv), upper))
    if res.x is None:
        raise ValueError(f"the pool of {n} mazes cannot hold {n_eval} + {n_heldout} disjoint mazes")
    x = res.x
    ev = [entries[i] for i in range(n) if x[i] > 0.5]
    ho = [entries[i] for i in range(n) if x[n + i] > 0.5]
    a_ev, a_ho = tally(ev), tally(ho)
    return Selection(
        eval_ids=sorted(e["id"] for e in ev), heldout_ids=sorted(e["id"] for e in ho),
        eval_targets=ev_t, heldout_targets=ho_t, achieved_eval=a_ev, achieved_heldout=a_ho,
        met=meets(a_ev, ev_t) and meets(a_ho, ho_t),
    )


def _in_stratum(e: dict[str, Any], axis: str, k: str) -> bool:
    if axis == "band":
        return band_of(e["optimal_actions"]) == k
    if axis == "grid":
        return e["grid"] == k
    if axis == "category":
        return e["category"] == k
    return has_switch_gate(e) if k == "switch+gate" else has_key_door(e)


# ---- the contact sheet ----------------------------------------------------------------------


def contact_sheet(mazes: list[Maze], entries: list[dict[str, Any]], columns: int = 10, tile: int = 12) -> bytes:
    """One PNG with every maze's start frame, labelled with its id, optimal actions and category."""
    from PIL import Image, ImageDraw

    from env.render import render_state
    from env.state import initial_state

    cell = 14 * tile + 8
    label_h = 14
    rows = (len(mazes) + columns - 1) // columns
    sheet = Image.new("RGB", (columns * cell, rows * (cell + label_h)), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    by_id = {e["id"]: e for e in entries}
    for i, m in enumerate(mazes):
        frame = Image.fromarray(render_state(m, initial_state(m), tile))
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


def build_pool(count: int, seed: int, workers: int = 0,
               on_done: Callable[[int], None] | None = None) -> PoolBuild:
    """Generate every spec of ``pool_recipe(count, seed)`` on ``workers`` processes (0: all
    cores). A maze identical to one already built is drawn again from later sub-seeds, so the
    pool is pairwise distinct; the result does not depend on the number of workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    specs = pool_recipe(count, seed)
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
        if sol.status != "solved":
            raise ValueError(f"{m.id}: {sol.status}")
        entries.append(manifest_entry(m, sol.optimal_actions))
    manifest = {"format": MANIFEST_FORMAT, "set": name, "count": len(entries), "provenance": provenance,
                "mazes": entries}
    path = folder / "manifest.json"
    tmp = folder / f".manifest.json.tmp{os.getpid()}"
    tmp.write_text(manifest_text(manifest), encoding="utf-8")
    os.replace(tmp, path)
    return path
