"""Parquet traces of a run (docs/design.md §7) and the rules that keep them exactly-once.

Layout of a run (a local folder or an ``s3://``/``gs://`` prefix, see ``orchestrator.store``)::

    manifest.json                       the resolved sweep, its mazes, git, packages, host
    episodes/<episode_id>.parquet       one finished episode's row (schema ``orchestrator.schema.EPISODES``)
    steps/<episode_id>.parquet          its steps, one row each (schema ``STEPS``)
    episodes/compacted-<gen>-<token>-<part>.parquet   many episodes' rows, after a compaction
    steps/compacted-<gen>-<token>-<part>.parquet      their steps, sorted by episode id and step
    compaction/<gen>-<token>.json       the record of the compaction in force (``orchestrator.compaction``)

A finished episode is written as its own two files (atomically: see ``RunStore.put``), the steps
file first and the episodes file last: an episodes file is the proof that an episode is
complete, and ``clean_partial`` removes steps files left without one. ``gridbench compact`` (and
the end of ``gridbench run``) packs them into a few large files; ``table_files`` says which files
make up a table at any moment, before, during, after, or after a killed compaction, so that
every reader sees each episode exactly once.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.dataset as ds

from env.files import is_temp
from orchestrator.compaction import dataset_of, roll_forward, table_files
from orchestrator.records import EpisodeRecord, HoldsEpisode, StepRecord
from orchestrator.schema import (
    EPISODES,
    EPISODES_DIR,
    PER_EPISODE_COMPRESSION,
    SCHEMAS,
    STEPS,
    STEPS_DIR,
    TABLES,
    parquet_bytes,
)
from orchestrator.store import RunStore, open_store

if TYPE_CHECKING:  # pandas only in annotations: frames come from pyarrow's to_pandas
    import pandas as pd

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "gridbench.run/1"
Run = str | os.PathLike | RunStore  # a run: a local folder, an s3:// or gs:// URI, or its store
PACKAGES = (
    "gridbench", "ray", "litellm", "minigrid", "gymnasium", "numpy", "pyarrow", "pandas", "pydantic",
    "vllm", "llama_cpp_python",
)


def episodes_table(episodes: Iterable[EpisodeRecord]) -> pa.Table:
    return pa.Table.from_pylist([e.row() for e in episodes], schema=EPISODES)


def steps_table(steps: Iterable[StepRecord]) -> pa.Table:
    return pa.Table.from_pylist([s.row() for s in steps], schema=STEPS)


class HasRecords(Protocol):
    """A finished episode's records (``orchestrator.episode.EpisodeResult``)."""

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


def write_encoded(run_dir: Run, encoded: EncodedEpisode) -> tuple[PurePath, PurePath]:
    """Write (or replace) one encoded episode's two files, the steps file first; returns
    (episodes file, steps file)."""
    store = open_store(run_dir)
    eid = encoded.episode_id
    st_path = store.put(f"{STEPS_DIR}/{eid}.parquet", encoded.steps_file)
    ep_path = store.put(f"{EPISODES_DIR}/{eid}.parquet", encoded.episode_file)
    return ep_path, st_path


def write_episode(run_dir: Run, result: HasRecords) -> tuple[PurePath, PurePath]:
    """Write (or replace) one episode's two files; returns (episodes file, steps file).

    Both files are encoded before anything is written: a schema error writes nothing.
    """
    return write_encoded(run_dir, encode_episode(result))


def episodes_frame(episodes: Iterable[EpisodeRecord]) -> pd.DataFrame:
    """Episode records as a DataFrame with exactly the types of a read of the episodes folder."""
    return episodes_table(episodes).to_pandas()


def trace_dataset(run_dir: Run, table: str, ids: Iterable[str] | None = None) -> ds.Dataset:
    """One of a run's tables (``episodes`` or ``steps``) as a lazy Arrow dataset with the fixed
    schema, over the files that hold it now (``orchestrator.compaction.table_files``: compacted
    files and per-episode files, each episode in exactly one, whether the run is compacted,
    not, partly, or in the middle of a compaction), local or in object storage. Nothing is
    read until the dataset is scanned, so DuckDB, pyarrow or pandas can stream it. ``ids``
    leaves out the per-episode files of other episodes (filter the scan on ``episode_id`` too:
    compacted files hold many episodes, and their row-group statistics let a scan skip the rest)."""
    store = open_store(run_dir, "RUN")
    view = table_files(store, table)
    own = view.per_episode
    if ids is not None:
        wanted = {f"{i}.parquet" for i in ids}
        own = [e for e in own if e.name in wanted]
    return dataset_of(store, table, [*view.compacted, *own])


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
    return {i for i, t in zip(ids, terms, strict=True) if include_errors or t != "error"}


def clean_partial(run_dir: Run) -> list[PurePath]:
    """Bring a run that a killed driver or compaction left behind to a clean state: finish or
    take back a compaction (``orchestrator.compaction.roll_forward``), then remove temporary
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


# ---- manifest ------------------------------------------------------------------------------

def git_info() -> dict[str, Any]:
    """The commit of the gridbench source tree and whether it has uncommitted changes.

    The commit stands on its own: a ``git status`` that fails or runs out of time (a fresh copy
    of a repository, as ``ray job submit --working-dir`` makes, is re-read in full) leaves only
    ``dirty`` unknown. When no commit can be read, ``error`` says why in one line.
    """
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=120)

    try:
        head = git("rev-parse", "HEAD")
    except (OSError, subprocess.SubprocessError) as e:
        return {"commit": None, "dirty": None, "error": f"git rev-parse HEAD: {type(e).__name__}"}
    if head.returncode != 0:
        reason = (head.stderr.strip().splitlines() or [f"exit code {head.returncode}"])[0]
        return {"commit": None, "dirty": None, "error": f"git rev-parse HEAD: {reason}"}
    try:
        status = git("status", "--porcelain", "--untracked-files=no")
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        dirty = None
    return {"commit": head.stdout.strip(), "dirty": dirty}


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def host_info() -> dict[str, Any]:
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        mem = None
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "memory_bytes": mem,
    }


def read_manifest(run_dir: Run) -> dict[str, Any] | None:
    try:
        data = open_store(run_dir, "RUN").read_bytes(MANIFEST)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return json.loads(data.decode("utf-8"))


def write_manifest(
    run_dir: Run,
    *,
    run: str,
    sweep: dict[str, Any],
    mazes: dict[str, dict[str, Any]],
    invocation: dict[str, Any],
    replace_last: bool = False,
) -> PurePath:
    """Create or update ``manifest.json``.

    ``sweep`` is the resolved sweep (no secrets: only names of key variables ever reach it);
    ``mazes`` maps each maze checksum to its content, so a run replays without the maze files.
    A resumed run keeps its creation time and earlier mazes and appends its invocation
    (``replace_last``: completes the invocation this process appended when it started).
    ``location`` is where the run lives (a folder or a URI, which never holds credentials).
    """
    store = open_store(run_dir)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    old = read_manifest(store) or {}
    last = (old.get("invocations") or [{}])[-1]
    # an invocation ran the commit it started with: its source may be gone by the time it ends
    # (`ray job stop` removes a job's working dir while the driver still writes its last update)
    git = last["git"] if replace_last and isinstance(last.get("git"), dict) else git_info()
    manifest = {
        "format": MANIFEST_FORMAT,
        "run": run,
        "location": store.location,
        "created_at": old.get("created_at", now),
        "updated_at": now,
        "sweep": sweep,
        "git": git,
        "packages": package_versions(),
        "host": host_info(),
        "invocations": [*(old.get("invocations", [])[:-1] if replace_last else old.get("invocations", [])),
                        {"at": last.get("at", now) if replace_last else now,
                         "git": git, **invocation, **({"finished_at": now} if replace_last else {})}],
        "mazes": {**old.get("mazes", {}), **mazes},
    }
    text = json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n"
    return store.put(MANIFEST, text.encode("utf-8"))
