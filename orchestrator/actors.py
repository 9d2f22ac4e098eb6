"""The episode actors and their side of the journal (docs/design.md §9).

Two kinds of actors, both running ``episodes.episode.run_episode`` with one env per episode:

- *CPU actors* (one CPU each) run built-in agents, whose episodes are pure computation. Each
  runs one episode at a time with the next one queued behind it (``CPU_QUEUE``), so it never
  waits for the driver between episodes (a built-in episode takes tens of ms).
- *model actors* (a quarter of a CPU each) host up to ``MODEL_SLOTS`` episodes at once, all
  waiting on their model; many fit on one node. Episodes of a served model (``serve:``) run
  on the node of the server replica the ``ServerPool`` leased them.

``Actors`` is the driver's set of them: it starts, reuses, replaces and releases them.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ray
from ray import exceptions as rex
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from episodes.episode import EpisodeResult, Suspended, failed_episode
from orchestrator.journal_actor import JournalAnswer
from orchestrator.sweep import EpisodeSpec, ModelEntry
from traces import EncodedEpisode, Journals, StepRecord, encode_episode

if TYPE_CHECKING:
    from ray import ObjectRef

# Actor handles (an episode actor's, the journal's) are typed Any: Ray types every method of an
# ActorHandle as Never, and mypy would stop checking the code after each call. mypy does not apply
# class decorators (python/mypy#3135), so it does not see `.options` on the @ray.remote classes.

MODEL_SLOTS = 16  # concurrent model-bound episodes per model actor
MODEL_ACTOR_CPUS = 0.25
CPU_QUEUE = 2  # episodes handed to a CPU actor at once: one running, one queued behind it
ENV_SLOT = "env_slot"  # optional custom resource: concurrent episodes a node may host
# Ray's ways of saying "the process or node that held this task is gone"
ACTOR_LOST = (rex.RayActorError, rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError,
              rex.OwnerDiedError, rex.LocalRayletDiedError)


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
                  resume: Resume | None = None, journal: Any = None, submission: int = 0,
                  broker: Any = None) -> EncodedEpisode | Suspended:
        """Play one episode, continuing from ``resume`` (its journaled steps) when given; each new
        step goes to the run's ``journal`` actor before the next turn. ``submission`` tells this
        attempt's journal lines from a lost attempt's late ones. ``broker``: a batch arm's lockstep
        rounds (``orchestrator.batching.BatchBroker``), through which its requests go."""
        from agents import build_agent
        from episodes.episode import run_episode

        protocol, identity = spec.condition.protocol, spec.identity(run)
        resume = resume or Resume()
        sender = StepSender(journal, spec, submission) if journal is not None else None
        gateway = None
        try:
            if sender is not None:
                await sender.start(len(resume.rows))
            if broker is not None:  # its requests go through the arm's lockstep rounds
                from orchestrator.batching import EpisodeGateway

                gateway = EpisodeGateway(broker, spec.episode_id)
                await gateway.join()
            agent = build_agent(spec.model.config, protocol, seed=spec.seed, endpoint=endpoint,
                                on_rate_limit=sender.rate_limited if sender is not None else None, batch=gateway)
        except Exception as err:  # a model that cannot even be built costs only its episodes
            result: EpisodeResult | Suspended = failed_episode(identity, spec.maze, protocol, getattr(err, "error_class", type(err).__name__),
                                    str(err), attempts, serving=spec.model.serving)
            if gateway is not None:
                await gateway.leave()
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
                if gateway is not None:  # the arm's rounds no longer wait for this episode
                    await gateway.leave()
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
        # a called model's steps cost: each is journaled at once and its turns may take slots
        self.calls_model = not spec.model.builtin
        self.budget_spent = False
        self.through_slots = False  # the model runs below its ceiling: each turn takes a slot
        self.resumed_steps = 0  # journaled steps this attempt continues from
        self.journal_open = False
        self.unsent: list[StepRecord] = []
        self.last_sent = time.monotonic()

    async def start(self, resumed_steps: int) -> None:
        self.resumed_steps = resumed_steps
        if self.calls_model:
            await self._open()

    async def _open(self) -> None:
        self._take(await self.journal.start.remote(self.episode_id, self.attempt, self.resumed_steps, self.model))
        self.journal_open = True

    def _take(self, answer: JournalAnswer) -> None:
        self.budget_spent, self.through_slots = answer

    async def __call__(self, record: StepRecord) -> None:
        self.unsent.append(record)
        if self.calls_model or time.monotonic() - self.last_sent >= self.FREE_FLUSH_S:
            if not self.journal_open:
                await self._open()
            lines = [Journals.step_line(r.row()) for r in self.unsent]
            cost = sum(r.usage.cost_usd for r in self.unsent)
            self.unsent, self.last_sent = [], time.monotonic()
            self._take(await self.journal.append.remote(self.episode_id, self.attempt, lines, self.model, cost,
                                                        self.calls_model))

    async def should_stop(self) -> bool:
        # a turn slot is asked for only while the model runs below its concurrency (rate limited)
        if self.calls_model and self.through_slots and not self.budget_spent:
            self.budget_spent = await self.journal.turn.remote(self.episode_id, self.model)
        return self.budget_spent

    async def close(self) -> None:
        if self.calls_model:
            await self.journal.release.remote(self.episode_id, self.model)

    def rate_limited(self, retry_after: float | None) -> None:
        self.journal.rate_limited.remote(self.model, retry_after)


@dataclass(eq=False)
class Worker:
    """One episode actor as the driver sees it: what runs there, and what it knows."""

    handle: Any
    slots: int
    node: str | None = None
    ordered: bool = False  # runs its episodes one at a time, in the order they were submitted
    queue: dict[ObjectRef, Any] = field(default_factory=dict)  # in flight here: ref -> the driver's task
    lost_running: ObjectRef | None = None  # once the actor is lost: the ref of the episode it was running
    warm: set[str] = field(default_factory=set)  # maze checksums whose tables it holds
    alive: bool = True

    @property
    def free(self) -> int:
        return self.slots - self.busy if self.alive else 0

    @property
    def busy(self) -> int:
        return len(self.queue)

    def ran_when_lost(self, ref: ObjectRef) -> bool:
        """Whether the episode behind ``ref`` was running when this actor died, rather than queued
        behind the one that was. An ordered actor runs episodes in the order they were
        submitted, so the first of them not known to have finished was the running one."""
        if not self.ordered:
            return True
        if self.lost_running is None:
            self.lost_running = ref
            for r in sorted(self.queue, key=lambda r: self.queue[r].seq):
                try:
                    ray.get(r, timeout=0)
                except ACTOR_LOST:
                    self.lost_running = r
                    break
                except rex.RayTaskError:
                    continue  # it finished, failing on its own, before the actor was lost
                except Exception:  # noqa: BLE001 - not known to have finished (not ready yet, say)
                    self.lost_running = r
                    break
        return self.lost_running == ref


def free_cpus() -> float:
    """CPUs free now. Free, not total: model servers started before the episodes already hold
    theirs. Actors killed a moment ago (a previous run in this process) give theirs back within
    a second."""
    total = ray.cluster_resources()
    free = float(ray.available_resources().get("CPU", 0.0))
    deadline = time.monotonic() + 1.0
    while free < total.get("CPU", 0.0) and time.monotonic() < deadline:
        time.sleep(0.1)
        free = float(ray.available_resources().get("CPU", 0.0))
    return free


def actor_options(cpus: float, concurrency: int, env_slots: int,
                  strategy: NodeAffinitySchedulingStrategy | None = None) -> dict[str, Any]:
    opts: dict[str, Any] = {"num_cpus": cpus, "max_concurrency": concurrency}
    if ENV_SLOT in ray.cluster_resources():  # clusters that declare env slots cap the episodes each node hosts
        opts["resources"] = {ENV_SLOT: env_slots}
    if strategy is not None:
        opts["scheduling_strategy"] = strategy
    return opts


class Actors:
    """The episode actors of one run: CPU actors for built-in agents (``cpu``) and model actors
    (``model``), started as needed, replaced when lost (a bounded number of times), released
    at the end. ``cpu_actors`` fixes how many CPU actors start (default: as the cluster has room)."""

    def __init__(self, models: list[ModelEntry], cpu_actors: int | None = None):
        self.cpu: list[Worker] = []
        self.model: list[Worker] = []
        self.requested_cpu = cpu_actors
        self.replaced = 0
        self.model_actors_needed = sum(math.ceil((m.max_concurrency or 1) / MODEL_SLOTS) for m in models if not m.builtin)
        litellm = any(m.config.client == "litellm" for m in models if not m.builtin)
        self.preload = ("frames", "llm", "litellm") if litellm else ("frames", "llm")

    def start_cpu(self, pending_mazes: int) -> None:
        """The CPU actors for ``pending_mazes`` mazes of built-in episodes (none for none)."""
        if not pending_mazes:
            return
        room = int(free_cpus() - self.model_actors_needed * MODEL_ACTOR_CPUS + 1e-9)
        # at least one, even on a full cluster: Ray places it when a CPU frees up
        n = self.requested_cpu or max(1, min(room, pending_mazes * 4))
        for _ in range(n):
            self.cpu.append(self.new_cpu())

    def new_cpu(self) -> Worker:
        handle = EpisodeActor.options(**actor_options(1, 1, 1)).remote()  # type: ignore[attr-defined]
        return Worker(handle, CPU_QUEUE, ordered=True)

    def for_model(self, node: str | None, strategy: NodeAffinitySchedulingStrategy | None) -> Worker:
        """A model actor with a free slot on ``node`` (any node for None), started if none has one."""
        for w in self.model:
            if w.node == node and w.free > 0:
                return w
        handle = EpisodeActor.options(  # type: ignore[attr-defined]  # a Ray actor class
            **actor_options(MODEL_ACTOR_CPUS, MODEL_SLOTS, MODEL_SLOTS, strategy)
        ).remote(self.preload)
        w = Worker(handle, MODEL_SLOTS, node=node)
        self.model.append(w)
        return w

    def release_idle_cpu(self) -> None:
        """No built-in episode left to start: idle CPU actors give their CPU to model actors."""
        for w in [w for w in self.cpu if w.busy == 0]:
            self.cpu.remove(w)
            ray.kill(w.handle, no_restart=True)

    def lost(self, worker: Worker) -> None:
        """A dead actor leaves the set; a CPU actor is replaced, at most four times the set's size."""
        if not worker.alive:
            return
        worker.alive = False
        if worker in self.cpu:
            self.cpu.remove(worker)
            if self.replaced < 4 * max(1, len(self.cpu) + 1):
                self.replaced += 1
                self.cpu.append(self.new_cpu())
        elif worker in self.model:
            self.model.remove(worker)

    def release(self) -> None:
        for w in [*self.cpu, *self.model]:
            try:
                ray.kill(w.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.cpu.clear()
        self.model.clear()
