"""Parquet traces of a run (docs/design.md §7): one episodes file and one steps file per episode.

Layout of ``results/<run>/``::

    manifest.json                 the resolved sweep, its mazes, git, packages, host
    episodes/<episode_id>.parquet one row (schema ``orchestrator.schema.EPISODES``)
    steps/<episode_id>.parquet    one row per step (schema ``STEPS``)

Every file is written under a temporary dot-name in its final folder, flushed, fsynced and then
renamed, so a reader (or a rerun after a crash) never sees half a file. The steps file is
renamed first and the episodes file last: an episodes file is the proof that an episode is
complete, and ``clean_partial`` removes steps files left without one.
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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from orchestrator.records import EpisodeRecord, HoldsEpisode, StepRecord
from orchestrator.schema import EPISODES, STEPS

if TYPE_CHECKING:  # pandas only in annotations: frames come from pyarrow's to_pandas
    import pandas as pd

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "gridbench.run/1"
EPISODES_DIR = "episodes"
STEPS_DIR = "steps"
SCHEMAS = {EPISODES_DIR: EPISODES, STEPS_DIR: STEPS}
PACKAGES = (
    "gridbench", "ray", "litellm", "minigrid", "gymnasium", "numpy", "pyarrow", "pandas", "pydantic",
    "vllm", "llama_cpp_python",
)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write(path: Path, write) -> None:
    """Write through ``write(file)`` to a hidden temporary name, fsync, and rename onto ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # a disk turned read-only cannot take the temporary file back: the original error counts
        if isinstance(err, OSError) and not err.filename:
            err.filename = str(path)  # a full disk fails a write(), which names no file: name the one written
        raise
    _fsync_dir(path.parent)


def parquet_bytes(table: pa.Table, compression: str = "zstd") -> bytes:
    """A whole Parquet file in memory."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    return sink.getvalue().to_pybytes()


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
    # one row compresses to nothing: the episodes file is left plain, which also halves its cost
    return EncodedEpisode(result.episode, parquet_bytes(episodes_table([result.episode]), compression="none"),
                          parquet_bytes(steps_table(result.steps)))


def write_encoded(run_dir: str | os.PathLike, encoded: EncodedEpisode) -> tuple[Path, Path]:
    """Write (or replace) one encoded episode's two files; returns (episodes file, steps file)."""
    run_dir = Path(run_dir)
    eid = encoded.episode_id
    ep_dir, st_dir = run_dir / EPISODES_DIR, run_dir / STEPS_DIR
    ep_dir.mkdir(parents=True, exist_ok=True)
    st_dir.mkdir(parents=True, exist_ok=True)
    ep_path, st_path = ep_dir / f"{eid}.parquet", st_dir / f"{eid}.parquet"
    _atomic_write(st_path, lambda f: f.write(encoded.steps_file))
    _atomic_write(ep_path, lambda f: f.write(encoded.episode_file))
    return ep_path, st_path


def write_episode(run_dir: str | os.PathLike, result: HasRecords) -> tuple[Path, Path]:
    """Write (or replace) one episode's two files; returns (episodes file, steps file).

    Both files are encoded before anything touches the disk: a schema error writes nothing.
    """
    return write_encoded(run_dir, encode_episode(result))


def episodes_frame(episodes: Iterable[EpisodeRecord]) -> pd.DataFrame:
    """Episode records as a DataFrame with exactly the types of a read of the episodes folder."""
    return episodes_table(episodes).to_pandas()


def trace_dataset(run_dir: str | os.PathLike, table: str,
                  ids: Iterable[str] | None = None) -> ds.Dataset:
    """One of a run's tables (``episodes`` or ``steps``) as a lazy Arrow dataset with the fixed
    schema, over every Parquet file of its folder, however many episodes each file holds; hidden
    files (temporary ones) are skipped. Nothing is read until the dataset is scanned, so DuckDB,
    pyarrow or pandas can stream it. ``ids`` narrows a per-episode layout to those episodes' files."""
    folder = Path(run_dir) / table
    if not folder.is_dir():
        files: list[str] = []
    elif ids is not None and all((folder / f"{i}.parquet").is_file() for i in ids):
        files = [str(folder / f"{i}.parquet") for i in sorted(ids)]
    else:
        files = sorted(str(p) for p in folder.rglob("*.parquet") if not p.name.startswith((".", "_")))
    return ds.dataset(files, schema=SCHEMAS[table], format="parquet")


def _read(run_dir: str | os.PathLike, table: str, columns: list[str] | None = None,
          ids: Iterable[str] | None = None) -> pa.Table:
    ids = None if ids is None else sorted(set(ids))
    if ids == []:
        schema = SCHEMAS[table]
        return (schema if columns is None else pa.schema([schema.field(c) for c in columns])).empty_table()
    data = trace_dataset(run_dir, table, ids)
    where = None if ids is None else ds.field("episode_id").isin(pa.array(ids, pa.string()))
    return data.to_table(columns=columns, filter=where)


def read_run(run_dir: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(episodes, steps) of a run as DataFrames with the fixed schemas; empty when nothing ran."""
    return _read(run_dir, EPISODES_DIR).to_pandas(), _read(run_dir, STEPS_DIR).to_pandas()


def read_episodes(run_dir: str | os.PathLike, ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Only the episodes table of a run (cheap: one row per episode); with ``ids``, only the
    episodes among those that are complete."""
    return _read(run_dir, EPISODES_DIR, ids=ids).to_pandas()


def read_episode(run_dir: str | os.PathLike, episode_id: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """One episode's row (as a dict) and its steps in step order; ``FileNotFoundError`` when the run
    holds no such complete episode."""
    rows = _read(run_dir, EPISODES_DIR, ids=[episode_id]).to_pylist()
    if not rows:
        raise FileNotFoundError(f"{run_dir}: no episode {episode_id}")
    steps = _read(run_dir, STEPS_DIR, ids=[episode_id]).to_pandas()
    return rows[0], steps.sort_values("step").reset_index(drop=True)


def completed_ids(run_dir: str | os.PathLike, *, include_errors: bool = True) -> set[str]:
    """Ids of the episodes whose files are complete; ``include_errors=False`` leaves out ``error``."""
    table = _read(run_dir, EPISODES_DIR, ["episode_id", "termination"])
    ids, terms = table.column("episode_id").to_pylist(), table.column("termination").to_pylist()
    return {i for i, t in zip(ids, terms, strict=True) if include_errors or t != "error"}


def clean_partial(run_dir: str | os.PathLike) -> list[Path]:
    """Remove what a killed driver can leave behind: temporary files and steps without an episode."""
    run_dir = Path(run_dir)
    removed: list[Path] = []
    for sub in (EPISODES_DIR, STEPS_DIR):
        folder = run_dir / sub
        if folder.is_dir():
            for tmp in folder.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
    steps = run_dir / STEPS_DIR
    if steps.is_dir():
        done = {p.stem for p in (run_dir / EPISODES_DIR).glob("*.parquet")}
        for p in steps.glob("*.parquet"):
            if p.stem not in done:
                p.unlink(missing_ok=True)
                removed.append(p)
    return removed


# ---- manifest ------------------------------------------------------------------------------

def git_info() -> dict[str, Any]:
    """The commit of the gridbench source tree and whether it has uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10)
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, timeout=30)
        return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


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


def read_manifest(run_dir: str | os.PathLike) -> dict[str, Any] | None:
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def write_manifest(
    run_dir: str | os.PathLike,
    *,
    run: str,
    sweep: dict[str, Any],
    mazes: dict[str, dict[str, Any]],
    invocation: dict[str, Any],
    replace_last: bool = False,
) -> Path:
    """Create or update ``manifest.json``.

    ``sweep`` is the resolved sweep (no secrets: only names of key variables ever reach it);
    ``mazes`` maps each maze checksum to its content, so a run replays without the maze files.
    A resumed run keeps its creation time and earlier mazes and appends its invocation
    (``replace_last``: completes the invocation this process appended when it started).
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    old = read_manifest(run_dir) or {}
    git = git_info()
    manifest = {
        "format": MANIFEST_FORMAT,
        "run": run,
        "created_at": old.get("created_at", now),
        "updated_at": now,
        "sweep": sweep,
        "git": git,
        "packages": package_versions(),
        "host": host_info(),
        "invocations": [*(old.get("invocations", [])[:-1] if replace_last else old.get("invocations", [])),
                        {"at": (old.get("invocations") or [{}])[-1].get("at", now) if replace_last else now,
                         "git": git, **invocation, **({"finished_at": now} if replace_last else {})}],
        "mazes": {**old.get("mazes", {}), **mazes},
    }
    text = json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n"
    path = run_dir / MANIFEST
    _atomic_write(path, lambda f: f.write(text.encode("utf-8")))
    return path
