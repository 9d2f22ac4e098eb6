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

A compaction is planned (``_plan``: which files it packs and rewrites), staged (``_stage``: its
parts, where no reader looks) and committed (``_commit``: its record, then published, then what it
replaced deleted), the commit protocol of ``traces._commit``, which keeps every reader exact.
``extract`` is the same compaction run the other way: episodes moved out of compacted files.
"""

from __future__ import annotations

import os
import secrets
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

from traces._commit import (
    COMPACTION_DIR,
    CompactionRecord,
    TableFiles,
    clear_staging,
    dataset_of,
    finish,
    publish,
    record_listing,
    roll_forward,
    staged_path,
    table_files,
)
from traces._names import compacted_name, episode_file, episode_of
from traces._schema import EPISODES_DIR, PER_EPISODE_COMPRESSION, SCHEMAS, STEPS_DIR, TABLES, parquet_bytes
from traces._store import Entry, RunStore, open_store

# row groups of compacted files: small enough that a lookup by id reads little, large enough
# that a whole-table scan is not dominated by per-group overhead
ROW_GROUP_ROWS = {STEPS_DIR: 65_536, EPISODES_DIR: 16_384}
ROW_GROUP_BYTES = 32 * 2**20  # Arrow bytes buffered per row group: bounds memory with long replies
PART_ROWS = {STEPS_DIR: 4_000_000, EPISODES_DIR: 1_000_000}
READ_BATCH_ROWS = 16_384
PER_EPISODE_READAHEAD = 32  # per-episode files read ahead (small: one episode each)
PER_EPISODE_CHUNK = 512
COALESCE_BATCHES = 256

Progress = Callable[[str, int, int], None]  # (table, files done, files in all)


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


@dataclass
class _Plan:
    """What one compaction will do, decided before anything is written."""

    views: dict[str, TableFiles]  # each table's files now
    to_pack: list[str]  # sorted ids of the complete per-episode files to pack
    per_episode: dict[str, dict[str, Entry]]  # table -> episode id -> its own file
    leaving: list[str]  # sorted ids whose compacted rows are dropped: moved out, or rerun since packed
    moved_out: list[str]  # sorted ids written back as per-episode files (of ``leaving``)
    rewrite: dict[str, list[Entry]]  # table -> its compacted files rewritten (those ``leaving`` ones hold, small ones)

    @property
    def empty(self) -> bool:
        return not self.to_pack and not any(self.rewrite.values())

    @property
    def in_force(self) -> CompactionRecord | None:
        return self.views[EPISODES_DIR].record


def _plan(store: RunStore, to_pack: list[str], move_out: set[str], merge_small: bool) -> _Plan:
    """Which files a compaction packing ``to_pack`` and moving ``move_out`` out reads and rewrites.
    Both tables hold the same episodes, so the episodes table decides which ones leave."""
    views = {t: table_files(store, t) for t in TABLES}
    to_pack = sorted(to_pack)
    per_episode = {t: {episode_of(e.name): e for e in views[t].per_episode} for t in TABLES}
    holders = _held(store, EPISODES_DIR, views[EPISODES_DIR].compacted, sorted(set(to_pack) | move_out))
    leaving = sorted(set().union(*holders.values())) if holders else []
    moved_out = sorted(set(leaving) & move_out - set(to_pack))
    rewrite: dict[str, list[Entry]] = {}
    for t in TABLES:
        holding = holders if t == EPISODES_DIR else _held(store, t, views[t].compacted, leaving)
        chosen = [e for e in views[t].compacted if e.name in holding]
        small = [e for e in views[t].compacted
                 if merge_small and e.name not in holding and _num_rows(store, t, e) < PART_ROWS[t] // 4]
        if small and (to_pack or chosen or len(small) > 1):
            chosen += small
        rewrite[t] = sorted(chosen, key=lambda e: e.name)
    return _Plan(views, to_pack, per_episode, leaving, moved_out, rewrite)


Moved = dict[str, list[tuple[str, bytes]]]  # table -> the per-episode files (name, bytes) moved out


def _stage(store: RunStore, plan: _Plan, gen: int, token: str,
           progress: Progress | None) -> tuple[CompactionRecord, Moved]:
    """Write a compaction's parts where no reader looks and encode the per-episode files it moves
    out (an episode without steps has no steps file); its record says what they make up."""
    outputs: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    for t in TABLES:
        outputs[t], rows[t] = _write_parts(store, t, gen, token, plan.rewrite[t], plan.leaving,
                                           [plan.per_episode[t][i] for i in plan.to_pack], progress)
    moved: Moved = {t: [] for t in TABLES}
    if plan.moved_out:
        for t in TABLES:
            rows_out = dataset_of(store, t, plan.views[t].compacted).to_table(
                filter=ds.field("episode_id").isin(pa.array(plan.moved_out, pa.string())))
            moved[t] = _per_episode_files(t, rows_out)
    live = {t: sorted({e.name for e in plan.views[t].compacted} - {e.name for e in plan.rewrite[t]} | set(outputs[t]))
            for t in TABLES}
    record = CompactionRecord(gen, token, live, outputs, {t: [n for n, _ in moved[t]] for t in TABLES},
                              {t: [e.name for e in plan.rewrite[t]] for t in TABLES}, rows,
                              datetime.now(UTC).isoformat(timespec="seconds"))
    return record, moved


def _commit(store: RunStore, plan: _Plan, record: CompactionRecord, moved: Moved) -> set[str]:
    """Put a staged compaction in force (``traces._commit``): its replaces list and record, the
    episodes it moves out, its parts published, then what it replaced deleted. Returns the ids
    rerun while it ran (see ``finish``)."""
    replaced = []
    for t in TABLES:
        for i in plan.to_pack:
            e = plan.per_episode[t][i]
            # a local listing leaves sizes and times out: look now, before anything is published
            looked = e if e.mtime_ns is not None else store.stat(f"{t}/{e.name}")
            if looked is not None:
                replaced.append((t, looked))
    store.put(f"{COMPACTION_DIR}/{record.replaces_name}", _replaces_bytes(replaced))
    store.put(f"{COMPACTION_DIR}/{record.name}", record.to_json().encode("utf-8"))
    for t in TABLES:  # steps first, as a driver writes them
        for name, data in moved[t]:
            store.put(f"{t}/{name}", data)
    if not publish(store, record):
        raise OSError(f"{store.display(COMPACTION_DIR)}: a staged file of compaction {record.stem} vanished "
                      "(was the run cleaned while it was compacted?)")
    names, _ = record_listing(store)
    meanwhile = finish(store, record, [n for n in names if n < record.name])
    clear_staging(store)
    return meanwhile


def _rewrite(store: RunStore, to_pack: list[str], move_out: set[str], *, merge_small: bool,
             progress: Progress | None) -> CompactionResult:
    """One compaction: pack the complete per-episode files ``to_pack`` and move the episodes
    ``move_out`` from compacted files back into per-episode files."""
    plan = _plan(store, to_pack, move_out, merge_small)
    if plan.empty:
        return CompactionResult(plan.in_force, files={t: len(plan.views[t].compacted) for t in TABLES})
    gen = (plan.in_force.gen + 1) if plan.in_force is not None else 1
    record, moved = _stage(store, plan, gen, secrets.token_hex(4), progress)
    meanwhile = _commit(store, plan, record, moved)
    return CompactionResult(record, episodes=len(plan.to_pack), rewritten=sum(len(v) for v in plan.rewrite.values()),
                            moved=len(plan.moved_out), rows=record.rows,
                            files={t: len(record.live[t]) for t in TABLES}, rewritten_meanwhile=meanwhile)


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
