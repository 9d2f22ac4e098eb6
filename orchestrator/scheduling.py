"""Which episode runs next and where, and what becomes of each one collected (``Scheduler``): the
episodes waiting (``Pending``: built-in ones by maze, so an actor that holds a maze's distance table
takes its episodes first; called models' by model, taken in turn; each queue longest expected
first, ``Pending.fill``), those running (``InFlight``), a lost actor's episodes put back or ended in
error after ``MAX_ATTEMPTS``, a served model's episode retried when its server restarted. The driver
(``orchestrator.driver``) runs the loop around it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ray
from ray import exceptions as rex

from episodes.episode import Suspended, failed_episode
from orchestrator.actors import ACTOR_LOST, Actors, Resume, Worker
from orchestrator.estimate import Lengths
from orchestrator.journal_actor import Spending
from orchestrator.reporter import Reporter
from orchestrator.serving.actor import ServerStartError
from orchestrator.sweep import EpisodeSpec, ModelEntry
from traces import ERROR, EncodedEpisode, encode_episode

if TYPE_CHECKING:
    from ray import ObjectRef

    from orchestrator.serving.server_pool import Lease, ServerPool

MAX_ATTEMPTS = 3
MAX_IN_FLIGHT = 512


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

    def after_loss(self, ran: bool, max_attempts: int) -> str | None:
        """What follows the loss of its actor or node: ``again`` without a charge when it only
        waited, queued, behind the one running (bounded, so that no ordering surprise can keep it
        coming back for ever); ``retry`` while it has attempts left; None: it ends in error."""
        if not ran and self.unstarted < max_attempts:
            self.unstarted += 1
            self.attempts -= 1
            return "again"
        return "retry" if self.attempts < max_attempts else None


class Pending:
    """Episodes waiting to start: built-in ones by maze checksum (``cpu``), called models' by
    model name (``model``)."""

    def __init__(self) -> None:
        self.cpu: dict[str, deque[Task]] = {}
        self.model: dict[str, deque[Task]] = {}

    def fill(self, specs: Iterable[EpisodeSpec], lengths: Lengths) -> None:
        """Queue a run's episodes longest expected first (``lengths``: the step cap, or what the run's
        finished episodes say), ties in the order given: so the last episodes to start are short ones
        and the run's tail is short. Models stay taken in turn and built-in episodes by maze; only
        the order within each queue is chosen here."""
        for spec in sorted(specs, key=lambda s: -lengths.expected(s)):  # sorted is stable: ties keep their order
            self.add(Task(spec))

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
        started (``claimed``), then the maze with the most episodes left (of equal ones, the first
        queued: after ``fill``, the one whose longest episode is longest)."""
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


class Scheduler:
    """Dispatches episodes with room to actors and collects them (see the module)."""

    def __init__(self, run: str, pending: Pending, actors: Actors, spending: Spending, reporter: Reporter,
                 stopping: Any, pool: ServerPool | None, submit_result: Callable[[EncodedEpisode], None],
                 resume: Callable[[EpisodeSpec], Resume], max_attempts: int = MAX_ATTEMPTS,
                 on_dispatch: Callable[[EpisodeSpec, Any, int], None] | None = None):
        self.run, self.pending, self.actors, self.spending, self.reporter = run, pending, actors, spending, reporter
        self.stopping, self.pool, self.resume = stopping, pool, resume
        self.submit_result = submit_result  # an episode to write (one that ended in error here)
        self.max_attempts, self.on_dispatch = max_attempts, on_dispatch
        self.in_flight = InFlight()
        self.brokers: dict[str, Any] = {}  # batch arm -> its BatchBroker actor, once started

    def cap(self, model: ModelEntry) -> int | None:
        """The episodes of ``model`` allowed in flight now (None: no limit)."""
        adaptive = self.spending.concurrency.get(model.name)
        return adaptive.limit if adaptive is not None else model.max_concurrency

    def has_room(self, task: Task) -> bool:
        cap = self.cap(task.spec.model)
        return cap is None or self.in_flight.running(task.spec.model.name) < cap

    def at_once(self, name: str) -> int:
        """How many waiting episodes of called model ``name`` start at once: its queue, at most its
        concurrency and the run's ``MAX_IN_FLIGHT`` (a batch arm's first round waits for them all)."""
        queue = self.pending.model.get(name)
        if not queue:
            return 0
        cap = self.cap(queue[0].spec.model)
        return min(len(queue), MAX_IN_FLIGHT, len(queue) if cap is None else cap)

    def dispatch(self) -> None:
        """Start what has room: built-in episodes on the CPU actors (an actor's own mazes first), then
        each called model's in turn."""
        if not self.pending.cpu:
            self.actors.release_idle_cpu()
        elif not self.actors.cpu:  # episodes came back (their actor died) after the others left
            self.actors.cpu.append(self.actors.new_cpu())
        for w in self.actors.cpu:
            while w.free > 0 and self.pending.cpu and len(self.in_flight) < MAX_IN_FLIGHT:
                claimed = set().union(*(o.warm for o in self.actors.cpu if o is not w and o.alive))
                task = self.pending.take_cpu(w, claimed, self.has_room)
                if task is None:
                    break
                self._submit(w, task, None)
        # model-bound episodes: round-robin over models so one slow model never starves the others
        progressed = True
        while progressed and self.pending.model and len(self.in_flight) < MAX_IN_FLIGHT:
            progressed = False
            for name in list(self.pending.model):
                if self.has_room(self.pending.model[name][0]) and self._dispatch_model(name):
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
                    self.submit_result(self.error(t, "ServerFailed", str(err).splitlines()[0]))
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
        if self.on_dispatch is not None:  # a test's hook may kill the actor or its node right here
            self.on_dispatch(task.spec, worker.handle, task.attempts)
        ref = worker.handle.run.remote(task.spec, self.run, task.attempts, api_base, self.resume(task.spec),
                                       self.spending.journal, task.seq, self.brokers.get(task.spec.model.name))
        self.in_flight.add(ref, task)

    def _finish_task(self, ref: ObjectRef, task: Task) -> None:
        self.in_flight.done(ref, task)
        if task.lease is not None and self.pool is not None:  # only a pool gives leases
            self.pool.release(task.lease)

    def _requeue(self, task: Task) -> None:
        task.lease = None
        if self.stopping.since is None:  # once stopping, it is left to a rerun
            self.pending.add(task, first=True)

    def collect(self, ref: ObjectRef) -> EncodedEpisode | None:
        """The finished episode to write, or None when it was put back in the queue."""
        task = self.in_flight.pop(ref)
        worker = task.actor
        assert worker is not None  # in flight: submitted to a worker
        try:
            out = ray.get(ref)
        except ACTOR_LOST as err:
            ran = worker.ran_when_lost(ref)
            if task.lease is not None and self.pool is not None:
                # the episode ran on its server's node: that node may be gone too, and its
                # server is then placed again before the episode is leased a replica again
                self.pool.suspect(task.lease)
            self._finish_task(ref, task)
            self.actors.lost(worker)
            return self._after_loss(task, ran, type(err).__name__)
        except rex.RayTaskError as err:  # the actor code itself raised: a bug, recorded as error
            self._finish_task(ref, task)
            cause = err.cause if getattr(err, "cause", None) is not None else err
            return self.error(task, type(cause).__name__, str(cause).splitlines()[0] if str(cause) else "")
        self._finish_task(ref, task)
        if isinstance(out, Suspended):  # a budget ran out, or the run stops: its journal waits for a rerun
            if self.stopping.since is not None:
                self.stopping.mid += 1
            else:
                self.spending.suspended += 1
                self.reporter.suspended(task.spec, out.steps)
            return None
        if (out.termination == ERROR and task.lease is not None and task.attempts < self.max_attempts
                and _server_lost(self.pool, task.lease)):
            self.reporter.retrying(task.spec, task.attempts, "model server restarted")
            self._requeue(task)
            return None
        return out

    def _after_loss(self, task: Task, ran: bool, reason: str) -> EncodedEpisode | None:
        """An episode whose actor or node died: put back, or an error once it has used its attempts."""
        then = task.after_loss(ran, self.max_attempts)
        if then == "retry":
            self.reporter.retrying(task.spec, task.attempts, reason)
        if then is not None:
            self._requeue(task)
            return None
        return self.error(task, reason, f"its actor or node died on each of {task.attempts} attempts")

    def error(self, task: Task, error_class: str, message: str) -> EncodedEpisode:
        return _failed(self.run, task, error_class, message)


def _server_lost(pool: ServerPool | None, lease: Lease) -> bool:
    if pool is None:  # only a pool gives leases
        return True
    try:
        return bool(pool.lost(lease))
    except Exception:  # noqa: BLE001 - a pool that cannot answer counts as lost
        return True


def _failed(run: str, task: Task, error_class: str, message: str) -> EncodedEpisode:
    s = task.spec
    return encode_episode(failed_episode(s.identity(run), s.maze, s.condition.protocol, error_class,
                                         message, task.attempts, serving=s.model.serving))


