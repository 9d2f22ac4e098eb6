"""Compaction: a run's per-episode files packed into a few large Parquet files, exactly-once.

While a run is written, each finished episode is its own pair of files (``episodes/<id>.parquet``,
``steps/<id>.parquet``): a crash loses nothing, and a rerun finds what is done by listing. A
table of 150k such files takes minutes to read, so ``compact`` packs them into
``<table>/compacted-<gen>-<token>-<part>.parquet``: flat in the same folders, with the fixed
schemas, sorted by episode id (and step) inside each sorted run of episodes, in row groups of at
most ``ROW_GROUP_ROWS`` rows and ``ROW_GROUP_BYTES`` bytes, so that a filter on ``episode_id``
skips all but a row group or two by their statistics. Parts are cut by size (``PART_ROWS``), not
per model or condition: the number of files then follows the data's size, not the shape of the
sweep's matrix (a matrix of 40 arms would otherwise make 40 small episodes files), and every part
is large enough to read at full speed.

The commit protocol. A compaction (generation ``gen``, random ``token``):

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
import secrets
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from traces._names import COMPACTED, compacted_name, episode_file, episode_of, is_compacted, is_per_episode
from traces._schema import (
    EPISODES_DIR,
    PER_EPISODE_COMPRESSION,
    SCHEMAS,
    STEPS_DIR,
    TABLES,
    parquet_bytes,
)
from traces._store import Entry, RunStore, open_store

COMPACTION_DIR = "compaction"
STAGING_DIR = f"{COMPACTION_DIR}/staging"
RECORD_FORMAT = "gridbench.compaction/1"
REPLACES_SUFFIX = ".replaces.parquet"
# row groups of compacted files: small enough that a lookup by id reads little, large enough
# that a whole-table scan is not dominated by per-group overhead
ROW_GROUP_ROWS = {STEPS_DIR: 65_536, EPISODES_DIR: 16_384}
ROW_GROUP_BYTES = 32 * 2**20  # Arrow bytes buffered per row group: bounds memory with long replies
PART_ROWS = {STEPS_DIR: 4_000_000, EPISODES_DIR: 1_000_000}
READ_BATCH_ROWS = 16_384
PER_EPISODE_READAHEAD = 32  # per-episode files read ahead (small: one episode each)
PER_EPISODE_CHUNK = 512
COALESCE_BATCHES = 256
VIEW_ATTEMPTS = 20

Progress = Callable[[str, int, int], None]  # (table, files done, files in all)

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


def _record_listing(store: RunStore) -> tuple[list[str], set[str]]:
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
        names, replaces_present = _record_listing(store)
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
        if _record_listing(store)[0] != names:
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


def dataset_of(store: RunStore, table: str, entries: Iterable[Entry]) -> ds.FileSystemDataset:
    """A dataset over some files of a table, with the fixed schema; nothing is read yet."""
    fmt = ds.ParquetFileFormat()
    fs = store.filesystem
    fragments = [fmt.make_fragment(store.path(f"{table}/{e.name}"), fs, file_size=e.size) for e in entries]
    return ds.FileSystemDataset(fragments, SCHEMAS[table], fmt, fs)


# ---- finishing or taking back a compaction ---------------------------------------------------------

def _publish(store: RunStore, record: CompactionRecord) -> bool:
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


def _finish(store: RunStore, record: CompactionRecord, older: list[str]) -> set[str]:
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


def _clear_staging(store: RunStore) -> None:
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
    names, _ = _record_listing(store)
    records = [r for r in (_load_record(store, n) for n in names) if r is not None]
    in_force = None
    for r in reversed(records):
        if in_force is None and _publish(store, r):
            in_force = r
        elif in_force is None or r.gen > in_force.gen:
            _take_back(store, r)
    if in_force is not None:
        _finish(store, in_force, [r.name for r in records if r.gen < in_force.gen])
    names, replaces = _record_listing(store)
    for name in replaces - {f"{n[:-len('.json')]}{REPLACES_SUFFIX}" for n in names}:
        store.delete(f"{COMPACTION_DIR}/{name}")  # written by a compaction killed before its record
    _clear_staging(store)
    return in_force


# ---- compacting -------------------------------------------------------------------------------------

@dataclass
class CompactionResult:
    record: CompactionRecord | None  # in force afterwards
    episodes: int = 0  # per-episode files packed
    rewritten: int = 0  # compacted files rewritten (merged, or with episodes moved out)
    moved: int = 0  # episodes moved out of compacted files into per-episode files
    rows: dict[str, int] = field(default_factory=dict)  # rows written per table
    files: dict[str, int] = field(default_factory=dict)  # compacted files per table afterwards
    rewritten_meanwhile: set[str] = field(default_factory=set)  # episodes rerun while it ran (see compact)

    @property
    def changed(self) -> bool:
        return bool(self.episodes or self.rewritten)


class _PartWriter:
    """Streams batches into staged part files of one table, cutting row groups and parts by size."""

    def __init__(self, store: RunStore, table: str, gen: int, token: str):
        self.store, self.table, self.gen, self.token = store, table, gen, token
        self.schema = SCHEMAS[table]
        self.names: list[str] = []
        self.rows = 0
        self._buf: list[pa.RecordBatch] = []
        self._buf_rows = self._buf_bytes = self._part_rows = 0
        # the part being written: its stream (entered) and the Parquet writer onto it
        self._part: tuple[AbstractContextManager[IO[bytes]], pq.ParquetWriter] | None = None

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self._buf.append(batch)
        self._buf_rows += batch.num_rows
        self._buf_bytes += batch.nbytes
        if len(self._buf) >= COALESCE_BATCHES:
            # a batch per episode costs kilobytes of buffers beyond its rows (16k one-row
            # episodes batches: ~200 MB): held as one batch, the buffer weighs what its rows do
            merged = pa.Table.from_batches(self._buf, self.schema).combine_chunks()
            self._buf = merged.to_batches()
            self._buf_bytes = merged.nbytes
        if self._buf_rows >= ROW_GROUP_ROWS[self.table] or self._buf_bytes >= ROW_GROUP_BYTES:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        """Write full row groups (and, when ``final`` or the buffer holds too many bytes, the
        rest), never past a part's end."""
        if not self._buf_rows:
            return
        table = pa.Table.from_batches(self._buf, self.schema)
        force = final or self._buf_bytes >= ROW_GROUP_BYTES
        offset = 0
        while offset < table.num_rows:
            size = min(ROW_GROUP_ROWS[self.table], PART_ROWS[self.table] - self._part_rows)
            left = table.num_rows - offset
            if left < size and not force:
                break
            self._write_group(table.slice(offset, min(size, left)))
            offset += min(size, left)
        rest = table.slice(offset)
        self._buf = rest.to_batches() if rest.num_rows else []
        self._buf_rows, self._buf_bytes = rest.num_rows, rest.nbytes if rest.num_rows else 0

    def _write_group(self, group: pa.Table) -> None:
        if self._part is None:
            name = compacted_name(self.gen, self.token, len(self.names))
            self.names.append(name)
            stream = self.store.open_write(staged_path(self.store, self.table, name))
            self._part = (stream, pq.ParquetWriter(stream.__enter__(), self.schema, compression="zstd",
                                                   write_statistics=True))
        self._part[1].write_table(group, row_group_size=group.num_rows)
        self.rows += group.num_rows
        self._part_rows += group.num_rows
        if self._part_rows >= PART_ROWS[self.table]:
            self._close_part()

    def _close_part(self) -> None:
        if self._part is not None:
            stream, writer = self._part
            writer.close()
            stream.__exit__(None, None, None)
            self._part = None
            self._part_rows = 0

    def close(self) -> list[str]:
        self._flush(final=True)
        self._close_part()
        return self.names

    def abort(self) -> None:
        if self._part is not None:
            stream, writer = self._part
            try:
                writer.close()
                stream.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - the error that made us abort is the one to report
                pass


def _ids_in(store: RunStore, table: str, entry: Entry, ids: list[str]) -> set[str]:
    """Which of the sorted ``ids`` a compacted file holds: row-group statistics first, then the
    ``episode_id`` column of the row groups whose range could hold one."""
    if not ids:
        return set()
    with store.filesystem.open_input_file(store.path(f"{table}/{entry.name}")) as f:
        pf = pq.ParquetFile(f)
        col = pf.schema_arrow.get_field_index("episode_id")
        found: set[str] = set()
        for rg in range(pf.metadata.num_row_groups):
            stats = pf.metadata.row_group(rg).column(col).statistics
            if stats is not None and stats.has_min_max:
                lo = bisect_left(ids, stats.min)
                if lo == len(ids) or ids[lo] > stats.max:
                    continue
            held = set(pf.read_row_group(rg, columns=["episode_id"]).column(0).to_pylist())
            found.update(held.intersection(ids))
        return found


def _num_rows(store: RunStore, table: str, entry: Entry) -> int:
    with store.filesystem.open_input_file(store.path(f"{table}/{entry.name}")) as f:
        return pq.ParquetFile(f).metadata.num_rows


def _batches(data: ds.Dataset, where: ds.Expression | None, readahead: int) -> Iterator[pa.RecordBatch]:
    yield from data.to_batches(filter=where, batch_size=READ_BATCH_ROWS, fragment_readahead=readahead,
                               batch_readahead=2)


def _per_episode_files(table: str, rows: pa.Table) -> list[tuple[str, bytes]]:
    """Per-episode files (name, bytes) of the rows moved out of compacted files, encoded as a
    driver encodes them."""
    out = []
    ids = rows.column("episode_id")
    for eid in sorted(set(ids.to_pylist())):
        mine = rows.filter(pc.equal(ids, eid))
        if table == STEPS_DIR:
            mine = mine.sort_by("step")
        out.append((episode_file(eid), parquet_bytes(mine, PER_EPISODE_COMPRESSION[table])))
    return out


def _held(store: RunStore, table: str, entries: list[Entry], ids: list[str]) -> dict[str, set[str]]:
    """file name -> which of the sorted ``ids`` it holds, for the files that hold any."""
    found = {}
    for e in entries:
        held = _ids_in(store, table, e, ids)
        if held:
            found[e.name] = held
    return found


def _rewrite(store: RunStore, take: list[str], move_out: set[str], *, merge_small: bool,
             progress: Progress | None) -> CompactionResult:
    """One compaction: pack the complete per-episode files ``take`` and move the episodes
    ``move_out`` from compacted files back into per-episode files."""
    views = {t: table_files(store, t) for t in TABLES}
    current = views[EPISODES_DIR].record
    take = sorted(take)
    take_set = set(take)
    own = {t: {episode_of(e.name): e for e in views[t].per_episode} for t in TABLES}
    # episodes of compacted files that leave them: those moved out, and those whose per-episode
    # files are newer (rerun after the compaction); both tables hold the same episodes
    held = _held(store, EPISODES_DIR, views[EPISODES_DIR].compacted, sorted(take_set | move_out))
    drop = sorted(set().union(*held.values())) if held else []
    moving = sorted(set(drop) & move_out - take_set)
    rewrite: dict[str, list[Entry]] = {}
    for t in TABLES:
        holding = held if t == EPISODES_DIR else _held(store, t, views[t].compacted, drop)
        chosen = [e for e in views[t].compacted if e.name in holding]
        small = [e for e in views[t].compacted
                 if merge_small and e.name not in holding and _num_rows(store, t, e) < PART_ROWS[t] // 4]
        if small and (take or chosen or len(small) > 1):
            chosen += small
        rewrite[t] = sorted(chosen, key=lambda e: e.name)
    if not take and not any(rewrite.values()):
        return CompactionResult(current, files={t: len(views[t].compacted) for t in TABLES})

    gen = (current.gen + 1) if current is not None else 1
    token = secrets.token_hex(4)
    outputs: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    for t in TABLES:
        outputs[t], rows[t] = _write_parts(store, t, gen, token, rewrite[t], drop, [own[t][i] for i in take],
                                           progress)
    moved: dict[str, list[tuple[str, bytes]]] = {t: [] for t in TABLES}
    if moving:
        for t in TABLES:
            rows_out = dataset_of(store, t, views[t].compacted).to_table(
                filter=ds.field("episode_id").isin(pa.array(moving, pa.string())))
            moved[t] = _per_episode_files(t, rows_out)

    live = {t: sorted({e.name for e in views[t].compacted} - {e.name for e in rewrite[t]} | set(outputs[t]))
            for t in TABLES}
    record = CompactionRecord(gen, token, live, outputs, {t: [n for n, _ in moved[t]] for t in TABLES},
                    {t: [e.name for e in rewrite[t]] for t in TABLES}, rows,
                    datetime.now(UTC).isoformat(timespec="seconds"))
    replaced = []
    for t in TABLES:
        for i in take:
            e = own[t][i]
            # a local listing leaves sizes and times out: look now, before anything is published
            looked = e if e.mtime_ns is not None else store.stat(f"{t}/{e.name}")
            if looked is not None:
                replaced.append((t, looked))
    store.put(f"{COMPACTION_DIR}/{record.replaces_name}", _replaces_bytes(replaced))
    store.put(f"{COMPACTION_DIR}/{record.name}", record.to_json().encode("utf-8"))
    for t in TABLES:  # steps first, as a driver writes them
        for name, data in moved[t]:
            store.put(f"{t}/{name}", data)
    if not _publish(store, record):
        raise OSError(f"{store.display(COMPACTION_DIR)}: a staged file of compaction {record.stem} vanished "
                      "(was the run cleaned while it was compacted?)")
    names, _ = _record_listing(store)
    meanwhile = _finish(store, record, [n for n in names if n < record.name])
    _clear_staging(store)
    return CompactionResult(record, episodes=len(take), rewritten=sum(len(v) for v in rewrite.values()),
                            moved=len(moving), rows=rows, files={t: len(live[t]) for t in TABLES},
                            rewritten_meanwhile=meanwhile)


def _write_parts(store: RunStore, table: str, gen: int, token: str, rewrite: list[Entry], drop: list[str],
                 per_episode: list[Entry], progress: Progress | None) -> tuple[list[str], int]:
    """Stage the parts of one table: the kept rows of ``rewrite``, then the per-episode files
    ``per_episode`` (sorted by id), streamed; returns (part names, rows)."""
    writer = _PartWriter(store, table, gen, token)
    total, done = len(rewrite) + len(per_episode), 0
    try:
        where = ~ds.field("episode_id").isin(pa.array(drop, pa.string())) if drop else None
        for e in rewrite:
            for batch in _batches(dataset_of(store, table, [e]), where, 1):
                writer.write(batch)
            done += 1
            if progress:
                progress(table, done, total)
        # a few hundred files per dataset: a scanned fragment keeps its file's metadata, so one
        # dataset over every file would hold all of them in memory until the end
        for start in range(0, len(per_episode), PER_EPISODE_CHUNK):
            chunk = per_episode[start:start + PER_EPISODE_CHUNK]
            for batch in dataset_of(store, table, chunk).to_batches(
                    batch_size=READ_BATCH_ROWS, fragment_readahead=PER_EPISODE_READAHEAD, batch_readahead=2):
                writer.write(batch)
            done += len(chunk)
            if progress:
                progress(table, done, total)
        names = writer.close()
    except BaseException:
        writer.abort()
        raise
    if progress:
        progress(table, total, total)
    return names, writer.rows


def _replaces_bytes(replaced: list[tuple[str, Entry]]) -> bytes:
    return parquet_bytes(pa.table({"table": [t for t, _ in replaced], "name": [e.name for _, e in replaced],
                                   "size": pa.array([e.size for _, e in replaced], pa.int64()),
                                   "mtime_ns": pa.array([e.mtime_ns for _, e in replaced], pa.int64())}))


def complete_episodes(store: RunStore) -> list[str]:
    """Ids of the episodes whose two per-episode files are both there (the episodes file is
    written last, so it is listed first: a steps file listed after it is surely whole)."""
    episodes = {episode_of(e.name) for e in table_files(store, EPISODES_DIR).per_episode}
    steps = {episode_of(e.name) for e in table_files(store, STEPS_DIR).per_episode}
    return sorted(episodes & steps)


def compact(run: str | os.PathLike | RunStore, *, progress: Progress | None = None) -> CompactionResult:
    """Pack a run's complete per-episode files into compacted files (and merge small compacted
    files); idempotent: a compact run is left as it is."""
    store = open_store(run)
    roll_forward(store)
    result = _rewrite(store, complete_episodes(store), set(), merge_small=True, progress=progress)
    if not result.rewritten_meanwhile:
        return result
    # Episodes rerun while it ran (their files changed after they were read) now stand twice: the
    # compacted rows and their newer own files. A second pass packs the newer files and drops the
    # older rows, so the run ends exact (readers may see those episodes twice in between).
    again = _rewrite(store, sorted(result.rewritten_meanwhile & set(complete_episodes(store))), set(),
                     merge_small=False, progress=progress)
    return replace(result, record=again.record, rewritten=result.rewritten + again.rewritten, files=again.files,
                   rewritten_meanwhile=again.rewritten_meanwhile)


def extract(run: str | os.PathLike | RunStore, ids: Iterable[str]) -> int:
    """Move episodes out of compacted files into per-episode files again (before they are rerun,
    so a rerun replaces their files as in an uncompacted run); returns how many moved."""
    store = open_store(run)
    roll_forward(store)
    wanted = set(ids) - {episode_of(e.name) for e in table_files(store, EPISODES_DIR).per_episode}
    if not wanted:
        return 0
    return _rewrite(store, [], wanted, merge_small=False, progress=None).moved
