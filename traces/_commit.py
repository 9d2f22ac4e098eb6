"""The commit protocol of compaction: at every moment, and after a kill at any step, the files
that hold each table name each episode exactly once (``table_files``).

A compaction (generation ``gen``, random ``token``, ``traces._compaction``):

1. stages its output files where no reader looks (a hidden ``.name.tmp`` in the table's folder
   locally; ``compaction/staging/`` in object storage),
2. writes ``compaction/<gen>-<token>.replaces.parquet`` (the per-episode files it replaces, with
   their size and modification time) and then the record ``compaction/<gen>-<token>.json``: the
   compacted files that make up each table once it is done (``live``), its ``outputs`` and the
   compacted files it ``replaced``,
3. writes the per-episode files it moves out of compacted files (``extract``: episodes about to be
   rerun by ``--retry-errors``), then publishes the staged files (steps first, episodes last),
4. deletes what it replaced: per-episode files (episodes first, each only if unchanged since it was
   read), replaced compacted files, the replaces list and older records.

A record is *in force* for a table once all of its outputs for that table are visible; the newest
record in force names the table's compacted files (``table_files``). Per-episode files listed in
its replaces list, and per-episode outputs of a newer record not yet in force, are left out.
Whatever step a compaction is killed at, a reader sees every episode once: before the record is
in force its outputs are ignored and the old files read; after, the outputs are read and the
replaced files ignored. A writer (``roll_forward``: ``compact``, ``extract`` and the driver's
``clean_partial``) finishes a record whose outputs are all written (publishes what is staged and
deletes what it replaced) and takes back one that cannot be finished. Readers never write; they
only read past the leftovers.

One compaction at a time per run; a driver may keep writing new episodes meanwhile (only complete
episodes are taken, and a per-episode file is deleted only if it did not change since it was read).
An episode *rerun* while a compaction runs (``--retry-errors``) is the exception: from the moment
the compaction finishes until ``compact``'s second pass has packed its newer files, a reader sees
it twice (and, after a compaction killed in between, until the next ``compact``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from traces._names import COMPACTED, episode_of, is_compacted, is_per_episode
from traces._schema import (
    EPISODES_DIR,
    SCHEMAS,
    STEPS_DIR,
    TABLES,
)
from traces._store import Entry, RunStore, open_store

COMPACTION_DIR = "compaction"
STAGING_DIR = f"{COMPACTION_DIR}/staging"
RECORD_FORMAT = "gridbench.compaction/1"
REPLACES_SUFFIX = ".replaces.parquet"
VIEW_ATTEMPTS = 20

_cache_lock = threading.Lock()
_records: dict[tuple[str, str], CompactionRecord] = {}  # records never change once written
_replaces: dict[tuple[str, str], dict[str, dict[str, tuple[int, int]]]] = {}


# ---- names --------------------------------------------------------------------------------------

def staged_path(store: RunStore, table: str, name: str) -> str:
    """Where an output is written before it is published."""
    return f"{table}/.{name}.tmp" if store.local else f"{STAGING_DIR}/{table}/{name}"


def _is_record(name: str) -> bool:
    stem, _, ext = name.partition(".")
    return ext == "json" and len(stem) == 15 and stem[6] == "-" and stem[:6].isdigit()


# ---- records ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CompactionRecord:
    """One compaction: what each table is made of once it is in force, and what it replaces."""

    gen: int
    token: str
    live: dict[str, list[str]]  # table -> compacted files that make up the table
    outputs: dict[str, list[str]]  # table -> compacted files this compaction wrote
    per_episode_outputs: dict[str, list[str]]  # table -> per-episode files it wrote (moved out of compacted ones)
    replaced: dict[str, list[str]]  # table -> compacted files it replaces
    rows: dict[str, int] = field(default_factory=dict)
    at: str = ""

    @property
    def stem(self) -> str:
        return f"{self.gen:06d}-{self.token}"

    @property
    def name(self) -> str:
        return f"{self.stem}.json"

    @property
    def replaces_name(self) -> str:
        return f"{self.stem}{REPLACES_SUFFIX}"

    def written(self, table: str) -> list[str]:
        return [*self.outputs.get(table, []), *self.per_episode_outputs.get(table, [])]

    def to_json(self) -> str:
        return json.dumps({"format": RECORD_FORMAT, "gen": self.gen, "token": self.token, "at": self.at,
                           "live": self.live, "outputs": self.outputs, "per_episode_outputs": self.per_episode_outputs,
                           "replaced": self.replaced, "rows": self.rows}, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CompactionRecord:
        d = json.loads(text)
        if d.get("format") != RECORD_FORMAT:
            raise ValueError(f"not a {RECORD_FORMAT} record")
        return cls(int(d["gen"]), str(d["token"]), d["live"], d["outputs"], d["per_episode_outputs"], d["replaced"],
                   d.get("rows", {}), d.get("at", ""))


def _load_record(store: RunStore, name: str) -> CompactionRecord | None:
    key = (store.location, name)
    with _cache_lock:
        if key in _records:
            return _records[key]
    try:
        record = CompactionRecord.from_json(store.read_bytes(f"{COMPACTION_DIR}/{name}").decode("utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as err:
        raise OSError(f"{store.display(f'{COMPACTION_DIR}/{name}')}: unreadable compaction record ({err})") from None
    with _cache_lock:
        _records[key] = record
    return record


def _load_replaces(store: RunStore, record: CompactionRecord) -> dict[str, dict[str, tuple[int, int]]] | None:
    """table -> {per-episode file: (size, mtime_ns)} that ``record`` replaces; None once deleted."""
    key = (store.location, record.replaces_name)
    with _cache_lock:
        if key in _replaces:
            return _replaces[key]
    try:
        data = store.read_bytes(f"{COMPACTION_DIR}/{record.replaces_name}")
    except FileNotFoundError:
        return None
    table = pq.read_table(pa.BufferReader(data))
    out: dict[str, dict[str, tuple[int, int]]] = {t: {} for t in TABLES}
    for t, name, size, mtime in zip(*(table.column(c).to_pylist() for c in ("table", "name", "size", "mtime_ns")),
                                    strict=True):
        out.setdefault(t, {})[name] = (size, mtime)
    with _cache_lock:
        _replaces[key] = out
    return out


def record_listing(store: RunStore) -> tuple[list[str], set[str]]:
    """(record names, oldest first; names of the replaces lists present)."""
    names = [e.name for e in store.list(COMPACTION_DIR)]
    return sorted(n for n in names if _is_record(n)), {n for n in names if n.endswith(REPLACES_SUFFIX)}


# ---- what a table is made of ----------------------------------------------------------------------

@dataclass
class TableFiles:
    """The files that make up one table of a run right now, each episode in exactly one of them."""

    table: str
    compacted: list[Entry]
    per_episode: list[Entry]
    record: CompactionRecord | None  # the compaction in force


class RunChanging(OSError):
    """The run's files kept changing under a reader (a compaction publishing, many times over)."""


def table_files(run: str | os.PathLike | RunStore, table: str) -> TableFiles:
    """Which files make up ``table`` (``episodes`` or ``steps``) now: the compacted files of the
    record in force and the per-episode files, leaving out those a compaction has replaced or is
    about to publish. The listing is taken again when the records change while it is read."""
    store = open_store(run)
    for _ in range(VIEW_ATTEMPTS):
        names, replaces_present = record_listing(store)
        entries = store.list(table, stats=not store.local)
        present = {e.name for e in entries}
        loaded = [_load_record(store, n) for n in reversed(names)]
        records = [r for r in loaded if r is not None]
        if len(records) < len(loaded):
            continue  # a record was taken back while we looked
        in_force, newer = None, []
        for r in records:
            if set(r.written(table)) <= present:
                in_force = r
                break
            newer.append(r)
        hidden: set[str] = set()
        for r in newer:
            hidden.update(r.per_episode_outputs.get(table, []))
        if in_force is not None and in_force.replaces_name in replaces_present:
            stale = _load_replaces(store, in_force)
            if stale is None:
                continue  # finished while we looked: list again
            hidden.update(stale.get(table, {}))
        if record_listing(store)[0] != names:
            continue
        # a newer record whose outputs all appeared after the listing would make this view stale
        if newer and all(store.stat(f"{table}/{n}") is not None for n in newer[0].written(table)):
            continue
        live = set(in_force.live.get(table, [])) if in_force is not None else set()
        compacted = sorted((e for e in entries if e.name in live), key=lambda e: e.name)
        per_episode = sorted((e for e in entries if is_per_episode(e.name) and e.name not in hidden),
                             key=lambda e: e.name)
        return TableFiles(table, compacted, per_episode, in_force)
    raise RunChanging(f"{store.display(table)}: the run kept changing while it was read; "
                      "is a compaction running? Try again")


def dataset_of(store: RunStore, table: str, entries: Iterable[Entry], folder: str | None = None) -> ds.FileSystemDataset:
    """A dataset over some files of a table (in its own folder, or ``folder``), with the fixed
    schema; nothing is read yet."""
    fmt = ds.ParquetFileFormat()
    fs = store.filesystem
    where = folder or table
    fragments = [fmt.make_fragment(store.path(f"{where}/{e.name}"), fs, file_size=e.size) for e in entries]
    return ds.FileSystemDataset(fragments, SCHEMAS[table], fmt, fs)


# ---- finishing or taking back a compaction ---------------------------------------------------------

def publish(store: RunStore, record: CompactionRecord) -> bool:
    """Move every staged output of ``record`` into place (steps first); False when one is missing
    (neither staged nor in place) and the record cannot be finished."""
    for table in TABLES:
        for name in record.per_episode_outputs.get(table, []):
            if store.stat(f"{table}/{name}") is None:
                return False
        for name in record.outputs.get(table, []):
            if store.stat(f"{table}/{name}") is None and store.stat(staged_path(store, table, name)) is None:
                return False
    for table in TABLES:
        for name in record.outputs.get(table, []):
            if store.stat(f"{table}/{name}") is None:
                store.move(staged_path(store, table, name), f"{table}/{name}")
    return True


def _take_back(store: RunStore, record: CompactionRecord) -> None:
    """Undo a compaction that never came into force: its outputs go, the record last."""
    for table in (EPISODES_DIR, STEPS_DIR):
        for name in record.outputs.get(table, []):
            store.delete(staged_path(store, table, name))
            store.delete(f"{table}/{name}")
        for name in record.per_episode_outputs.get(table, []):
            store.delete(f"{table}/{name}")
    store.delete(f"{COMPACTION_DIR}/{record.replaces_name}")
    store.delete(f"{COMPACTION_DIR}/{record.name}")


def finish(store: RunStore, record: CompactionRecord, older: list[str]) -> set[str]:
    """Delete what a compaction in force replaced, then the records before it. Returns the ids of
    the episodes whose own files were written again since the compaction read them: they are
    kept, and until a compaction packs them they stand beside their older compacted rows."""
    stale = _load_replaces(store, record) or {}
    rewritten: set[str] = set()
    for table in (EPISODES_DIR, STEPS_DIR):  # an episodes file alone would claim a complete episode
        for name, (size, mtime) in sorted(stale.get(table, {}).items()):
            now = store.stat(f"{table}/{name}")
            if now is not None and (now.size, now.mtime_ns) == (size, mtime):
                store.delete(f"{table}/{name}")
            elif now is not None:
                rewritten.add(episode_of(name))
    for table in TABLES:
        live = set(record.live.get(table, []))
        for name in record.replaced.get(table, []):
            store.delete(f"{table}/{name}")
        for e in store.list(table):  # outputs of compactions taken back or replaced before
            if is_compacted(e.name) and e.name not in live:
                store.delete(f"{table}/{e.name}")
    store.delete(f"{COMPACTION_DIR}/{record.replaces_name}")
    for name in older:
        store.delete(f"{COMPACTION_DIR}/{name[:-len('.json')]}{REPLACES_SUFFIX}")
        store.delete(f"{COMPACTION_DIR}/{name}")
    return rewritten


def clear_staging(store: RunStore) -> None:
    if store.local:
        for table in TABLES:
            for e in store.list(table):
                if e.name.startswith(f".{COMPACTED}") and e.name.endswith(".tmp"):
                    store.delete(f"{table}/{e.name}")
    else:
        store.delete_tree(STAGING_DIR)


def roll_forward(run: str | os.PathLike | RunStore) -> CompactionRecord | None:
    """Bring a run whose compaction was killed to a clean state: the newest record whose outputs
    are all written (or staged) is finished, a newer one that cannot be is taken back. Returns
    the record in force (None for a run never compacted)."""
    store = open_store(run)
    names, _ = record_listing(store)
    records = [r for r in (_load_record(store, n) for n in names) if r is not None]
    in_force = None
    for r in reversed(records):
        if in_force is None and publish(store, r):
            in_force = r
        elif in_force is None or r.gen > in_force.gen:
            _take_back(store, r)
    if in_force is not None:
        finish(store, in_force, [r.name for r in records if r.gen < in_force.gen])
    names, replaces = record_listing(store)
    for name in replaces - {f"{n[:-len('.json')]}{REPLACES_SUFFIX}" for n in names}:
        store.delete(f"{COMPACTION_DIR}/{name}")  # written by a compaction killed before its record
    clear_staging(store)
    return in_force


