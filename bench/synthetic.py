"""Runs for the scale benches: real built-in episodes, and copies of them at any size.

Not a bench script (``bench/run_all.py`` leaves it out): ``bench/scale.py`` and
``bench/viewer_speed.py`` import it.

- ``play_base`` plays the built-in agents on some mazes with ``run_episode`` and writes each
  episode as the driver writes it (``write_episode``, one file per episode and table, then the
  manifest with the mazes): real shapes of steps, events and episode lengths.
- ``synthesize`` copies a base run's episodes until a run holds the asked number: copy ``k`` of an
  episode gets a new 20-hex-digit id (the driver's id shape), the new run's name, and a repeat of
  its own (the copies read as more repeats of the base's sweep); its mazes, steps, events and texts
  are the base's. ``episodes_per_file=1`` lays the copies out as the driver does (``episodes/<id>.parquet``
  and ``steps/<id>.parquet``, encoded with the driver's compression); larger values write that
  many episodes to a file, sorted by episode id and step in row groups of the compaction's size,
  the shape of a compacted run. Those files are named ``part-NNNNN.parquet`` and no compaction
  record names them, so the run's listing takes them for per-episode files: whole-table reads
  (``trace_dataset``, ``pd.read_parquet``, ``report``, ``view``) see every episode once, a lookup
  of one episode by its file name does not find it. ``vary_labels`` spreads the copies over
  ``MODELS`` model names and ``CONDITIONS`` conditions (the viewer's filters then have something
  to choose from).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.progress import track

from traces import EPISODES_DIR, STEPS_DIR, read_manifest, trace_dataset, write_manifest
from traces._compaction import ROW_GROUP_ROWS
from traces._names import episode_file
from traces._schema import PER_EPISODE_COMPRESSION, SCHEMAS, parquet_bytes

AGENTS = ("oracle", "random", "explorer")
MODELS, CONDITIONS = 6, 12
console = Console(stderr=True)


def play_base(out: Path, mazes: Iterable, repeats: int, *, condition: str = "baseline", progress: bool = True) -> Path:
    """The built-in agents on ``mazes``, ``repeats`` times each (the random agent reseeded per
    repeat), played with ``run_episode`` and written as the driver writes them, with a manifest
    holding the mazes (the report and the viewer draw from them)."""
    from agents import Protocol, build_agent
    from episodes.episode import run_episode
    from traces import EpisodeIdentity, write_episode

    mazes = list(mazes)
    protocol = Protocol.preset("gridbench-final")
    jobs = [(m, name, r) for r in range(repeats) for m in mazes for name in AGENTS]
    for m, name, r in track(jobs, description="playing the base run", console=console, disable=not progress):
        agent = build_agent(f"builtin/{name}", protocol, seed=r)
        identity = EpisodeIdentity(run=out.name, episode_id=f"{name}-{m.id}-{r}", model_name=name,
                                   model=f"builtin/{name}", condition=condition, repeat=r, maze_id=m.id)
        write_episode(out, asyncio.run(run_episode(m, agent, protocol, identity)))
    write_manifest(out, run=out.name, sweep={"name": out.name}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["bench/synthetic.py", "play_base"]})
    return out


@dataclass(frozen=True)
class Base:
    """A base run's tables in memory, sorted by episode id (and step), with where each
    episode's steps start and how many there are."""

    episodes: pa.Table
    steps: pa.Table
    first: np.ndarray
    count: np.ndarray
    repeats: int
    manifest: dict

    @classmethod
    def load(cls, run: Path) -> Base:
        episodes = trace_dataset(run, EPISODES_DIR).to_table().sort_by("episode_id")
        if episodes.num_rows == 0:
            raise ValueError(f"{run}: no episodes to copy")
        steps = trace_dataset(run, STEPS_DIR).to_table().sort_by([("episode_id", "ascending"), ("step", "ascending")])
        step_ids = steps.column("episode_id").to_numpy(zero_copy_only=False)
        ids = episodes.column("episode_id").to_numpy(zero_copy_only=False)
        first = np.searchsorted(step_ids, ids, side="left")
        count = np.searchsorted(step_ids, ids, side="right") - first
        repeats = int(np.max(episodes.column("repeat").to_numpy())) + 1
        return cls(episodes, steps, first, count, repeats, read_manifest(run) or {})


def copy_id(base_id: str, copy: int) -> str:
    return hashlib.sha256(f"{base_id}/{copy}".encode()).hexdigest()[:20]


def copies(base: Base, lo: int, hi: int, run: str, vary_labels: bool = False) -> tuple[pa.Table, pa.Table, np.ndarray]:
    """Episodes number ``lo`` to ``hi`` of the synthesized run (number ``j`` is copy ``j // B`` of
    base episode ``j % B``): (episodes, their steps in the same order, steps per episode)."""
    n_base = base.episodes.num_rows
    j = np.arange(lo, hi)
    pick, copy = j % n_base, j // n_base
    episodes = base.episodes.take(pa.array(pick))
    lengths = base.count[pick]
    starts = base.first[pick]
    # the rows of each picked episode's steps, one run after another
    rows = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(lengths.sum())
    steps = base.steps.take(pa.array(rows))

    base_ids = base.episodes.column("episode_id").to_pylist()
    labels = {
        "run": np.full(len(j), run, dtype=object),
        "episode_id": np.array([copy_id(base_ids[p], c) for p, c in zip(pick, copy, strict=True)], dtype=object),
        "repeat": episodes.column("repeat").to_numpy() + copy * base.repeats,
    }
    if vary_labels:
        labels.update(model_name=np.array([f"model-{k % MODELS}" for k in j], dtype=object),
                      condition=np.array([f"cond{k // MODELS % CONDITIONS:02d}" for k in j], dtype=object),
                      repeat=j // (MODELS * CONDITIONS))
    for name, values in labels.items():
        episodes = _set(episodes, name, values)
        steps = _set(steps, name, np.repeat(values, lengths))
    return episodes, steps, lengths


def _set(table: pa.Table, name: str, values: np.ndarray) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


def synthesize(base: Base | Path, out: Path, episodes: int, *, episodes_per_file: int = 1, run: str | None = None,
               vary_labels: bool = False, progress: bool = True) -> int:
    """Write a run of ``episodes`` copies of ``base``'s episodes into ``out`` (see the module's
    docstring for the layouts); returns its number of steps."""
    base = base if isinstance(base, Base) else Base.load(base)
    run = run or out.name
    for table in (EPISODES_DIR, STEPS_DIR):
        (out / table).mkdir(parents=True, exist_ok=True)
    chunk = episodes_per_file if episodes_per_file > 1 else 2_000
    total = 0
    starts = range(0, episodes, chunk)
    for part, lo in enumerate(track(starts, description=f"synthesizing {episodes:,} episodes", console=console,
                                    disable=not progress)):
        eps, steps, lengths = copies(base, lo, min(lo + chunk, episodes), run, vary_labels)
        total += steps.num_rows
        if episodes_per_file > 1:
            _write_part(out, part, eps, steps)
        else:
            _write_per_episode(out, eps, steps, lengths)
    write_manifest(out, run=run, sweep=base.manifest.get("sweep", {"name": run}), mazes=base.manifest.get("mazes", {}),
                   invocation={"command": ["bench/synthetic.py", "synthesize"], "episodes": episodes,
                               "episodes_per_file": episodes_per_file})
    return total


def _write_per_episode(out: Path, eps: pa.Table, steps: pa.Table, lengths: np.ndarray) -> None:
    # the bytes and names a driver writes; no fsync per file, as nothing here needs to survive a crash
    offset = 0
    for i, eid in enumerate(eps.column("episode_id").to_pylist()):
        n = int(lengths[i])
        for table, rows in ((STEPS_DIR, steps.slice(offset, n)), (EPISODES_DIR, eps.slice(i, 1))):
            (out / table / episode_file(eid)).write_bytes(parquet_bytes(rows, PER_EPISODE_COMPRESSION[table]))
        offset += n


def _write_part(out: Path, part: int, eps: pa.Table, steps: pa.Table) -> None:
    eps = eps.sort_by("episode_id")
    steps = steps.sort_by([("episode_id", "ascending"), ("step", "ascending")])
    for table, rows in ((STEPS_DIR, steps), (EPISODES_DIR, eps)):
        pq.write_table(rows.cast(SCHEMAS[table]), out / table / f"part-{part:05d}.parquet", compression="zstd",
                       row_group_size=ROW_GROUP_ROWS[table], write_statistics=True)


def describe(run: Path) -> dict:
    """The Parquet files of a run's two tables: how many, and their bytes. (Rows are not counted:
    a dataset over many small files keeps every file's metadata in memory, about 70 kB each.)"""
    files = [p for table in (EPISODES_DIR, STEPS_DIR) for p in (run / table).glob("*.parquet")]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}

