"""The sweep driver: Ray actors run episodes, the driver schedules them and writes their traces.

The driver keeps a bounded number of episodes in flight (per-model ``max_concurrency``, slots
per actor), collects them as they finish and writes each one's files at once (the actors
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

Its state, in named parts: the episodes waiting (``Pending``: built-in ones by maze, so an actor
that holds a maze's distance table takes its episodes first; called models' by model, taken in
turn), those running (``InFlight``), the actors (``orchestrator.actors.Actors``), the budgets and
concurrency (``orchestrator.journal_actor.Spending``) and the writer thread (``TraceWriter``).
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
from ray import exceptions as rex

from episodes.episode import Suspended, failed_episode
from orchestrator.actors import ACTOR_LOST, Actors, Resume, Worker
from orchestrator.journal_actor import POLL_S, Spending
from orchestrator.reporter import Reporter
from orchestrator.serving.actor import ServerStartError
from orchestrator.sweep import EpisodeSpec, Sweep
from traces import (
    ERROR,
    EncodedEpisode,
    EpisodeRecord,
    Journals,
    RunStore,
    clean_partial,
    completed_ids,
    encode_episode,
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
    from ray import ObjectRef

    from orchestrator.serving.server_pool import Lease, ServerPool

MAX_ATTEMPTS = 3
MAX_IN_FLIGHT = 512
WRITE_BACKLOG = 64  # finished episodes waiting for the writer thread
# On Ctrl-C, how long the model calls in flight get to return (and be journaled) before the actors
# go: a turn of a hosted model seldom takes longer, and an interrupted user will not wait for long.
GRACE_S = 5.0
BATCH_REPORT_S = 2.0  # how often the progress line hears of the batch arms' rounds


@dataclass
class Task:
    """One episode of the matrix as the driver schedules it."""

    spec: EpisodeSpec
    attempts: int = 0
    lease: Lease | None = None
    actor: Worker | None = None  # where it was last submitted
    seq: int = 0  # submission order
    unstarted: int = 0  # times its actor was lost while it waited, queued, behind another

    @property
    def builtin(self) -> bool:
        return self.spec.model.builtin


class Pending:
    """Episodes waiting to start: built-in ones by maze checksum (``cpu``), called models' by
    model name (``model``)."""

    def __init__(self) -> None:
        self.cpu: dict[str, deque[Task]] = {}
        self.model: dict[str, deque[Task]] = {}

    def add(self, task: Task, *, first: bool = False) -> None:
        """Queue ``task`` (at the front with ``first``: an episode put back after its actor died)."""
        queue = self.cpu.setdefault(task.spec.maze.checksum, deque()) if task.builtin \
            else self.model.setdefault(task.spec.model.name, deque())
        queue.appendleft(task) if first else queue.append(task)

    def drop_model(self, model: str) -> int:
        """Take every waiting episode of ``model`` out; returns how many."""
        dropped = 0
        for queues in (self.model, self.cpu):
            for key in list(queues):
                kept = deque(t for t in queues[key] if t.spec.model.name != model)
                dropped += len(queues[key]) - len(kept)
                if kept:
                    queues[key] = kept
                else:
                    del queues[key]
        return dropped

    def clear(self) -> None:
        self.cpu.clear()
        self.model.clear()

    def take_cpu(self, worker: Worker, claimed: set[str], has_room: Callable[[Task], bool]) -> Task | None:
        """A built-in episode for ``worker``: a maze it already knows, then a maze no other actor
        started (``claimed``), then the maze with the most episodes left."""
        best, best_key = None, None
        for checksum, queue in self.cpu.items():
            if not any(has_room(t) for t in queue):
                continue
            key = (checksum in worker.warm, checksum not in claimed, len(queue))
            if best_key is None or key > best_key:
                best, best_key = checksum, key
        if best is None:
            return None
        queue = self.cpu[best]
        for i, t in enumerate(queue):
            if has_room(t):
                del queue[i]
                if not queue:
                    del self.cpu[best]
                worker.warm.add(best)
                return t
        return None

    def take_model(self, name: str) -> Task:
        queue = self.model[name]
        task = queue.popleft()
        if not queue:
            del self.model[name]
        return task

    def __bool__(self) -> bool:
        return bool(self.cpu or self.model)


class InFlight:
    """Episodes submitted to an actor and not yet collected, and how many of each model run."""

    def __init__(self) -> None:
        self.tasks: dict[ObjectRef, Task] = {}
        self.per_model: dict[str, int] = {}
        self.submitted = 0

    def starting(self, task: Task, worker: Worker) -> None:
        """``task`` is about to be submitted to ``worker``: a new attempt, in submission order."""
        task.attempts += 1
        task.actor = worker
        self.submitted += 1
        task.seq = self.submitted
        self.per_model[task.spec.model.name] = self.running(task.spec.model.name) + 1

    def add(self, ref: ObjectRef, task: Task) -> None:
        self.tasks[ref] = task
        assert task.actor is not None
        task.actor.queue[ref] = task

    def pop(self, ref: ObjectRef) -> Task:
        return self.tasks.pop(ref)

    def done(self, ref: ObjectRef, task: Task) -> None:
        """``task`` (collected from ``ref``) no longer holds its actor's slot nor its model's."""
        if task.actor is not None:
            task.actor.queue.pop(ref, None)
        self.per_model[task.spec.model.name] -= 1

    def running(self, model: str) -> int:
        return self.per_model.get(model, 0)

    def refs(self) -> list[ObjectRef]:
        return list(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)


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


@dataclass(frozen=True)
class DriverSettings:
    retry_errors: bool = False  # rerun episodes that ended in error too
    max_attempts: int = MAX_ATTEMPTS  # times an episode is started before its actor's losses end it in error
    command: tuple[str, ...] = ()  # the invocation as the manifest records it
    max_cost: float | None = None  # USD the whole run may spend
    # a test's hook, called as each episode is submitted: it may kill the actor or its node there
    on_dispatch: Callable[[EpisodeSpec, Any, int], None] | None = None


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
        self.in_flight = InFlight()
        self.actors = Actors(sweep.models, cpu_actors)
        self.spending = Spending(sweep, max_cost, self.reporter, self.pending.drop_model)
        self.written: dict[str, EpisodeRecord] = {}  # episodes written by this invocation
        self.brokers: dict[str, Any] = {}  # batch arm -> its BatchBroker actor
        self.writer = TraceWriter(self._write_now)
        self.grace_s = GRACE_S
        self.stop_requests = 0  # Ctrl-C presses: 1 a graceful stop, 2 at once
        self.stopping_since: float | None = None  # when the loop began stopping
        self.stopped_mid = 0  # episodes that stopped between turns for the interrupt

    def request_stop(self) -> None:
        """Stop the run: the first request gracefully (each running episode stops after its current
        turn, within ``grace_s``), the next at once. Only sets a flag: safe from a signal handler."""
        self.stop_requests += 1

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
        for spec in todo:
            self.pending.add(Task(spec))
        # the commit before any actor starts: on a machine with several Ray nodes, a node that sets up
        # a job's working dir for its actors deletes and unpacks the copy the driver runs from
        git = git_info()
        self.actors.start_cpu(len(self.pending.cpu))  # actors import and pre-warm while the manifest is written
        invocation = {"command": list(self.settings.command), "planned": len(specs), "to_run": len(todo),
                      "retry_errors": self.settings.retry_errors, "max_cost": self.settings.max_cost}
        write_manifest(self.store, run=self.run, sweep=self.sweep.resolved(),
                       mazes={m.checksum: m.to_dict() for m in self.sweep.all_mazes}, invocation=invocation, git=git)
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
                for broker in self.brokers.values():
                    ray.kill(broker, no_restart=True)
                try:
                    self.spending.close()
                finally:
                    self.reporter.finish()
        episodes = self._episodes(specs)
        errors = int((episodes["termination"] == ERROR).sum()) if len(episodes) else 0
        spent = self.spending
        stop = self._left(specs, episodes, graceful) if self.stopping_since is not None else None
        if todo:
            write_manifest(self.store, run=self.run, sweep=self.sweep.resolved(), mazes={},
                           invocation={**invocation, "ledger": spent.ledger, "concurrency": spent.history,
                                       "suspended": spent.suspended, "not_started": spent.not_started,
                                       **({"interrupted": asdict(stop)} if stop is not None else {})},
                           replace_last=True)
        return RunOutcome(self.store.where, len(specs), len(specs) - len(todo), len(self.written), errors, episodes,
                          spent.suspended, spent.not_started, spent.ledger, spent.history, stop)

    def _left(self, specs: list[EpisodeSpec], episodes: pd.DataFrame, graceful: bool) -> Stop:
        """What an interrupted invocation leaves: complete, journaled, not started."""
        done = set(episodes["episode_id"]) if len(episodes) else set()
        journaled = self.journals.ids() & ({s.episode_id for s in specs} - done)
        return Stop(len(done), len(journaled), len(specs) - len(done) - len(journaled), graceful)

    # ---- seams a test or bench may replace ------------------------------------------------------
    def _start_journal(self, specs: list[EpisodeSpec], todo: list[EpisodeSpec]) -> None:
        """The journal actor, its ledger opened with what the run has spent (``Spending.start``)."""
        self.spending.start(self.store, self.journals, specs, todo)

    def _start_brokers(self) -> None:
        """The lockstep rounds of each ``tier: batch`` arm (``orchestrator.batching``); they end with the driver."""
        from orchestrator.batching import start_brokers

        self.brokers = start_brokers(self.sweep.models, self.journals.folder)

    def _resume(self, spec: EpisodeSpec) -> Resume:
        """Where an episode continues: its journal, wherever an earlier attempt (or run) left it."""
        journal = self.journals.read(spec.episode_id)
        return Resume(tuple(journal.rows), journal.resumed + (1 if journal.rows else 0))

    # ---- the loop --------------------------------------------------------------------------
    def _run(self) -> bool:
        """Run until every episode is collected, or an interrupt's grace ends; False when episodes
        were still in flight then (their calls are asked again on resume)."""
        reported = 0.0
        while self.pending or self.in_flight:
            if self._stop_now():
                return not self.in_flight
            self.spending.poll()
            if self.brokers and time.monotonic() - reported >= BATCH_REPORT_S:
                reported = time.monotonic()
                self.reporter.batches({name: ray.get(b.progress.remote()) for name, b in self.brokers.items()})
            self._dispatch()
            if not self.in_flight:
                time.sleep(0.2)  # everything pending waits for a server replica with room
                continue
            refs = self.in_flight.refs()
            # a status asked of the journal actor is taken in within POLL_S
            ready, _ = ray.wait(refs, num_returns=1, timeout=POLL_S if self.spending.journal is not None else 1.0)
            if ready:
                more, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                ready = list({*ready, *more})
            for ref in ready:
                result = self._collect(ref)
                if result is not None:
                    self.writer.submit(result)
        self.writer.drain()
        return True

    def _stop_now(self) -> bool:
        """Acts on ``request_stop``: the first time, nothing more starts and every running
        episode is told to stop after its turn; True once the grace is over or a second request came."""
        if not self.stop_requests:
            return False
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
            self.pending.clear()  # never started: they run on resume
            self.spending.stop()
            self.reporter.stopping(len(self.in_flight), self.grace_s)
        return self.stop_requests > 1 or time.monotonic() - self.stopping_since >= self.grace_s

    def _has_room(self, task: Task) -> bool:
        name = task.spec.model.name
        adaptive = self.spending.concurrency.get(name)
        cap = adaptive.limit if adaptive is not None else task.spec.model.max_concurrency
        return cap is None or self.in_flight.running(name) < cap

    def _dispatch(self) -> None:
        if not self.pending.cpu:
            self.actors.release_idle_cpu()
        elif not self.actors.cpu:  # episodes came back (their actor died) after the others left
            self.actors.cpu.append(self.actors.new_cpu())
        for w in self.actors.cpu:
            while w.free > 0 and self.pending.cpu and len(self.in_flight) < MAX_IN_FLIGHT:
                claimed = set().union(*(o.warm for o in self.actors.cpu if o is not w and o.alive))
                task = self.pending.take_cpu(w, claimed, self._has_room)
                if task is None:
                    break
                self._submit(w, task, None)
        # model-bound episodes: round-robin over models so one slow model never starves the others
        progressed = True
        while progressed and self.pending.model and len(self.in_flight) < MAX_IN_FLIGHT:
            progressed = False
            for name in list(self.pending.model):
                if self._has_room(self.pending.model[name][0]) and self._dispatch_model(name):
                    progressed = True

    def _dispatch_model(self, name: str) -> bool:
        """Submit the next episode of ``name`` (on a leased server replica's node when the model is
        served); False when no replica has room."""
        lease = strategy = node = None
        if self.pool is not None and self.pool.serves(name):
            # the model-server hook: a leased replica gives the endpoint and the node
            try:
                lease = self.pool.acquire(name)
            except ServerStartError as err:  # every replica failed for good: its episodes end in error
                for t in self.pending.model.pop(name):
                    self.writer.submit(self._error(t, "ServerFailed", str(err).splitlines()[0]))
                return True
            if lease is None:
                return False
            node, strategy = lease.node_id, lease.scheduling_strategy()
        task = self.pending.take_model(name)
        task.lease = lease
        self._submit(self.actors.for_model(node, strategy), task, lease.url if lease else None)
        return True

    def _submit(self, worker: Worker, task: Task, api_base: str | None) -> None:
        self.in_flight.starting(task, worker)
        if self.settings.on_dispatch is not None:  # a test's hook may kill the actor or its node right here
            self.settings.on_dispatch(task.spec, worker.handle, task.attempts)
        ref = worker.handle.run.remote(task.spec, self.run, task.attempts, api_base, self._resume(task.spec),
                                       self.spending.journal, task.seq, self.brokers.get(task.spec.model.name))
        self.in_flight.add(ref, task)

    def _finish_task(self, ref: ObjectRef, task: Task) -> None:
        self.in_flight.done(ref, task)
        if task.lease is not None and self.pool is not None:  # only a pool gives leases
            self.pool.release(task.lease)

    def _requeue(self, task: Task) -> None:
        task.lease = None
        if self.stopping_since is None:  # once stopping, it is left to a rerun
            self.pending.add(task, first=True)

    def _collect(self, ref: ObjectRef) -> EncodedEpisode | None:
        """The finished episode to write, or None when it was put back in the queue."""
        task = self.in_flight.pop(ref)
        worker = task.actor
        assert worker is not None  # in flight: submitted to a worker
        try:
            out = ray.get(ref)
        except ACTOR_LOST as err:
            ran = worker.ran_when_lost(ref)
            self._finish_task(ref, task)
            self.actors.lost(worker)
            return self._after_loss(task, ran, type(err).__name__)
        except rex.RayTaskError as err:  # the actor code itself raised: a bug, recorded as error
            self._finish_task(ref, task)
            cause = err.cause if getattr(err, "cause", None) is not None else err
            return self._error(task, type(cause).__name__, str(cause).splitlines()[0] if str(cause) else "")
        self._finish_task(ref, task)
        if isinstance(out, Suspended):  # a budget ran out, or the run stops: its journal waits for a rerun
            if self.stopping_since is not None:
                self.stopped_mid += 1
            else:
                self.spending.suspended += 1
                self.reporter.suspended(task.spec, out.steps)
            return None
        if (out.termination == ERROR and task.lease is not None and task.attempts < self.settings.max_attempts
                and self._server_lost(task.lease)):
            self.reporter.retrying(task.spec, task.attempts, "model server restarted")
            self._requeue(task)
            return None
        return out

    def _after_loss(self, task: Task, ran: bool, reason: str) -> EncodedEpisode | None:
        """An episode whose actor or node died: put back (without a charge when it only waited,
        queued, behind the one running), or an error once it has used its attempts."""
        if not ran and task.unstarted < self.settings.max_attempts:
            # bounded, so that no ordering surprise can keep an episode coming back for ever
            task.unstarted += 1
            task.attempts -= 1
            self._requeue(task)
            return None
        if task.attempts < self.settings.max_attempts:
            self.reporter.retrying(task.spec, task.attempts, reason)
            self._requeue(task)
            return None
        return self._error(task, reason, f"its actor or node died on each of {task.attempts} attempts")

    def _server_lost(self, lease: Lease) -> bool:
        if self.pool is None:  # only a pool gives leases
            return True
        try:
            return bool(self.pool.lost(lease))
        except Exception:  # noqa: BLE001 - a pool that cannot answer counts as lost
            return True

    def _error(self, task: Task, error_class: str, message: str) -> EncodedEpisode:
        s = task.spec
        return encode_episode(failed_episode(s.identity(self.run), s.maze, s.condition.protocol, error_class,
                                             message, task.attempts, serving=s.model.serving))

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

    def _episodes(self, specs: list[EpisodeSpec]) -> pd.DataFrame:
        """The matrix's episodes: rows written now, files for those finished before."""
        import pandas as pd

        earlier = read_episodes(self.store, ids={s.episode_id for s in specs} - self.written.keys())
        now = episodes_frame(list(self.written.values()))
        frames = [f for f in (earlier, now) if len(f)]
        if not frames:
            return now
        return pd.concat(frames, ignore_index=True).sort_values("episode_id", ignore_index=True)


def _per_model(specs: Iterable[EpisodeSpec]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in specs:
        counts[s.model.name] = counts.get(s.model.name, 0) + 1
    return counts
