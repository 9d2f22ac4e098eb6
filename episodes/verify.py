"""Every episode of some runs replayed and checked (``gridbench board``, docs/board.md).

Each episode is replayed from its recorded actions by ``episodes.replay.replay_episode``, the code
``gridbench replay --verify`` runs, in worker processes that each read a chunk of one run's
episodes and steps at once. A verdict is kept under a key of everything the replay depends on: the
episode's row, its steps, its maze and the dynamics' version (``env.ENV_VERSION``). Verdicts are
saved in a file as chunks finish, so a second verification with the same file replays only the
episodes it has no verdict for: the ones a killed verification did not reach, and any whose trace
changed since (a changed trace has another key).
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agents.protocol import resolve_protocol
from env import ENV_VERSION, maze_from_dict
from env.errors import BadInput
from env.files import atomic_write
from episodes.replay import replay_episode
from traces import EPISODES_DIR, MANIFEST, STEPS_DIR, open_store, read_manifest, read_table

VERDICTS_FORMAT = "gridbench.verdicts/1"
CHUNK = 100  # episodes a worker reads and replays at once, at most
SAVE_EVERY_S = 5.0  # the verdicts file is rewritten at most this often while chunks finish, and at the end
SHOWN_CHARS = 200  # of a recorded or replayed value in a verdict


@dataclass(frozen=True)
class Verdict:
    """Whether an episode's trace reproduces; where it does not, the first place it departs."""

    ok: bool
    step: int | None = None  # the step where the trace departs (its number of steps for the ending)
    column: str | None = None  # the column that differs ("termination" for the ending, "trace" when unreadable)
    recorded: str | None = None
    replayed: str | None = None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def trace_key(episode: dict[str, Any], steps: Any, maze: Any) -> str:
    """sha256 of what an episode's replay depends on: its row, its steps (a DataFrame), the maze
    content the manifest stores for it, and the dynamics' version."""
    h = hashlib.sha256()
    h.update(json.dumps([ENV_VERSION, episode, maze], sort_keys=True, default=str).encode())
    h.update(steps.to_json(orient="split", index=False, default_handler=str).encode())
    return h.hexdigest()


def verify_episode(episode: dict[str, Any], steps: Any, maze_content: Any, where: str) -> Verdict:
    """Replay one episode read from a run (``where`` names the run in messages)."""
    if maze_content is None:
        return Verdict(False, 0, "maze_checksum", _shown(episode.get("maze_checksum")), "no such maze in the manifest")
    try:
        maze = maze_from_dict(maze_content, f"{where}/{MANIFEST}")
        protocol = resolve_protocol(json.loads(episode.get("protocol") or ""), f"{where} protocol")
        result = replay_episode(episode, steps, maze, protocol)
    except (BadInput, ValueError, KeyError, TypeError, IndexError) as err:
        return Verdict(False, 0, "trace", "unreadable", _shown(f"{type(err).__name__}: {err}"))
    if result.ok:
        return Verdict(True)
    first = min(result.mismatches, key=lambda m: m.step)
    return Verdict(False, first.step, first.column, _shown(first.recorded), _shown(first.replayed))


_KNOWN: frozenset[str] = frozenset()


def _remember(known: frozenset[str]) -> None:
    global _KNOWN
    _KNOWN = known


def _verify_chunk(run: str, ids: list[str]) -> list[tuple[tuple[str, str], str, Verdict | None]]:
    """((run name, episode id), key, verdict) for the episodes ``ids`` of ``run``; the verdict is
    None where the key is among the known ones (the caller has it)."""
    episodes = read_table(run, EPISODES_DIR, ids=ids).to_pylist()
    steps = read_table(run, STEPS_DIR, ids=ids).to_pandas()
    mazes = (read_manifest(run) or {}).get("mazes") or {}
    by_episode = dict(tuple(steps.groupby("episode_id", sort=False))) if len(steps) else {}
    store = open_store(run, "RUN")
    where = store.display()
    out: list[tuple[tuple[str, str], str, Verdict | None]] = []
    for episode in episodes:
        eid = episode["episode_id"]
        own = by_episode.get(eid, steps.iloc[0:0]).sort_values("step").reset_index(drop=True)
        maze = mazes.get(episode.get("maze_checksum") or "")
        key = trace_key(episode, own, maze)
        out.append(((episode.get("run") or store.name, eid), key, None if key in _KNOWN else verify_episode(episode, own, maze, where)))
    return out


def read_verdicts(path: Path) -> dict[str, Verdict]:
    """The verdicts saved at ``path`` by key; {} when there are none or the file is not a verdicts file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != VERDICTS_FORMAT:
        return {}
    return {k: Verdict(**v) for k, v in (data.get("verdicts") or {}).items()}


def save_verdicts(path: Path, verdicts: dict[str, Verdict]) -> None:
    atomic_write(path, json.dumps({"format": VERDICTS_FORMAT, "verdicts": {k: asdict(v) for k, v in verdicts.items()}},
                                  separators=(",", ":")) + "\n")


@dataclass
class Verification:
    """Every episode's verdict, by (its ``run`` column, a blank one read as the run folder's name,
    and its episode id); ``replayed`` of them were replayed now, the rest came from the verdicts file."""

    verdicts: dict[tuple[str, str], Verdict]
    replayed: int


def verify_runs(runs: Sequence[str], saved: Path, workers: int | None = None,
                progress: Callable[[int, int], None] | None = None) -> Verification:
    """Verify every episode of ``runs`` in ``workers`` processes (default: one per CPU), reusing and
    updating the verdicts file ``saved``; ``progress(done, total)`` as chunks finish."""
    known = read_verdicts(saved)
    chunks: list[tuple[str, list[str]]] = []
    workers = max(1, workers or os.cpu_count() or 1)
    for run in runs:
        ids = sorted(read_table(run, EPISODES_DIR, ["episode_id"]).column("episode_id").to_pylist())
        size = max(1, min(CHUNK, math.ceil(len(ids) / workers)))
        chunks.extend((run, ids[i:i + size]) for i in range(0, len(ids), size))
    total = sum(len(ids) for _, ids in chunks)
    result = Verification({}, 0)
    done, last_save = 0, time.monotonic()
    if progress:
        progress(0, total)

    def collect(rows: list[tuple[tuple[str, str], str, Verdict | None]]) -> None:
        nonlocal done, last_save
        for episode, key, verdict in rows:
            if verdict is None:
                verdict = known[key]
            else:
                known[key] = verdict
                result.replayed += 1
            result.verdicts[episode] = verdict
        done += len(rows)
        if progress:
            progress(done, total)
        if time.monotonic() - last_save >= SAVE_EVERY_S:
            save_verdicts(saved, known)
            last_save = time.monotonic()

    if workers == 1 or len(chunks) <= 1:
        _remember(frozenset(known))
        for run, ids in chunks:
            collect(_verify_chunk(run, ids))
    else:
        # spawned, not forked: the parent holds pyarrow's thread pools, which a fork does not copy whole
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(workers, len(chunks)), mp_context=context, initializer=_remember,
                                 initargs=(frozenset(known),)) as pool:
            pending = {pool.submit(_verify_chunk, run, ids) for run, ids in chunks}
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    collect(f.result())
    save_verdicts(saved, known)
    return result
