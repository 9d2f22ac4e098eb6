"""The sweep driver: Ray actors run episodes, the driver schedules them and writes their traces.

The driver keeps a bounded number of episodes in flight (per-model ``max_concurrency``, slots
per actor), started longest expected first (``Pending.fill``: the step cap, or what the run's
finished episodes say), collects them as they finish and writes each one's files at once (the actors
encode them), keeping only each episode's one row for the run's summary, so its memory does
not grow with the steps of the sweep. An actor or node that dies costs only the episodes it hosted
(one for a CPU actor, up to ``MODEL_SLOTS`` for a model actor): they are
rescheduled on a new actor, at most ``MAX_ATTEMPTS`` times in all (``attempts`` is recorded;
an episode that was still queued behind the running one is rescheduled without a charge);
past that, or when the episode itself fails, it is written as ``error`` and the sweep goes on.
A killed driver leaves complete files only; the same command then runs exactly the missing
episodes (``--retry-errors`` also reruns those that ended in ``error``).

Interrupted (``request_stop``: the ``run`` command's Ctrl-C), the driver starts nothing more and
every running episode stops after its current turn: the model calls in flight get ``GRACE_S``
to be answered and journaled, so a rerun asks none of them again. Past the grace, or on a second
request, the actors go at once, and the calls still in flight then are asked again on resume
(as after SIGKILL).

Its state, in named parts: what runs next and where, and what becomes of each episode collected
(``orchestrator.scheduling.Scheduler``, over the episodes waiting and running), the actors
(``orchestrator.actors.Actors``), the budgets and concurrency
(``orchestrator.journal_actor.Spending``), a stop (``Stopping``) and the writer thread
(``TraceWriter``). ``orchestrator.run.run_sweep`` is the run around it: Ray, the model servers,
the checks and the compaction.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray

from orchestrator.actors import Actors, Resume
from orchestrator.estimate import Lengths
from orchestrator.journal_actor import POLL_S, Spending
from orchestrator.reporter import Reporter
from orchestrator.scheduling import MAX_ATTEMPTS, Pending, Scheduler
from orchestrator.sweep import EpisodeSpec, Sweep
from traces import (
    ERROR,
    EncodedEpisode,
    EpisodeRecord,
    Journals,
    RunStore,
    clean_partial,
    completed_ids,
    episodes_frame,
    extract,
    git_info,
    open_store,
    read_episodes,
    write_episode,
    write_manifest,
)

if TYPE_CHECKING:
    import pandas as pd

    from orchestrator.serving.server_pool import ServerPool

WRITE_BACKLOG = 64  # finished episodes waiting for the writer thread
# On Ctrl-C, how long the model calls in flight get to return (and be journaled) before the actors
# go: a turn of a hosted model seldom takes longer, and an interrupted user will not wait for long.
GRACE_S = 5.0
BATCH_REPORT_S = 2.0  # how often the progress line hears of the batch arms' rounds


class TraceWriter:
    """Finished episodes written on a thread of their own, so the loop refills actors while files
    are fsynced; at most ``WRITE_BACKLOG`` results wait in memory."""

    def __init__(self, write: Callable[[EncodedEpisode], None]):
        self.write = write
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="gridbench-writer")
        self.writes: deque[Future] = deque()

    def submit(self, result: EncodedEpisode) -> None:
        self.writes.append(self.thread.submit(self.write, result))
        self.drain(WRITE_BACKLOG)

    def drain(self, keep: int = 0) -> None:
        while len(self.writes) > keep:
            self.writes.popleft().result()  # a failed write (disk full) stops the driver here

    def shutdown(self) -> None:
        self.thread.shutdown(wait=True)  # whatever was handed over is written, even on Ctrl-C


@dataclass
class RunOutcome:
    run_dir: Path | str  # a local folder, or the run's URI
    planned: int
    skipped: int  # already complete before this invocation
    ran: int
    errors: int  # error episodes in the run (this matrix) after this invocation
    episodes: pd.DataFrame | None = field(default=None, repr=False)  # the run's episodes (this matrix)
    suspended: int = 0  # episodes stopped by a budget, resumable: still to finish
    not_started: int = 0  # episodes a budget kept from starting
    ledger: dict[str, dict[str, float | None]] = field(default_factory=dict)
    concurrency: dict[str, list[tuple[float, int, str]]] = field(default_factory=dict)
    stop: Stop | None = None  # the run was interrupted: what it left

    @property
    def unfinished(self) -> int:
        return self.suspended + self.not_started

    @property
    def exit_code(self) -> int:
        if self.stop is not None:
            return 130  # interrupted, as a shell reports Ctrl-C
        return 1 if self.errors or self.unfinished else 0


@dataclass(frozen=True)
class Stop:
    """What an interrupted invocation left of the matrix: episodes complete (``done``, those that
    ended in error included), with journaled steps to continue from (``in_progress``), and not
    started; ``graceful``: every model call in flight was answered and journaled in the grace."""

    done: int
    in_progress: int
    not_started: int
    graceful: bool


class Stopping:
    """A run's stop: the first request a graceful one (nothing more starts, each running episode
    stops after its current turn, within ``grace_s``), the next at once."""

    def __init__(self, grace_s: float = GRACE_S):
        self.grace_s = grace_s
        self.requests = 0  # Ctrl-C presses
        self.since: float | None = None  # when the loop began stopping
        self.mid = 0  # episodes that stopped between turns for it

    def begun(self) -> bool:
        """A request came and the loop has not yet acted on it."""
        return bool(self.requests) and self.since is None

    def over(self) -> bool:
        """The grace is over, or a second request came."""
        assert self.since is not None
        return self.requests > 1 or time.monotonic() - self.since >= self.grace_s

    def left(self, journals: Journals, specs: list[EpisodeSpec], episodes: pd.DataFrame, graceful: bool) -> Stop:
        """What an interrupted invocation leaves: complete, journaled, not started."""
        done = set(episodes["episode_id"]) if len(episodes) else set()
        journaled = journals.ids() & ({s.episode_id for s in specs} - done)
        return Stop(len(done), len(journaled), len(specs) - len(done) - len(journaled), graceful)


@dataclass(frozen=True)
class DriverSettings:
    retry_errors: bool = False  # rerun episodes that ended in error too
    max_attempts: int = MAX_ATTEMPTS  # times an episode is started before its actor's losses end it in error
    command: tuple[str, ...] = ()  # the invocation as the manifest records it
    max_cost: float | None = None  # USD the whole run may spend
    # a test's hook, called as each episode is submitted: it may kill the actor or its node there
    on_dispatch: Callable[[EpisodeSpec, Any, int], None] | None = None

    def invocation(self, planned: int, to_run: int) -> dict[str, Any]:
        """This invocation as the manifest records it."""
        return {"command": list(self.command), "planned": planned, "to_run": to_run,
                "retry_errors": self.retry_errors, "max_cost": self.max_cost}


class Driver:
    def __init__(
        self,
        sweep: Sweep,
        run_dir: str | os.PathLike | RunStore,
        *,
        run: str | None = None,
        retry_errors: bool = False,
        reporter: Reporter | None = None,
        pool: ServerPool | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        on_dispatch: Callable[[EpisodeSpec, Any, int], None] | None = None,
        cpu_actors: int | None = None,
        command: list[str] | None = None,
        max_cost: float | None = None,
    ):
        self.sweep = sweep
        self.store = open_store(run_dir)
        self.run = run or self.store.name
        self.settings = DriverSettings(retry_errors, max_attempts, tuple(command or ()), max_cost, on_dispatch)
        self.reporter = reporter or Reporter()
        self.pool = pool
        self.journals = Journals.of_run(self.store)
        self.pending = Pending()
        self.actors = Actors(sweep.models, cpu_actors)
        self.spending = Spending(sweep, max_cost, self.reporter, self.pending.drop_model)
        self.written: dict[str, EpisodeRecord] = {}  # episodes written by this invocation
        self.writer = TraceWriter(self._write_now)
        self.stopping = Stopping()
        self.scheduler = Scheduler(self.run, self.pending, self.actors, self.spending, self.reporter, self.stopping,
                                   pool, self.writer.submit, self._resume, max_attempts, on_dispatch)

    def request_stop(self) -> None:
        """Stop the run (``Stopping``). Only counts: safe from a signal handler."""
        self.stopping.requests += 1

    def plan(self) -> tuple[list[EpisodeSpec], list[EpisodeSpec]]:
        """(every episode of the matrix, those still to run)."""
        specs = self.sweep.episodes()
        done = completed_ids(self.store, include_errors=not self.settings.retry_errors)
        return specs, [s for s in specs if s.episode_id not in done]

    def execute(self) -> RunOutcome:
        clean_partial(self.store)
        if self.pool is not None:  # every episode records the weights its server serves
            self.sweep = self.sweep.with_weights(self.pool.weights())
        specs, todo = self.plan()
        if self.settings.retry_errors and todo:
            # episodes to rerun that a compaction packed: back to files of their own, which the
            # rerun then replaces as in a run never compacted
            extract(self.store, [s.episode_id for s in todo])
        self.pending.fill(todo, self._lengths(specs, todo))
        # the commit before any actor starts: on a machine with several Ray nodes, a node that sets up
        # a job's working dir for its actors deletes and unpacks the copy the driver runs from
        git = git_info()
        self.actors.start_cpu(len(self.pending.cpu))  # actors import and pre-warm while the manifest is written
        invocation = self.settings.invocation(len(specs), len(todo))
        write_manifest(self.store, run=self.run, sweep=self.sweep.resolved(),
                       mazes={m.checksum: m.to_dict() for m in self.sweep.all_mazes}, invocation=invocation, git=git,
                       sealed=self.sweep.sealed)
        todo_ids = {s.episode_id for s in todo}
        self.reporter.start(self.sweep, _per_model(specs), _per_model(s for s in specs if s.episode_id not in todo_ids))
        graceful = True
        try:
            if todo:
                self._start_journal(specs, todo)
                self._start_brokers()
                graceful = self._run()
        finally:
            self.writer.shutdown()
            try:
                # the actors first: a call answered after the grace can no longer reach the journal,
                # whose every line is then flushed
                self.actors.release()
            finally:
                for broker in self.scheduler.brokers.values():
                    ray.kill(broker, no_restart=True)
                try:
                    self.spending.close()
                finally:
                    self.reporter.finish()
        return self._outcome(specs, todo, invocation, graceful)

    def _outcome(self, specs: list[EpisodeSpec], todo: list[EpisodeSpec], invocation: dict[str, Any],
                 graceful: bool) -> RunOutcome:
        """The invocation's outcome, its ledger and what a stop left recorded in the manifest."""
        episodes = _matrix_episodes(self.store, specs, self.written)
        errors = int((episodes["termination"] == ERROR).sum()) if len(episodes) else 0
        spent = self.spending
        stop = self.stopping.left(self.journals, specs, episodes, graceful) if self.stopping.since is not None else None
        if todo:
            write_manifest(self.store, run=self.run, sweep=self.sweep.resolved(), mazes={},
                           invocation={**invocation, "ledger": spent.ledger, "concurrency": spent.history,
                                       "suspended": spent.suspended, "not_started": spent.not_started,
                                       **({"interrupted": asdict(stop)} if stop is not None else {})},
                           replace_last=True)
        return RunOutcome(self.store.where, len(specs), len(specs) - len(todo), len(self.written), errors, episodes,
                          spent.suspended, spent.not_started, spent.ledger, spent.history, stop)

    # ---- seams a test or bench may replace ------------------------------------------------------
    def _start_journal(self, specs: list[EpisodeSpec], todo: list[EpisodeSpec]) -> None:
        """The journal actor, its ledger opened with what the run has spent (``Spending.start``)."""
        self.spending.start(self.store, self.journals, specs, todo)

    def _start_brokers(self) -> None:
        """The lockstep rounds of each ``tier: batch`` arm (``orchestrator.batching``); they end with the driver."""
        from orchestrator.batching import start_brokers

        at_once = {name: self.scheduler.at_once(name) for name in self.pending.model}
        self.scheduler.brokers = start_brokers(self.sweep.models, self.journals.folder, at_once)

    def _lengths(self, specs: list[EpisodeSpec], todo: list[EpisodeSpec]) -> Lengths:
        """How long each episode to run is expected to be, for the order they start in: what the
        run's finished episodes of the called arms still to run say (``orchestrator.estimate.Lengths``),
        the step cap where they say nothing. Built-in episodes take milliseconds: their files are not read."""
        left = {s.episode_id for s in todo}
        arms = {s.model.name for s in todo if s.model.called}
        done = [s for s in specs if s.model.name in arms and s.episode_id not in left]
        return Lengths.of_run(self.store, done) if done else Lengths()

    def _resume(self, spec: EpisodeSpec) -> Resume:
        """Where an episode continues: its journal, wherever an earlier attempt (or run) left it."""
        journal = self.journals.read(spec.episode_id)
        return Resume(tuple(journal.rows), journal.resumed + (1 if journal.rows else 0))

    # ---- the loop --------------------------------------------------------------------------
    def _run(self) -> bool:
        """Run until every episode is collected, or an interrupt's grace ends; False when episodes
        were still in flight then (their calls are asked again on resume)."""
        reported = 0.0
        in_flight, brokers = self.scheduler.in_flight, self.scheduler.brokers
        while self.pending or in_flight:
            if self._stop_now():
                return not in_flight
            self.spending.poll()
            if brokers and time.monotonic() - reported >= BATCH_REPORT_S:
                reported = time.monotonic()
                self.reporter.batches({name: ray.get(b.progress.remote()) for name, b in brokers.items()})
            self.scheduler.dispatch()
            if not in_flight:
                time.sleep(0.2)  # everything pending waits for a server replica with room
                continue
            refs = in_flight.refs()
            # a status asked of the journal actor is taken in within POLL_S
            ready, _ = ray.wait(refs, num_returns=1, timeout=POLL_S if self.spending.journal is not None else 1.0)
            if ready:
                more, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                ready = list({*ready, *more})
            for ref in ready:
                result = self.scheduler.collect(ref)
                if result is not None:
                    self.writer.submit(result)
        self.writer.drain()
        return True

    def _stop_now(self) -> bool:
        """Acts on ``request_stop``: the first time, nothing more starts and every running
        episode is told to stop after its turn; True once the grace is over or a second request came."""
        if not self.stopping.requests:
            return False
        if self.stopping.begun():
            self.stopping.since = time.monotonic()
            self.pending.clear()  # never started: they run on resume
            self.spending.stop()
            self.reporter.stopping(len(self.scheduler.in_flight), self.stopping.grace_s)
        return self.stopping.over()

    # ---- writing ------------------------------------------------------------------------------
    def _write_now(self, result: EncodedEpisode) -> None:
        """On the writer thread: an episode's files, then its journal's end."""
        write_episode(self.store, result)
        # an error episode keeps its journal, so that --retry-errors continues it (unless its
        # journal is what failed to replay)
        keep = result.termination == ERROR and result.episode.error_class != "ResumeMismatch"
        if not self.spending.episode_finished(result.episode, keep) and not keep:
            self.journals.remove(result.episode_id)
        self.written[result.episode_id] = result.episode
        self.reporter.episode_done(result.episode)


def _matrix_episodes(store: RunStore, specs: list[EpisodeSpec], written: dict[str, EpisodeRecord]) -> pd.DataFrame:
    """The matrix's episodes: rows written now, files for those finished before."""
    import pandas as pd

    earlier = read_episodes(store, ids={s.episode_id for s in specs} - written.keys())
    now = episodes_frame(list(written.values()))
    frames = [f for f in (earlier, now) if len(f)]
    if not frames:
        return now
    return pd.concat(frames, ignore_index=True).sort_values("episode_id", ignore_index=True)


def _per_model(specs: Iterable[EpisodeSpec]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in specs:
        counts[s.model.name] = counts.get(s.model.name, 0) + 1
    return counts
