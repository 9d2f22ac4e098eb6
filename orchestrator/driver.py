"""The sweep driver: Ray actors run episodes, the driver schedules them and writes their traces.

Two kinds of actors, both running ``orchestrator.episode.run_episode`` with one env per episode:

- *CPU actors* (one CPU each) run built-in agents, whose episodes are pure computation. The
  driver keeps every episode of a maze on the actor that already holds that maze's distance
  table when it can. Each runs one episode at a time with the next one queued behind it, so
  it never waits for the driver between episodes (a built-in episode takes tens of ms).
- *model actors* (a quarter of a CPU each) host up to ``MODEL_SLOTS`` episodes at once, all
  waiting on their model; many fit on one node. Episodes of a served model (``serve:``) run
  on the node of the server replica the ``ServerPool`` leased them.

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
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import secrets
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
from ray import exceptions as rex
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from orchestrator.budget import Concurrency, Ledger
from orchestrator.episode import EpisodeResult, Suspended, failed_episode
from orchestrator.reporter import Reporter
from orchestrator.serving.actor import ServerStartError
from orchestrator.sweep import EpisodeSpec, Sweep
from traces import (
    ERROR,
    EncodedEpisode,
    EpisodeRecord,
    Journals,
    RunStore,
    StepRecord,
    clean_partial,
    completed_ids,
    encode_episode,
    episodes_frame,
    extract,
    open_store,
    read_episodes,
    write_episode,
    write_manifest,
)

if TYPE_CHECKING:
    import pandas as pd
    from ray import ObjectRef

    from orchestrator.serving.pool import Lease, ServerPool

# Actor handles (an episode actor's, the journal's) are typed Any: Ray types every method of an
# ActorHandle as Never, and mypy would stop checking the code after each call. mypy does not apply
# class decorators (python/mypy#3135), so it does not see `.options` on the @ray.remote classes.

MAX_ATTEMPTS = 3
MODEL_SLOTS = 16  # concurrent model-bound episodes per model actor
MODEL_ACTOR_CPUS = 0.25
CPU_QUEUE = 2  # episodes handed to a CPU actor at once: one running, one queued behind it
MAX_IN_FLIGHT = 512
POLL_S = 0.5  # how often the driver reads the journal actor's ledger and rate-limit signals
WRITE_BACKLOG = 64  # finished episodes waiting for the writer thread
ENV_SLOT = "env_slot"  # optional custom resource: concurrent episodes a node may host
EMBEDDED_OBJECT_STORE = 512 * 1024**2
# Ray's ways of saying "the process or node that held this task is gone"
ACTOR_LOST = (rex.RayActorError, rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError,
              rex.OwnerDiedError, rex.LocalRayletDiedError)


# ---- Ray ------------------------------------------------------------------------------------

def _embedded_auth_token() -> None:
    """Give an embedded Ray a token that lives as long as this process, unless the user has one
    (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``) or turned token
    authentication off (``RAY_AUTH_MODE=disabled``).

    Without a token, Ray (2.59 on) writes a new one to ``~/.ray/auth_token`` for a local
    instance. That file outlives the run, and a later ``ray start --head`` that finds it turns
    token authentication on for the user's own cluster, whose ``ray job submit`` then fails
    until ``RAY_AUTH_MODE=token`` is set (docs/cluster.md). A token in this process's environment,
    which its Ray processes inherit, protects the instance as well and leaves nothing behind."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        return
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    if (Path.home() / ".ray" / "auth_token").is_file():
        return
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


def connect(address: str | None = None, *, num_cpus: int | None = None) -> bool:
    """Join a cluster (``address``, or ``RAY_ADDRESS`` inside ``ray job submit``) or start an
    embedded local Ray without dashboard and with quiet logs. Returns True when this call
    started or joined Ray (and so should shut it down), False when Ray was already up."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # ERROR: a local instance's notices (token auth, "started a local Ray") are not the user's business
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "include_dashboard": False}
    if address or os.environ.get("RAY_ADDRESS"):
        ray.init(address=address or None, **quiet)
    else:
        _embedded_auth_token()
        # Ray runs its workers at niceness 15, so on a busy machine any other process starves the
        # episodes; an embedded instance exists only for this run, so its workers run at 0
        # address="local": always a fresh instance, never a cluster someone `ray start`ed here
        ray.init(address="local", num_cpus=num_cpus, object_store_memory=EMBEDDED_OBJECT_STORE,
                 _system_config={"worker_niceness": 0}, **quiet)
    return True


@ray.remote(max_restarts=0)
class EpisodeActor:
    """Runs episodes; each call builds the agent, plays one episode in its own env, closes it,
    and hands back the episode's files encoded (see ``EncodedEpisode``)."""

    def __init__(self, preload: tuple[str, ...] = ()) -> None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import pyarrow as pa

        # pyarrow imports pandas (half a second) on its first array: done inside an episode's
        # encoding, it would stall every other episode on this actor's event loop
        pa.array([0])
        # Paid here, before any episode starts its clock: a model actor's episodes draw frames,
        # and their first call would otherwise import the LLM agent (and litellm: seconds) inside
        # the event loop, holding up every episode the actor hosts.
        if "frames" in preload:
            from env.render import prewarm

            prewarm()
        if "llm" in preload:
            from agents.llm import litellm_module

            if "litellm" in preload:
                litellm_module()

    def pid(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def run(self, spec: EpisodeSpec, run: str, attempts: int, endpoint: str | None,
                  resume: Resume | None = None, journal: Any = None, submission: int = 0) -> EncodedEpisode | Suspended:
        """Play one episode, continuing from ``resume`` (its journaled steps) when given; each new
        step goes to the run's ``journal`` actor before the next turn. ``submission`` tells this
        attempt's journal lines from a lost attempt's late ones."""
        from agents import build_agent
        from orchestrator.episode import run_episode

        protocol, identity = spec.condition.protocol, spec.identity(run)
        resume = resume or Resume()
        sender = StepSender(journal, spec, submission) if journal is not None else None
        try:
            if sender is not None:
                await sender.start(len(resume.rows))
            agent = build_agent(spec.model.config, protocol, seed=spec.seed, endpoint=endpoint,
                                on_rate_limit=sender.rate_limited if sender is not None else None)
        except Exception as err:  # a model that cannot even be built costs only its episodes
            result: EpisodeResult | Suspended = failed_episode(identity, spec.maze, protocol, getattr(err, "error_class", type(err).__name__),
                                    str(err), attempts, serving=spec.model.serving)
        else:
            try:
                result = await run_episode(
                    spec.maze, agent, protocol, identity, attempts=attempts, on_step=sender,
                    recorded=[StepRecord.from_row(r) for r in resume.rows], resumed=resume.resumed,
                    should_stop=sender.should_stop if sender is not None else None, serving=spec.model.serving)
            finally:
                await agent.aclose()
                if sender is not None:
                    await sender.close()
        return result if isinstance(result, Suspended) else encode_episode(result)


@dataclass(frozen=True)
class Resume:
    """Where an unfinished episode continues: its journaled step rows and how many times it was
    continued before (this continuation included)."""

    rows: tuple[dict[str, Any], ...] = ()
    resumed: int = 0


class StepSender:
    """The actor's side of the journal. Before each turn of a called model, the episode takes a
    turn slot of its model (``turn``: at most the model's current concurrency at once, and none
    once its budget is spent); each step then goes to the journal, and is durable, before the next
    turn. Steps of built-in agents (free, thousands a second) take no slot and are sent in batches
    at most ``FREE_FLUSH_S`` apart; such an episode opens its journal only with its first batch, so
    one that ends sooner (most do, in milliseconds) never touches the journal: rerunning it costs
    less than journaling it did (bench/orchestrator_overhead.py (a))."""

    FREE_FLUSH_S = 1.0

    def __init__(self, journal: Any, spec: EpisodeSpec, attempt: int):
        self.journal, self.attempt = journal, attempt
        self.episode_id, self.model = spec.episode_id, spec.model.name
        self.paid = not spec.model.builtin
        self.stop = False
        self.gated = False
        self.keep = 0
        self.opened = False
        self.pending: list[StepRecord] = []
        self.last = time.monotonic()

    async def start(self, keep: int) -> None:
        self.keep = keep
        if self.paid:
            await self._open()

    async def _open(self) -> None:
        self.stop, self.gated = await self.journal.start.remote(self.episode_id, self.attempt, self.keep, self.model)
        self.opened = True

    async def __call__(self, record: StepRecord) -> None:
        self.pending.append(record)
        if self.paid or time.monotonic() - self.last >= self.FREE_FLUSH_S:
            if not self.opened:
                await self._open()
            lines = [Journals.step_line(r.row()) for r in self.pending]
            cost = sum(r.usage.cost_usd for r in self.pending)
            self.pending, self.last = [], time.monotonic()
            self.stop, self.gated = await self.journal.append.remote(self.episode_id, self.attempt, lines,
                                                                     self.model, cost, self.paid)

    async def should_stop(self) -> bool:
        # a turn slot is asked for only while the model runs below its concurrency (rate limited)
        if self.paid and self.gated and not self.stop:
            self.stop = await self.journal.turn.remote(self.episode_id, self.model)
        return self.stop

    async def close(self) -> None:
        if self.paid:
            await self.journal.release.remote(self.episode_id, self.model)

    def rate_limited(self, retry_after: float | None) -> None:
        self.journal.rate_limited.remote(self.model, retry_after)


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
        self.writer = Journals(Path(folder))
        self.ledger = ledger
        self.rate_limits: dict[str, list[float | None]] = {}
        self.successes: dict[str, int] = {}
        self.ceilings = dict(slots)
        self.slots = dict(slots)
        self.calling: dict[str, set[str]] = {}  # model -> episodes in a turn
        self.changed = asyncio.Condition()
        self.syncing: asyncio.Task | None = None

    async def _sync_forever(self) -> None:
        while True:
            await asyncio.sleep(self.SYNC_S)
            dirty = self.writer.take_dirty()
            if dirty:
                await asyncio.to_thread(self.writer.sync, dirty)  # off the loop: appends go on meanwhile

    def _answer(self, model: str) -> tuple[bool, bool]:
        """(the model's budget is spent, its turns go through slots: it runs below its ceiling)."""
        if self.syncing is None:
            self.syncing = asyncio.get_running_loop().create_task(self._sync_forever())
        return self.ledger.exhausted(model), self.slots.get(model, 0) < self.ceilings.get(model, 0)

    async def start(self, episode_id: str, attempt: int, keep: int, model: str) -> tuple[bool, bool]:
        kept = self.writer.start(episode_id, attempt, keep)
        self.ledger.set_running(model, episode_id, kept.cost_usd)
        return self._answer(model)

    async def turn(self, episode_id: str, model: str) -> bool:
        """Wait for a turn slot of ``model``; True (and no slot) when its budget is spent."""
        async with self.changed:
            calling = self.calling.setdefault(model, set())
            await self.changed.wait_for(lambda: self.ledger.exhausted(model) or episode_id in calling
                                        or len(calling) < self.slots.get(model, 1 << 30))
            if self.ledger.exhausted(model):
                return True
            calling.add(episode_id)
            return False

    async def append(self, episode_id: str, attempt: int, lines: list[str], model: str, cost: float,
                     paid: bool) -> tuple[bool, bool]:
        if self.writer.append(episode_id, attempt, lines, sync=paid):
            self.ledger.add_step(model, episode_id, cost)
            if paid:
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
            self.writer.remove(episode_id)
        self.ledger.finish(model, episode_id, cost)

    async def rate_limited(self, model: str, retry_after: float | None) -> None:
        self.rate_limits.setdefault(model, []).append(retry_after)

    async def flush(self) -> None:
        """Every journal written so far on disk (the driver's last call)."""
        await asyncio.to_thread(self.writer.sync, self.writer.take_dirty())

    async def status(self) -> dict[str, Any]:
        """The ledger, and the rate limits and successful calls per model since the last status."""
        out = {**ledger_status(self.ledger), "rate_limits": self.rate_limits, "successes": self.successes}
        self.rate_limits, self.successes = {}, {}
        async with self.changed:
            self.changed.notify_all()  # a spent budget frees every episode waiting for a slot
        return out


# ---- scheduling -----------------------------------------------------------------------------

@dataclass
class Task:
    spec: EpisodeSpec
    attempts: int = 0
    lease: Lease | None = None
    actor: Worker | None = None  # where it was last submitted
    seq: int = 0  # submission order
    unstarted: int = 0  # times its actor was lost while it waited, queued, behind another

    @property
    def builtin(self) -> bool:
        return self.spec.model.builtin


@dataclass(eq=False)
class Worker:
    handle: Any
    slots: int
    node: str | None = None
    ordered: bool = False  # runs its episodes one at a time, in the order they were submitted
    queue: dict[ObjectRef, Task] = field(default_factory=dict)  # in flight here
    lost_running: ObjectRef | None = None  # once the actor is lost: the ref of the episode it was running
    warm: set[str] = field(default_factory=set)  # maze checksums whose tables it holds
    alive: bool = True

    @property
    def free(self) -> int:
        return self.slots - self.busy if self.alive else 0

    @property
    def busy(self) -> int:
        return len(self.queue)


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

    @property
    def unfinished(self) -> int:
        return self.suspended + self.not_started

    @property
    def exit_code(self) -> int:
        return 1 if self.errors or self.unfinished else 0


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
        self.run_dir: Path | str = self.store.where
        self.run = run or self.store.name
        self.retry_errors = retry_errors
        self.reporter = reporter or Reporter()
        self.pool = pool
        self.max_attempts = max_attempts
        self.on_dispatch = on_dispatch
        self.requested_cpu_actors = cpu_actors
        self.command = command or []
        self.cpu_workers: list[Worker] = []
        self.model_workers: list[Worker] = []
        self.in_flight: dict[ObjectRef, Task] = {}
        self.per_model: dict[str, int] = {}
        self.cpu_pending: dict[str, deque[Task]] = {}
        self.model_pending: dict[str, deque[Task]] = {}
        self.ran = 0
        self.submitted = 0
        self.rows: dict[str, EpisodeRecord] = {}  # episodes written by this invocation
        self.replaced_actors = 0
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="gridbench-writer")
        self.writes: deque[Future] = deque()
        self.max_cost = max_cost
        self.journals = Journals.of_run(self.store)
        self.journal: Any = None
        self.concurrency = {m.name: Concurrency(m.max_concurrency) for m in sweep.models
                            if not m.builtin and m.max_concurrency}
        self.exhausted: set[str] = set()  # models whose budget (or the run's) is spent
        self.suspended = 0
        self.not_started = 0
        self.ledger: dict[str, dict[str, float | None]] = {}
        self._polled = 0.0
        self._status: Any = None  # a status asked of the journal actor, not yet taken in

    # ---- public ----------------------------------------------------------------------------
    def plan(self) -> tuple[list[EpisodeSpec], list[EpisodeSpec]]:
        """(every episode of the matrix, those still to run)."""
        specs = self.sweep.episodes()
        done = completed_ids(self.store, include_errors=not self.retry_errors)
        return specs, [s for s in specs if s.episode_id not in done]

    def execute(self) -> RunOutcome:
        clean_partial(self.store)
        specs, todo = self.plan()
        if self.retry_errors and todo:
            # episodes to rerun that a compaction packed: back to files of their own, which the
            # rerun then replaces as in a run never compacted
            extract(self.store, [s.episode_id for s in todo])
        self._enqueue(todo)
        self._start_cpu_workers()  # actors import and pre-warm while the manifest is written
        invocation = {"command": self.command, "planned": len(specs), "to_run": len(todo),
                      "retry_errors": self.retry_errors, "max_cost": self.max_cost}
        write_manifest(self.store, run=self.run, sweep=self.sweep.resolved(),
                       mazes={m.checksum: m.to_dict() for m in self.sweep.all_mazes}, invocation=invocation)
        planned: dict[str, int] = {}
        for s in specs:
            planned[s.model.name] = planned.get(s.model.name, 0) + 1
        todo_ids = {s.episode_id for s in todo}
        already: dict[str, int] = {}
        for s in specs:
            if s.episode_id not in todo_ids:
                already[s.model.name] = already.get(s.model.name, 0) + 1
        self.reporter.start(self.sweep, planned, already)
        try:
            if todo:
                self._start_journal(specs, todo)
                self._run()
        finally:
            self.writer.shutdown(wait=True)  # whatever was handed over is written, even on Ctrl-C
            try:
                self._close_journal()
            finally:
                self._release_actors()
                self.reporter.finish()
        episodes = self._episodes(specs)
        errors = int((episodes["termination"] == ERROR).sum()) if len(episodes) else 0
        history = {name: c.history for name, c in self.concurrency.items()}
        if todo:
            write_manifest(self.store, run=self.run, sweep=self.sweep.resolved(), mazes={},
                           invocation={**invocation, "ledger": self.ledger, "concurrency": history,
                                       "suspended": self.suspended, "not_started": self.not_started},
                           replace_last=True)
        return RunOutcome(self.run_dir, len(specs), len(specs) - len(todo), self.ran, errors, episodes,
                          self.suspended, self.not_started, self.ledger, history)

    # ---- the journal and the ledger ----------------------------------------------------------
    def _start_journal(self, specs: list[EpisodeSpec], todo: list[EpisodeSpec]) -> None:
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
        done = read_episodes(self.store, ids=set(by_id) - todo_ids)
        for eid, cost in zip(done["episode_id"], done["cost_usd"].fillna(0.0), strict=True):
            name = by_id[eid].model.name
            finished[name] = finished.get(name, 0.0) + float(cost)
        ledger = Ledger(limits={m.name: m.max_cost for m in self.sweep.models if m.max_cost is not None},
                        total_limit=self.max_cost, finished=finished)
        for eid in self.journals.ids() & todo_ids:
            ledger.set_running(by_id[eid].model.name, eid, self.journals.read(eid).cost_usd)
        here = ray.get_runtime_context().get_node_id()
        self.journal = JournalActor.options(  # type: ignore[attr-defined]  # a Ray actor class
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)
        ).remote(str(self.journals.folder), ledger, {name: c.limit for name, c in self.concurrency.items()})
        # the ledger it starts from is known here: episodes are dispatched while the actor starts
        self._apply(ledger_status(ledger))

    def _poll(self, force: bool = False) -> None:
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
            if status["total_exhausted"] or status["exhausted"].get(m.name):
                self._stop_starting(m.name)
        self.reporter.spending(self.ledger, {n: c.limit for n, c in self.concurrency.items()})

    def _stop_starting(self, model: str) -> None:
        """A spent budget: no more episodes of ``model`` start (those running stop themselves)."""
        if model in self.exhausted:
            return
        self.exhausted.add(model)
        for queues in (self.model_pending, self.cpu_pending):
            for key in list(queues):
                kept = deque(t for t in queues[key] if t.spec.model.name != model)
                self.not_started += len(queues[key]) - len(kept)
                if kept:
                    queues[key] = kept
                else:
                    del queues[key]

    def _close_journal(self) -> None:
        if self.journal is None:
            return
        try:
            self._poll(force=True)  # after every finish() the writer sent: the ledger is final
            ray.get(self.journal.flush.remote())
        finally:
            ray.kill(self.journal, no_restart=True)
            self.journal = None

    # ---- the loop --------------------------------------------------------------------------
    def _enqueue(self, todo: list[EpisodeSpec]) -> None:
        for spec in todo:
            task = Task(spec)
            if task.builtin:
                self.cpu_pending.setdefault(spec.maze.checksum, deque()).append(task)
            else:
                self.model_pending.setdefault(spec.model.name, deque()).append(task)

    def _run(self) -> None:
        while self.cpu_pending or self.model_pending or self.in_flight:
            self._poll()
            self._dispatch()
            if not self.in_flight:
                time.sleep(0.2)  # everything pending waits for a server replica with room
                continue
            refs = list(self.in_flight)
            # a status asked of the journal actor is taken in within POLL_S
            ready, _ = ray.wait(refs, num_returns=1, timeout=POLL_S if self.journal is not None else 1.0)
            if ready:
                more, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                ready = list({*ready, *more})
            for ref in ready:
                result = self._collect(ref)
                if result is not None:
                    self._write(result)
        self._drain_writes(0)

    def _episodes(self, specs: list[EpisodeSpec]) -> pd.DataFrame:
        """The matrix's episodes: rows written now, files for those finished before."""
        import pandas as pd

        earlier = read_episodes(self.store, ids={s.episode_id for s in specs} - self.rows.keys())
        now = episodes_frame(list(self.rows.values()))
        frames = [f for f in (earlier, now) if len(f)]
        if not frames:
            return now
        return pd.concat(frames, ignore_index=True).sort_values("episode_id", ignore_index=True)

    def _write(self, result: EncodedEpisode) -> None:
        """Hand a finished episode to the writer thread, so the loop refills actors while files
        are fsynced; at most ``WRITE_BACKLOG`` results wait in memory."""
        self.writes.append(self.writer.submit(self._write_now, result))
        self._drain_writes(WRITE_BACKLOG)

    def _write_now(self, result: EncodedEpisode) -> None:
        write_episode(self.store, result)
        # an error episode keeps its journal, so that --retry-errors continues it (unless its
        # journal is what failed to replay)
        keep = result.termination == ERROR and result.episode.error_class != "ResumeMismatch"
        if self.journal is not None:
            self.journal.finish.remote(result.episode_id, result.episode.identity.model_name,
                                       result.episode.usage.cost_usd, keep)
        elif not keep:
            self.journals.remove(result.episode_id)
        self.rows[result.episode_id] = result.episode
        self.ran += 1
        self.reporter.episode_done(result.episode)

    def _drain_writes(self, keep: int) -> None:
        while len(self.writes) > keep:
            self.writes.popleft().result()  # a failed write (disk full) stops the driver here

    def _cluster(self) -> tuple[float, bool]:
        """(CPUs free now, whether the cluster declares env slots). Free, not total: model
        servers started before the episodes already hold theirs. Actors killed a moment ago
        (a previous run in this process) give theirs back within a second."""
        total = ray.cluster_resources()
        free = float(ray.available_resources().get("CPU", 0.0))
        deadline = time.monotonic() + 1.0
        while free < total.get("CPU", 0.0) and time.monotonic() < deadline:
            time.sleep(0.1)
            free = float(ray.available_resources().get("CPU", 0.0))
        return free, ENV_SLOT in total

    def _actor_options(self, cpus: float, concurrency: int, env_slots: int,
                       strategy: NodeAffinitySchedulingStrategy | None = None) -> dict[str, Any]:
        has_slots = ENV_SLOT in ray.cluster_resources()
        opts: dict[str, Any] = {"num_cpus": cpus, "max_concurrency": concurrency}
        if has_slots:  # clusters that declare env slots cap the episodes each node hosts
            opts["resources"] = {ENV_SLOT: env_slots}
        if strategy is not None:
            opts["scheduling_strategy"] = strategy
        return opts

    def _start_cpu_workers(self) -> None:
        if not self.cpu_pending:
            return
        cpus, _ = self._cluster()
        model_actors = sum(
            math.ceil((m.max_concurrency or 1) / MODEL_SLOTS) for m in self.sweep.models if not m.builtin
        )
        room = int(cpus - model_actors * MODEL_ACTOR_CPUS + 1e-9)
        # at least one, even on a full cluster: Ray places it when a CPU frees up
        n = self.requested_cpu_actors or max(1, min(room, len(self.cpu_pending) * 4))
        for _ in range(n):
            self.cpu_workers.append(self._new_cpu_worker())

    def _new_cpu_worker(self) -> Worker:
        handle = EpisodeActor.options(**self._actor_options(1, 1, 1)).remote()  # type: ignore[attr-defined]
        return Worker(handle, CPU_QUEUE, ordered=True)

    def _model_worker(self, node: str | None, strategy: NodeAffinitySchedulingStrategy | None) -> Worker:
        for w in self.model_workers:
            if w.node == node and w.free > 0:
                return w
        handle = EpisodeActor.options(  # type: ignore[attr-defined]  # a Ray actor class
            **self._actor_options(MODEL_ACTOR_CPUS, MODEL_SLOTS, MODEL_SLOTS, strategy)
        ).remote(self._model_preload())
        w = Worker(handle, MODEL_SLOTS, node=node)
        self.model_workers.append(w)
        return w

    def _model_preload(self) -> tuple[str, ...]:
        litellm = any(m.config.client == "litellm" for m in self.sweep.models if not m.builtin)
        return ("frames", "llm", "litellm") if litellm else ("frames", "llm")

    def _has_room(self, task: Task) -> bool:
        name = task.spec.model.name
        adaptive = self.concurrency.get(name)
        cap = adaptive.limit if adaptive is not None else task.spec.model.max_concurrency
        return cap is None or self.per_model.get(name, 0) < cap

    def _pick_cpu_task(self, worker: Worker) -> Task | None:
        """Prefer a maze this actor already knows, then a maze nobody started, then the biggest."""
        claimed = set().union(*(w.warm for w in self.cpu_workers if w is not worker and w.alive))
        best, best_key = None, None
        for checksum, queue in self.cpu_pending.items():
            if not any(self._has_room(t) for t in queue):
                continue
            key = (checksum in worker.warm, checksum not in claimed, len(queue))
            if best_key is None or key > best_key:
                best, best_key = checksum, key
        if best is None:
            return None
        queue = self.cpu_pending[best]
        for i, t in enumerate(queue):
            if self._has_room(t):
                del queue[i]
                if not queue:
                    del self.cpu_pending[best]
                worker.warm.add(best)
                return t
        return None

    def _dispatch(self) -> None:
        if not self.cpu_pending:
            # no built-in episode left to start: idle CPU actors give their CPU to model actors
            for w in [w for w in self.cpu_workers if w.busy == 0]:
                self.cpu_workers.remove(w)
                ray.kill(w.handle, no_restart=True)
        elif not self.cpu_workers:  # episodes came back (their actor died) after the others left
            self.cpu_workers.append(self._new_cpu_worker())
        for w in self.cpu_workers:
            while w.free > 0 and self.cpu_pending and len(self.in_flight) < MAX_IN_FLIGHT:
                task = self._pick_cpu_task(w)
                if task is None:
                    break
                self._submit(w, task, None)
        # model-bound episodes: round-robin over models so one slow model never starves the others
        progressed = True
        while progressed and self.model_pending and len(self.in_flight) < MAX_IN_FLIGHT:
            progressed = False
            for name in list(self.model_pending):
                queue = self.model_pending[name]
                task = queue[0]
                if not self._has_room(task):
                    continue
                lease = strategy = node = None
                if self.pool is not None and self.pool.serves(name):
                    # the model-server hook: a leased replica gives the endpoint and the node
                    try:
                        lease = self.pool.acquire(name)
                    except ServerStartError as err:  # every replica failed for good: its episodes end in error
                        for t in self.model_pending.pop(name):
                            self._write(self._error(t, "ServerFailed", str(err).splitlines()[0]))
                        progressed = True
                        continue
                    if lease is None:
                        continue
                    node, strategy = lease.node_id, lease.scheduling_strategy()
                queue.popleft()
                if not queue:
                    del self.model_pending[name]
                task.lease = lease
                self._submit(self._model_worker(node, strategy), task, lease.url if lease else None)
                progressed = True

    def _submit(self, worker: Worker, task: Task, api_base: str | None) -> None:
        task.attempts += 1
        task.actor = worker
        self.submitted += 1
        task.seq = self.submitted
        self.per_model[task.spec.model.name] = self.per_model.get(task.spec.model.name, 0) + 1
        if self.on_dispatch is not None:  # a test's hook may kill the actor or its node right here
            self.on_dispatch(task.spec, worker.handle, task.attempts)
        ref = worker.handle.run.remote(task.spec, self.run, task.attempts, api_base, self._resume(task.spec),
                                       self.journal, task.seq)
        self.in_flight[ref] = task
        worker.queue[ref] = task

    def _resume(self, spec: EpisodeSpec) -> Resume:
        """Where an episode continues: its journal, wherever an earlier attempt (or run) left it."""
        journal = self.journals.read(spec.episode_id)
        return Resume(tuple(journal.rows), journal.resumed + (1 if journal.rows else 0))

    def _finish_task(self, ref: ObjectRef, task: Task) -> None:
        if task.actor is not None:
            task.actor.queue.pop(ref, None)
        self.per_model[task.spec.model.name] -= 1
        if task.lease is not None and self.pool is not None:  # only a pool gives leases
            self.pool.release(task.lease)

    def _requeue(self, task: Task) -> None:
        task.lease = None
        queue = self.cpu_pending.setdefault(task.spec.maze.checksum, deque()) if task.builtin \
            else self.model_pending.setdefault(task.spec.model.name, deque())
        queue.appendleft(task)

    def _collect(self, ref: ObjectRef) -> EncodedEpisode | None:
        """The finished episode to write, or None when it was put back in the queue."""
        task = self.in_flight.pop(ref)
        worker = task.actor
        assert worker is not None  # in flight: submitted to a worker
        try:
            out = ray.get(ref)
        except ACTOR_LOST as err:
            ran = self._ran_when_lost(worker, ref)
            self._finish_task(ref, task)
            self._actor_lost(worker)
            reason = type(err).__name__
            if not ran and task.unstarted < self.max_attempts:
                # it was queued behind the episode that was running: no attempt used (bounded,
                # so that no ordering surprise can keep an episode coming back for ever)
                task.unstarted += 1
                task.attempts -= 1
                self._requeue(task)
                return None
            if task.attempts < self.max_attempts:
                self.reporter.retrying(task.spec, task.attempts, reason)
                self._requeue(task)
                return None
            result = self._error(task, reason, f"its actor or node died on each of {task.attempts} attempts")
        except rex.RayTaskError as err:  # the actor code itself raised: a bug, recorded as error
            self._finish_task(ref, task)
            cause = err.cause if getattr(err, "cause", None) is not None else err
            result = self._error(task, type(cause).__name__, str(cause).splitlines()[0] if str(cause) else "")
        else:
            self._finish_task(ref, task)
            result = out
            if isinstance(result, Suspended):  # a budget ran out: its journal waits for a rerun
                self.suspended += 1
                self.reporter.suspended(task.spec, result.steps)
                return None
            if (result.termination == ERROR and task.lease is not None and task.attempts < self.max_attempts
                    and self._server_lost(task.lease)):
                self.reporter.retrying(task.spec, task.attempts, "model server restarted")
                self._requeue(task)
                return None
        return result

    @staticmethod
    def _ran_when_lost(worker: Worker, ref: ObjectRef) -> bool:
        """Whether the episode behind ``ref`` was running when its actor died, rather than queued
        behind the one that was. An ordered actor runs episodes in the order they were
        submitted, so the first of them not known to have finished was the running one."""
        if not worker.ordered:
            return True
        if worker.lost_running is None:
            worker.lost_running = ref
            for r in sorted(worker.queue, key=lambda r: worker.queue[r].seq):
                try:
                    ray.get(r, timeout=0)
                except ACTOR_LOST:
                    worker.lost_running = r
                    break
                except rex.RayTaskError:
                    continue  # it finished, failing on its own, before the actor was lost
                except Exception:  # noqa: BLE001 - not known to have finished (not ready yet, say)
                    worker.lost_running = r
                    break
        return worker.lost_running == ref

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

    def _actor_lost(self, worker: Worker) -> None:
        if not worker.alive:
            return
        worker.alive = False
        if worker in self.cpu_workers:
            self.cpu_workers.remove(worker)
            if self.replaced_actors < 4 * max(1, len(self.cpu_workers) + 1):
                self.replaced_actors += 1
                self.cpu_workers.append(self._new_cpu_worker())
        elif worker in self.model_workers:
            self.model_workers.remove(worker)

    def _release_actors(self) -> None:
        for w in [*self.cpu_workers, *self.model_workers]:
            try:
                ray.kill(w.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.cpu_workers.clear()
        self.model_workers.clear()
