"""A run's two tables (docs/design.md §7): written an episode at a time, read exactly once.

Layout of a run (a local folder or an ``s3://``/``gs://`` prefix, see ``traces._store``)::

    manifest.json                       the resolved sweep, its mazes, git, packages, host (``traces._manifest``)
    episodes/<episode_id>.parquet       one finished episode's row (schema ``EpisodeRecord.schema()``)
    steps/<episode_id>.parquet          its steps, one row each (schema ``StepRecord.schema()``)
    episodes/compacted-<gen>-<token>-<part>.parquet   many episodes' rows, after a compaction
    steps/compacted-<gen>-<token>-<part>.parquet      their steps, sorted by episode id and step
    compaction/<gen>-<token>.json       the record of the compaction in force (``traces._compaction``)

A finished episode is written as its own two files (atomically: see ``RunStore.put``), the steps
file first and the episodes file last: an episodes file is the proof that an episode is
complete, and ``clean_partial`` removes steps files left without one. ``gridbench compact`` (and
the end of ``gridbench run``) packs them into a few large files; ``table_files`` says which files
make up a table at any moment, before, during, after, or after a killed compaction, so that
every reader sees each episode exactly once. An exported run (``traces._export``, docs/export.md)
holds each table as shards in ``data/``; ``trace_dataset`` reads those when the table has no
files of its own, so every reader reads an export as the run it was made from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.dataset as ds

from env.files import is_temp
from traces._commit import dataset_of, roll_forward, table_files
from traces._names import EXPORT_DATA, episode_file, shard_of
from traces._records import ERROR, EpisodeRecord, HoldsEpisode, StepRecord
from traces._schema import (
    EPISODES,
    EPISODES_DIR,
    PER_EPISODE_COMPRESSION,
    SCHEMAS,
    STEPS,
    STEPS_DIR,
    TABLES,
    parquet_bytes,
)
from traces._store import Entry, RunStore, open_store

if TYPE_CHECKING:  # pandas only in annotations: frames come from pyarrow's to_pandas
    import pandas as pd

Run = str | os.PathLike | RunStore  # a run: a local folder, an s3:// or gs:// URI, or its store


def episodes_table(episodes: Iterable[EpisodeRecord]) -> pa.Table:
    return pa.Table.from_pylist([e.row() for e in episodes], schema=EPISODES)


def steps_table(steps: Iterable[StepRecord]) -> pa.Table:
    return pa.Table.from_pylist([s.row() for s in steps], schema=STEPS)


class HasRecords(Protocol):
    """A finished episode's records (``episodes.episode.EpisodeResult``)."""

    episode: EpisodeRecord
    steps: list[StepRecord]


@dataclass(frozen=True)
class EncodedEpisode(HoldsEpisode):
    """A finished episode as the bytes of its two files, plus its record for progress displays.

    Actors encode their own episodes, so the building of tables and the Parquet encoding run
    in parallel on the workers and the driver only writes bytes.
    """

    episode: EpisodeRecord
    episode_file: bytes
    steps_file: bytes


def encode_episode(result: HasRecords) -> EncodedEpisode:
    """Both files of an episode, checked against the fixed schemas (a schema error raises here)."""
    return EncodedEpisode(result.episode,
                          parquet_bytes(episodes_table([result.episode]), PER_EPISODE_COMPRESSION[EPISODES_DIR]),
                          parquet_bytes(steps_table(result.steps), PER_EPISODE_COMPRESSION[STEPS_DIR]))


def write_episode(run_dir: Run, episode: HasRecords | EncodedEpisode) -> tuple[PurePath, PurePath]:
    """Write (or replace) one episode's two files, the steps file first; returns (episodes file,
    steps file). An episode's records are encoded before anything is written: a schema error
    writes nothing."""
    encoded = episode if isinstance(episode, EncodedEpisode) else encode_episode(episode)
    store = open_store(run_dir)
    eid = encoded.episode_id
    st_path = store.put(f"{STEPS_DIR}/{episode_file(eid)}", encoded.steps_file)
    ep_path = store.put(f"{EPISODES_DIR}/{episode_file(eid)}", encoded.episode_file)
    return ep_path, st_path


def episodes_frame(episodes: Iterable[EpisodeRecord]) -> pd.DataFrame:
    """Episode records as a DataFrame with exactly the types of a read of the episodes folder."""
    return episodes_table(episodes).to_pandas()


def trace_dataset(run_dir: Run, table: str, ids: Iterable[str] | None = None) -> ds.Dataset:
    """One of a run's tables (``episodes`` or ``steps``) as a lazy Arrow dataset with the fixed
    schema, over the files that hold it now (``traces._commit.table_files``: compacted
    files and per-episode files, each episode in exactly one, whether the run is compacted,
    not, partly, or in the middle of a compaction), local or in object storage. Nothing is
    read until the dataset is scanned, so DuckDB, pyarrow or pandas can stream it. ``ids``
    leaves out the per-episode files of other episodes (filter the scan on ``episode_id`` too:
    compacted files hold many episodes, and their row-group statistics let a scan skip the rest)."""
    store = open_store(run_dir, "RUN")
    view = table_files(store, table)
    if not view.compacted and not view.per_episode:
        shards = export_shards(store, table)
        if shards is not None:  # an exported run (docs/export.md): its shards hold the table
            return dataset_of(store, table, shards, EXPORT_DATA)
    own = view.per_episode
    if ids is not None:
        wanted = {episode_file(i) for i in ids}
        own = [e for e in own if e.name in wanted]
    return dataset_of(store, table, [*view.compacted, *own])


def export_shards(run_dir: Run, table: str) -> list[Entry] | None:
    """The shards that hold ``table`` when ``run_dir`` is an exported run (``data/<table>-<i>-of-<n>.parquet``,
    docs/export.md), in order; None when it holds none. ``OSError`` when some are missing: an
    export is read whole or not at all."""
    store = open_store(run_dir, "RUN")
    found: dict[int, Entry] = {}
    counts: set[int] = set()
    for e in store.list(EXPORT_DATA, stats=not store.local):
        shard = shard_of(e.name)
        if shard is not None and shard[0] == table:
            found[shard[1]] = e
            counts.add(shard[2])
    if not found:
        return None
    if len(counts) != 1 or set(found) != set(range(next(iter(counts)))):
        raise OSError(f"{store.display(EXPORT_DATA)}: the {table} shards are incomplete "
                      f"({len(found)} found, of {sorted(counts)})")
    return [found[i] for i in sorted(found)]


def is_export(run_dir: Run) -> bool:
    """Whether ``run_dir`` is an exported run (docs/export.md): shards in ``data/`` and no
    ``episodes/`` folder of its own."""
    store = open_store(run_dir, "RUN")
    return not store.is_dir(EPISODES_DIR) and any(
        (s := shard_of(e.name)) is not None and s[0] == EPISODES_DIR for e in store.list(EXPORT_DATA))


def read_table(run_dir: Run, table: str, columns: list[str] | None = None, ids: Iterable[str] | None = None) -> pa.Table:
    ids = None if ids is None else sorted(set(ids))
    if ids == []:
        schema = SCHEMAS[table]
        return (schema if columns is None else pa.schema([schema.field(c) for c in columns])).empty_table()
    data = trace_dataset(run_dir, table, ids)
    where = None if ids is None else ds.field("episode_id").isin(pa.array(ids, pa.string()))
    # pyarrow otherwise keeps every scanned file's footer (a ~180 kB per-episode file pair, 26 GB
    # for a 150k-episode run before compaction): a rerun's completed_ids would not fit in memory
    return data.scanner(columns=columns, filter=where, cache_metadata=False).to_table()


def read_run(run_dir: Run) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(episodes, steps) of a run as DataFrames with the fixed schemas; empty when nothing ran."""
    return read_table(run_dir, EPISODES_DIR).to_pandas(), read_table(run_dir, STEPS_DIR).to_pandas()


def read_episodes(run_dir: Run, ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Only the episodes table of a run (cheap: one row per episode); with ``ids``, only the
    episodes among those that are complete."""
    return read_table(run_dir, EPISODES_DIR, ids=ids).to_pandas()


def read_episode(run_dir: Run, episode_id: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """One episode's row (as a dict) and its steps in step order; ``FileNotFoundError`` when the run
    holds no such complete episode."""
    rows = read_table(run_dir, EPISODES_DIR, ids=[episode_id]).to_pylist()
    if not rows:
        raise FileNotFoundError(f"{run_dir}: no episode {episode_id}")
    steps = read_table(run_dir, STEPS_DIR, ids=[episode_id]).to_pandas()
    return rows[0], steps.sort_values("step").reset_index(drop=True)


def completed_ids(run_dir: Run, *, include_errors: bool = True) -> set[str]:
    """Ids of the episodes whose files are complete; ``include_errors=False`` leaves out ``error``."""
    table = read_table(run_dir, EPISODES_DIR, ["episode_id", "termination"])
    ids, terms = table.column("episode_id").to_pylist(), table.column("termination").to_pylist()
    return {i for i, t in zip(ids, terms, strict=True) if include_errors or t != ERROR}


def clean_partial(run_dir: Run) -> list[PurePath]:
    """Bring a run that a killed driver or compaction left behind to a clean state: finish or
    take back a compaction (``traces._commit.roll_forward``), then remove temporary
    files and steps files without their episodes file. Other folders (``partial/``, ``servers/``)
    are left alone."""
    store = open_store(run_dir)
    roll_forward(store)
    removed: list[PurePath] = []
    for table in TABLES:
        for e in store.list(table):
            if is_temp(e.name) and store.delete(f"{table}/{e.name}"):
                removed.append(store.file(f"{table}/{e.name}"))
    episodes = {e.name for e in table_files(store, EPISODES_DIR).per_episode}
    for e in table_files(store, STEPS_DIR).per_episode:
        if e.name not in episodes and store.delete(f"{STEPS_DIR}/{e.name}"):
            removed.append(store.file(f"{STEPS_DIR}/{e.name}"))
    return removed
