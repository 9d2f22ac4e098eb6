"""Durable steps of unfinished episodes: one append-only JSON-lines journal per episode.

A step reaches its episode's journal before the episode asks its model for the next turn, so an
actor, node or driver that dies mid-episode costs at most the call that was in flight: the rerun
continues from the last journaled step (``episodes.episode.run_episode(recorded=...)``) and
never pays for a recorded call again. When the episode's Parquet files are written, its journal
is removed.

Journals live on the driver's disk: ``<run>/partial/<episode_id>.jsonl`` for a run in a local
folder, or under the user's cache folder for a run kept in object storage (``Journals.of_run``),
whichever node ran the episode. Lines::

    {"step": {<one StepRecord row>}}                 one per step, in order
    {"resume": <attempt>, "from_step": <k>}          an attempt that continued after step k

A torn last line (a crash in the middle of a write) is ignored; steps after a gap are ignored.
``Journals`` is the format and nothing else: the Ray actor that owns the writing is in
``orchestrator.journal_actor``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from env.files import atomic_write
from traces._records import StepRecord, json_default
from traces._store import RunStore, cache_home

JOURNAL_DIR = "partial"
SUFFIX = ".jsonl"


@dataclass
class JournalRead:
    """What a journal holds: the recorded step rows (contiguous from step 1), how many times the
    episode was resumed, and its valid lines as written."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    resumed: int = 0
    lines: list[str] = field(default_factory=list)

    @property
    def steps(self) -> list[StepRecord]:
        return [StepRecord.from_row(r) for r in self.rows]

    @property
    def cost_usd(self) -> float:
        return sum(float(r.get("cost_usd") or 0.0) for r in self.rows)


def parse(lines: Iterable[str], max_steps: int | None = None) -> JournalRead:
    """The journal's valid prefix, up to ``max_steps`` steps."""
    out = JournalRead()
    for line in lines:
        if not line.endswith("\n"):
            break  # torn by a crash mid-write
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            break
        if "step" in item:
            if item["step"].get("step") != len(out.rows) + 1 or (max_steps is not None and len(out.rows) >= max_steps):
                break
            out.rows.append(item["step"])
        elif "resume" in item:
            out.resumed += 1
        out.lines.append(line)
    return out


class Journals:
    """The journals of one run's unfinished episodes, one file per episode in ``folder``.

    Anyone may read them (``read``, ``ids``); one process writes them (the driver's journal
    actor). ``start`` opens an attempt at an episode: the journal is cut back to the steps the
    attempt was given (a step from an attempt that died after the driver read its journal is
    dropped) and a resume line is written; ``append`` adds steps of the current attempt only; a
    stale attempt's late steps are ignored. Lines are written to the file at once (a process that
    dies after ``append`` returned loses nothing); ``sync`` fsyncs the files ``take_dirty``
    names, written since its last call, against the loss of the machine itself, in batches (an
    fsync per step would cost more than the step on many disks).
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.attempts: dict[str, int] = {}
        self.dirty: set[Path] = set()

    @classmethod
    def of_run(cls, run: str | os.PathLike | RunStore) -> Journals:
        """A run's journals: its own ``partial/`` folder, or for a run in object storage a folder
        of the local cache named after the run's URI (the driver's disk, whichever node ran the
        episode)."""
        where = run.where if isinstance(run, RunStore) else run
        text = str(where)
        if "://" not in text:
            return cls(Path(where) / JOURNAL_DIR)
        return cls(cache_home() / JOURNAL_DIR / hashlib.sha256(text.encode()).hexdigest()[:20])

    @staticmethod
    def step_line(row: dict[str, Any]) -> str:
        return json.dumps({"step": row}, default=json_default, separators=(",", ":")) + "\n"

    @staticmethod
    def resume_line(attempt: int, from_step: int) -> str:
        return json.dumps({"resume": attempt, "from_step": from_step}) + "\n"

    def path(self, episode_id: str) -> Path:
        return self.folder / f"{episode_id}{SUFFIX}"

    def read(self, episode_id: str, max_steps: int | None = None) -> JournalRead:
        try:
            with open(self.path(episode_id), encoding="utf-8") as f:
                return parse(f, max_steps)
        except FileNotFoundError:
            return JournalRead()

    def ids(self) -> set[str]:
        """The episodes that have a journal."""
        if not self.folder.is_dir():
            return set()
        return {p.name.removesuffix(SUFFIX) for p in self.folder.glob(f"*{SUFFIX}")}

    def remove(self, episode_id: str) -> None:
        self.attempts.pop(episode_id, None)
        self.path(episode_id).unlink(missing_ok=True)

    def start(self, episode_id: str, attempt: int, keep: int) -> JournalRead:
        """Open ``attempt`` at an episode from its first ``keep`` journaled steps; returns what the
        journal keeps (its cost is what the attempt starts from)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.attempts[episode_id] = attempt
        path = self.path(episode_id)
        kept = self.read(episode_id, max_steps=keep)
        if not kept.rows:
            path.unlink(missing_ok=True)  # nothing to continue from: the episode starts afresh
            return kept
        atomic_write(path, "".join([*kept.lines, self.resume_line(attempt, len(kept.rows))]))
        return kept

    def append(self, episode_id: str, attempt: int, lines: list[str], sync: bool) -> bool:
        """Append ``lines`` of ``attempt``; False (nothing written) for a stale attempt. ``sync``:
        the lines record paid calls, worth a disk flush at the next ``sync``."""
        if self.attempts.get(episode_id, attempt) != attempt:
            return False
        self.attempts[episode_id] = attempt
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(episode_id)
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(lines)
        if sync:
            self.dirty.add(path)
        return True

    def take_dirty(self) -> set[Path]:
        dirty, self.dirty = self.dirty, set()
        return dirty

    @staticmethod
    def sync(paths: set[Path]) -> None:
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # finished and removed meanwhile
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
