"""The driver's real ``Scheduler`` without Ray: fake model actors whose episodes take simulated
time, so a test or a bench sees which episodes start when, under the shipped ordering and
concurrency rules (``Pending.fill``, the models taken in turn, ``max_concurrency``).

Only called models' episodes are simulated (what a sweep's tail is made of): ``simulate`` runs
them to the end on a clock of its own and returns when each started and ended, which
``Timeline`` turns into a makespan, its lower bound and the tail.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from orchestrator.actors import MODEL_SLOTS, Resume, Worker
from orchestrator.estimate import Lengths
from orchestrator.reporter import Reporter
from orchestrator.scheduling import Pending, Scheduler, Task
from orchestrator.sweep import EpisodeSpec


class _Run:
    """An actor's ``run`` method: ``remote`` hands back a ref and notes what was submitted."""

    def __init__(self, started: list[tuple[object, EpisodeSpec]]):
        self.started = started

    def remote(self, spec: EpisodeSpec, *args: Any) -> object:
        ref = object()
        self.started.append((ref, spec))
        return ref


class FakeActors:
    """Model actors as ``orchestrator.actors.Actors`` hands them out, none of them started."""

    def __init__(self) -> None:
        self.cpu: list[Worker] = []
        self.model: list[Worker] = []
        self.started: list[tuple[object, EpisodeSpec]] = []  # every submission, in order

    def release_idle_cpu(self) -> None:
        pass

    def new_cpu(self) -> Worker:
        raise NotImplementedError("only called models' episodes are simulated")

    def for_model(self, node: str | None, strategy: Any) -> Worker:
        for w in self.model:
            if w.node == node and w.free > 0:
                return w
        w = Worker(SimpleNamespace(run=_Run(self.started)), MODEL_SLOTS, node=node)
        self.model.append(w)
        return w


def scheduler(pending: Pending) -> tuple[Scheduler, FakeActors]:
    """The real scheduler over ``pending``, with fake actors and no journal, pool nor budget."""
    actors = FakeActors()
    spending = SimpleNamespace(concurrency={}, journal=None)

    def written(result: Any) -> None:
        raise AssertionError("a simulated episode never ends in error")

    sched = Scheduler("simulated", pending, actors, spending, Reporter(),  # type: ignore[arg-type]
                      SimpleNamespace(since=None), None, written, lambda spec: Resume())
    return sched, actors


def queued(specs: Iterable[EpisodeSpec], lengths: Lengths | None) -> Pending:
    """The episodes waiting as the driver queues them: ``Pending.fill`` (longest expected first),
    or with ``lengths`` None as the driver queued them before it (in the sweep's order)."""
    pending = Pending()
    if lengths is None:
        for spec in specs:
            pending.add(Task(spec))
    else:
        pending.fill(specs, lengths)
    return pending


@dataclass
class Timeline:
    """When each simulated episode started and ended (seconds from the start)."""

    slots: int
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)  # episode id -> (start, end)
    first_idle: float | None = None  # the first moment a slot had nothing left to start

    @property
    def makespan(self) -> float:
        return max(end for _, end in self.spans.values())

    @property
    def work(self) -> float:
        return sum(end - start for start, end in self.spans.values())

    @property
    def longest(self) -> float:
        return max(end - start for start, end in self.spans.values())

    @property
    def bound(self) -> float:
        """No order can end sooner: max(total work / slots, the longest episode)."""
        return max(self.work / self.slots, self.longest)

    @property
    def tail(self) -> float:
        """From the first moment a slot went idle to the end."""
        return self.makespan - (self.first_idle if self.first_idle is not None else self.makespan)


def simulate(pending: Pending, seconds: Mapping[str, float], slots: int) -> Timeline:
    """Run every episode of ``pending`` (one called model, whose ``max_concurrency`` is ``slots``)
    through the real scheduler: each takes ``seconds[episode_id]``; whenever some end, the
    scheduler dispatches again, as the driver's loop does."""
    sched, actors = scheduler(pending)
    timeline = Timeline(slots)
    ends: list[tuple[float, int, object]] = []
    order = itertools.count()
    now = 0.0
    while True:
        before = len(actors.started)
        sched.dispatch()
        for ref, spec in actors.started[before:]:
            timeline.spans[spec.episode_id] = (now, now + seconds[spec.episode_id])
            heapq.heappush(ends, (now + seconds[spec.episode_id], next(order), ref))
        assert len(sched.in_flight) <= slots, "the arm's max_concurrency is the slots"
        if timeline.first_idle is None and len(sched.in_flight) < slots:
            timeline.first_idle = now
        if not ends:
            break
        now = ends[0][0]
        while ends and ends[0][0] == now:  # what the driver collects at once
            _, _, ref = heapq.heappop(ends)
            task = sched.in_flight.pop(ref)  # type: ignore[arg-type]
            sched._finish_task(ref, task)  # type: ignore[arg-type]  # what collect does with an episode that ended
    assert not pending, "every episode ran"
    return timeline
