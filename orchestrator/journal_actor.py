"""The run's journal actor (docs/design.md §9) and the driver's side of it (``Spending``).

One journal actor per run, pinned to the driver's node, keeps the run's journals
(``traces.Journals``) and what every step of a called model passes by: the ledger, the
rate-limit signals and each model's turn slots. ``Spending`` is what the driver does with it:
open the ledger with what the run has spent, read the actor's status every ``POLL_S``, adapt each
model's concurrency, and stop starting a model's episodes once its budget is spent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from orchestrator.budget import Concurrency, Ledger
from orchestrator.reporter import Reporter
from traces import Journals, RunStore, read_episodes

if TYPE_CHECKING:
    from orchestrator.sweep import EpisodeSpec, Sweep
    from traces import EpisodeRecord

POLL_S = 0.5  # how often the driver reads the journal actor's ledger and rate-limit signals


class JournalAnswer(NamedTuple):
    """What the journal actor tells an episode after each of its calls."""

    budget_spent: bool  # the model's budget (or the run's) is spent, or the run is stopping: stop after this turn
    through_slots: bool  # the model runs below its ceiling (rate limited): each turn takes a slot


def ledger_status(ledger: Ledger) -> dict[str, Any]:
    """What the driver reads of a ledger: its snapshot and which budgets are spent (with no
    rate-limit signals or successes yet)."""
    return {"ledger": ledger.snapshot(), "exhausted": {m: ledger.exhausted(m) for m in ledger.limits},
            "total_exhausted": ledger.total_limit is not None and ledger.total() >= ledger.total_limit,
            "rate_limits": {}, "successes": {}}


# Ray's typing of ray.remote(...) leaves out the actor options (max_concurrency)
@ray.remote(num_cpus=0, max_restarts=0, max_concurrency=10_000)  # type: ignore[call-overload]
class JournalActor:
    """Keeps the run's journals on the driver's node, and what every step passes by: the ledger,
    the rate-limit signals, and each model's turn slots (how many of its episodes may be waiting
    on a call at once: the driver sets it from the model's adaptive concurrency). One per run; the
    driver reads its ``status``. An asyncio actor: an episode waiting for a slot holds no thread."""

    SYNC_S = 0.25  # how often journals written since are fsynced

    def __init__(self, folder: str, ledger: Ledger, slots: dict[str, int]):
        self.journals = Journals(Path(folder))
        self.ledger = ledger
        self.rate_limits: dict[str, list[float | None]] = {}
        self.successes: dict[str, int] = {}
        self.ceilings = dict(slots)
        self.slots = dict(slots)
        self.calling: dict[str, set[str]] = {}  # model -> episodes in a turn
        self.changed = asyncio.Condition()
        self.syncing: asyncio.Task | None = None
        self.stopping = False  # the run was interrupted: every episode stops after its current turn

    def _spent(self, model: str) -> bool:
        """No new turn of ``model``: its budget (or the run's) is spent, or the run is stopping."""
        return self.stopping or self.ledger.exhausted(model)

    async def _sync_forever(self) -> None:
        while True:
            await asyncio.sleep(self.SYNC_S)
            dirty = self.journals.take_dirty()
            if dirty:
                await asyncio.to_thread(self.journals.sync, dirty)  # off the loop: appends go on meanwhile

    def _answer(self, model: str) -> JournalAnswer:
        if self.syncing is None:
            self.syncing = asyncio.get_running_loop().create_task(self._sync_forever())
        return JournalAnswer(self._spent(model), self.slots.get(model, 0) < self.ceilings.get(model, 0))

    async def start(self, episode_id: str, attempt: int, resumed_steps: int, model: str) -> JournalAnswer:
        kept = self.journals.start(episode_id, attempt, resumed_steps)
        self.ledger.set_running(model, episode_id, kept.cost_usd)
        return self._answer(model)

    async def turn(self, episode_id: str, model: str) -> bool:
        """Wait for a turn slot of ``model``; True (and no slot) when its budget is spent or the run
        is stopping."""
        async with self.changed:
            calling = self.calling.setdefault(model, set())
            await self.changed.wait_for(lambda: self._spent(model) or episode_id in calling
                                        or len(calling) < self.slots.get(model, 1 << 30))
            if self._spent(model):
                return True
            calling.add(episode_id)
            return False

    async def append(self, episode_id: str, attempt: int, lines: list[str], model: str, cost: float,
                     calls_model: bool) -> JournalAnswer:
        if self.journals.append(episode_id, attempt, lines, sync=calls_model):
            self.ledger.add_step(model, episode_id, cost)
            if calls_model:
                self.successes[model] = self.successes.get(model, 0) + len(lines)
        if episode_id in self.calling.get(model, ()):
            await self.release(episode_id, model)
        return self._answer(model)

    async def release(self, episode_id: str, model: str) -> None:
        async with self.changed:
            self.calling.get(model, set()).discard(episode_id)
            self.changed.notify_all()

    async def set_slots(self, slots: dict[str, int]) -> None:
        async with self.changed:
            self.slots.update(slots)
            self.changed.notify_all()

    async def finish(self, episode_id: str, model: str, cost: float, keep_journal: bool = False) -> None:
        if not keep_journal:
            self.journals.remove(episode_id)
        self.ledger.finish(model, episode_id, cost)

    async def stop(self) -> None:
        """The run was interrupted (Ctrl-C): each episode journals the turn it is in, then stops."""
        async with self.changed:
            self.stopping = True
            self.changed.notify_all()  # episodes waiting for a turn slot stop at once

    async def rate_limited(self, model: str, retry_after: float | None) -> None:
        self.rate_limits.setdefault(model, []).append(retry_after)

    async def flush(self) -> None:
        """Every journal written so far on disk (the driver's last call)."""
        await asyncio.to_thread(self.journals.sync, self.journals.take_dirty())

    async def status(self) -> dict[str, Any]:
        """The ledger, and the rate limits and successful calls per model since the last status."""
        out = {**ledger_status(self.ledger), "rate_limits": self.rate_limits, "successes": self.successes}
        self.rate_limits, self.successes = {}, {}
        async with self.changed:
            self.changed.notify_all()  # a spent budget frees every episode waiting for a slot
        return out


class Spending:
    """The driver's side of the journal actor: the run's ledger and budgets, and each called
    model's adaptive concurrency (``Concurrency``). ``stop_starting(model)`` is told of each model
    whose budget (or the run's) is spent and returns how many of its episodes will not start."""

    def __init__(self, sweep: Sweep, max_cost: float | None, reporter: Reporter,
                 stop_starting: Callable[[str], int]):
        self.sweep, self.max_cost, self.reporter, self.stop_starting = sweep, max_cost, reporter, stop_starting
        self.journal: Any = None  # the actor's handle, once started
        self.concurrency = {m.name: Concurrency(m.max_concurrency) for m in sweep.models
                            if not m.builtin and m.max_concurrency}
        self.exhausted: set[str] = set()  # models whose budget (or the run's) is spent
        self.ledger: dict[str, dict[str, float | None]] = {}
        self.suspended = 0  # episodes stopped by a budget between turns
        self.not_started = 0  # episodes a budget kept from starting
        self._polled = 0.0
        self._status: Any = None  # a status asked of the actor, not yet taken in

    def start(self, store: RunStore, journals: Journals, specs: list[EpisodeSpec], todo: list[EpisodeSpec]) -> None:
        """The journal actor on this node (where the run folder is), its ledger opened with what the
        run has spent: finished episodes of the matrix and the journals of unfinished ones.

        None for a sweep of built-in agents only: their steps cost nothing and an episode reruns
        in milliseconds, while the actor's start took a quarter of a 150-episode built-in sweep on
        two cores (bench/orchestrator_overhead.py (a)). Journals such episodes left are still
        resumed from, and removed when they finish. A sweep with a called model always has one,
        even when only built-in episodes are left: its ledger and budgets go on."""
        if all(m.builtin for m in self.sweep.models):
            return
        todo_ids = {s.episode_id for s in todo}
        by_id = {s.episode_id: s for s in specs}
        finished: dict[str, float] = {}
        done = read_episodes(store, ids=set(by_id) - todo_ids)
        for eid, cost in zip(done["episode_id"], done["cost_usd"].fillna(0.0), strict=True):
            name = by_id[eid].model.name
            finished[name] = finished.get(name, 0.0) + float(cost)
        ledger = Ledger(limits={m.name: m.max_cost for m in self.sweep.models if m.max_cost is not None},
                        total_limit=self.max_cost, finished=finished)
        for eid in journals.ids() & todo_ids:
            ledger.set_running(by_id[eid].model.name, eid, journals.read(eid).cost_usd)
        here = ray.get_runtime_context().get_node_id()
        self.journal = JournalActor.options(  # type: ignore[attr-defined]  # a Ray actor class
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)
        ).remote(str(journals.folder), ledger, {name: c.limit for name, c in self.concurrency.items()})
        # the ledger it starts from is known here: episodes are dispatched while the actor starts
        self._apply(ledger_status(ledger))

    def poll(self, force: bool = False) -> None:
        """Take in the journal actor's ledger and rate-limit signals and adapt each model's
        concurrency. A status is asked for at most every ``POLL_S`` and taken in once it is there,
        without waiting; ``force`` waits for one asked for now (after everything sent before)."""
        if self.journal is None:
            return
        now = time.monotonic()
        if force:
            if self._status is not None:
                self._apply(ray.get(self._status))
            self._status, self._polled = None, now
            self._apply(ray.get(self.journal.status.remote()))
            return
        if self._status is not None and ray.wait([self._status], timeout=0)[0]:
            self._apply(ray.get(self._status))
            self._status = None
        if self._status is None and now - self._polled >= POLL_S:
            self._status, self._polled = self.journal.status.remote(), now

    def _apply(self, status: dict[str, Any]) -> None:
        self.ledger = status["ledger"]
        before = {name: c.limit for name, c in self.concurrency.items()}
        for name, retry_afters in status["rate_limits"].items():
            if name in self.concurrency:
                self.concurrency[name].rate_limited(max((r or 0.0) for r in retry_afters))
        for name, calls in status["successes"].items():
            if name in self.concurrency:
                self.concurrency[name].succeeded(calls)
        changed = {name: c.limit for name, c in self.concurrency.items() if c.limit != before[name]}
        if changed:
            self.journal.set_slots.remote(changed)
        for m in self.sweep.models:
            if (status["total_exhausted"] or status["exhausted"].get(m.name)) and m.name not in self.exhausted:
                # a spent budget: no more episodes of the model start (those running stop themselves)
                self.exhausted.add(m.name)
                self.not_started += self.stop_starting(m.name)
        self.reporter.spending(self.ledger, {n: c.limit for n, c in self.concurrency.items()})

    def stop(self) -> None:
        """Every running episode stops after its current turn (its call answered and journaled)."""
        if self.journal is not None:
            self.journal.stop.remote()

    def episode_finished(self, record: EpisodeRecord, keep_journal: bool) -> bool:
        """Tell the actor an episode's files are written (its journal goes, unless kept); False
        when there is no actor and the driver removes the journal itself."""
        if self.journal is None:
            return False
        self.journal.finish.remote(record.identity.episode_id, record.identity.model_name, record.usage.cost_usd,
                                   keep_journal)
        return True

    def close(self) -> None:
        if self.journal is None:
            return
        try:
            self.poll(force=True)  # after every finish() the writer sent: the ledger is final
            ray.get(self.journal.flush.remote())
        finally:
            ray.kill(self.journal, no_restart=True)
            self.journal = None

    @property
    def history(self) -> dict[str, list[tuple[float, int, str]]]:
        """Each called model's concurrency changes."""
        return {name: c.history for name, c in self.concurrency.items()}
