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
from typing import Any

import ray
from ray import exceptions as rex

from orchestrator.compaction import extract
from orchestrator.episode import failed_episode
from orchestrator.records import EpisodeRecord
from orchestrator.serving.actor import ServerStartError
from orchestrator.store import RunStore, open_store
from orchestrator.sweep import EpisodeSpec, Sweep
from orchestrator.traces import (
    EncodedEpisode,
    clean_partial,
    completed_ids,
    encode_episode,
    episodes_frame,
    read_episodes,
    write_encoded,
    write_manifest,
)

MAX_ATTEMPTS = 3
MODEL_SLOTS = 16  # concurrent model-bound episodes per model actor
MODEL_ACTOR_CPUS = 0.25
CPU_QUEUE = 2  # episodes handed to a CPU actor at once: one running, one queued behind it
MAX_IN_FLIGHT = 512
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
    quiet = {"log_to_driver": False, "logging_level": logging.ERROR, "include_dashboard": False}
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

    async def run(self, spec: EpisodeSpec, run: str, attempts: int, endpoint: str | None) -> EncodedEpisode:
        from agents import build_agent
        from orchestrator.episode import run_episode

        protocol, identity = spec.condition.protocol, spec.identity(run)
        try:
            agent = build_agent(spec.model.config, protocol, seed=spec.seed, endpoint=endpoint)
        except Exception as err:  # a model that cannot even be built costs only its episodes
            result = failed_episode(identity, spec.maze, protocol, getattr(err, "error_class", type(err).__name__),
                                    str(err), attempts)
        else:
            try:
                result = await run_episode(spec.maze, agent, protocol, identity, attempts=attempts)
            finally:
                await agent.aclose()
        return encode_episode(result)


# ---- scheduling -----------------------------------------------------------------------------

@dataclass
class Task:
    spec: EpisodeSpec
    attempts: int = 0
    lease: Any = None
    actor: Any = None
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
    queue: dict[Any, Task] = field(default_factory=dict)  # in flight here
    lost_running: Any = None  # once the actor is lost: the ref of the episode it was running
    warm: set[str] = field(default_factory=set)  # maze checksums whose tables it holds
    alive: bool = True

    @property
    def free(self) -> int:
        return self.slots - self.busy if self.alive else 0

    @property
    def busy(self) -> int:
        return len(self.queue)


class Reporter:
    """What the driver tells a progress display; the default shows nothing."""

    def start(self, sweep: Sweep, planned: dict[str, int], done: dict[str, int]) -> None: ...

    def episode_done(self, episode: EpisodeRecord) -> None: ...

    def retrying(self, spec: EpisodeSpec, attempts: int, reason: str) -> None: ...

    def finish(self) -> None: ...


@dataclass
class RunOutcome:
    run_dir: Path | str  # a local folder, or the run's URI
    planned: int
    skipped: int  # already complete before this invocation
    ran: int
    errors: int  # error episodes in the run (this matrix) after this invocation
    episodes: Any = field(default=None, repr=False)  # the run's episodes DataFrame (this matrix)

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0


class Driver:
    def __init__(
        self,
        sweep: Sweep,
        run_dir: str | os.PathLike | RunStore,
        *,
        run: str | None = None,
        retry_errors: bool = False,
        reporter: Reporter | None = None,
        pool: Any = None,
        max_attempts: int = MAX_ATTEMPTS,
        on_dispatch: Callable[[EpisodeSpec, Any, int], None] | None = None,
        cpu_actors: int | None = None,
        command: list[str] | None = None,
    ):
        self.sweep = sweep
        self.store = open_store(run_dir)
        self.run_dir: Path | str = self.store.root if self.store.local else self.store.location
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
        self.in_flight: dict[Any, Task] = {}
        self.per_model: dict[str, int] = {}
        self.cpu_pending: dict[str, deque[Task]] = {}
        self.model_pending: dict[str, deque[Task]] = {}
        self.ran = 0
        self.submitted = 0
        self.rows: dict[str, EpisodeRecord] = {}  # episodes written by this invocation
        self.replaced_actors = 0
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="gridbench-writer")
        self.writes: deque[Future] = deque()

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
        write_manifest(
            self.store, run=self.run, sweep=self.sweep.resolved(),
            mazes={m.checksum: m.to_dict() for m in self.sweep.all_mazes},
            invocation={"command": self.command, "planned": len(specs), "to_run": len(todo),
                        "retry_errors": self.retry_errors},
        )
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
                self._run()
        finally:
            self.writer.shutdown(wait=True)  # whatever was handed over is written, even on Ctrl-C
            self._release_actors()
            self.reporter.finish()
        episodes = self._episodes(specs)
        errors = int((episodes["termination"] == "error").sum()) if len(episodes) else 0
        return RunOutcome(self.run_dir, len(specs), len(specs) - len(todo), self.ran, errors, episodes)

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
            self._dispatch()
            if not self.in_flight:
                time.sleep(0.2)  # everything pending waits for a server replica with room
                continue
            refs = list(self.in_flight)
            ready, _ = ray.wait(refs, num_returns=1, timeout=1.0)
            if ready:
                more, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                ready = list({*ready, *more})
            for ref in ready:
                result = self._collect(ref)
                if result is not None:
                    self._write(result)
        self._drain_writes(0)

    def _episodes(self, specs: list[EpisodeSpec]) -> Any:
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
        write_encoded(self.store, result)
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

    def _actor_options(self, cpus: float, concurrency: int, env_slots: int, strategy: Any = None) -> dict[str, Any]:
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
        handle = EpisodeActor.options(**self._actor_options(1, 1, 1)).remote()
        return Worker(handle, CPU_QUEUE, ordered=True)

    def _model_worker(self, node: str | None, strategy: Any) -> Worker:
        for w in self.model_workers:
            if w.node == node and w.free > 0:
                return w
        handle = EpisodeActor.options(
            **self._actor_options(MODEL_ACTOR_CPUS, MODEL_SLOTS, MODEL_SLOTS, strategy)
        ).remote(self._model_preload())
        w = Worker(handle, MODEL_SLOTS, node=node)
        self.model_workers.append(w)
        return w

    def _model_preload(self) -> tuple[str, ...]:
        litellm = any(m.config.client == "litellm" for m in self.sweep.models if not m.builtin)
        return ("frames", "llm", "litellm") if litellm else ("frames", "llm")

    def _has_room(self, task: Task) -> bool:
        cap = task.spec.model.max_concurrency
        return cap is None or self.per_model.get(task.spec.model.name, 0) < cap

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
        ref = worker.handle.run.remote(task.spec, self.run, task.attempts, api_base)
        self.in_flight[ref] = task
        worker.queue[ref] = task

    def _finish_task(self, ref: Any, task: Task) -> None:
        task.actor.queue.pop(ref, None)
        self.per_model[task.spec.model.name] -= 1
        if task.lease is not None:
            self.pool.release(task.lease)

    def _requeue(self, task: Task) -> None:
        task.lease = None
        queue = self.cpu_pending.setdefault(task.spec.maze.checksum, deque()) if task.builtin \
            else self.model_pending.setdefault(task.spec.model.name, deque())
        queue.appendleft(task)

    def _collect(self, ref: Any) -> EncodedEpisode | None:
        """The finished episode to write, or None when it was put back in the queue."""
        task = self.in_flight.pop(ref)
        worker = task.actor
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
            if (result.termination == "error" and task.lease is not None and task.attempts < self.max_attempts
                    and self._server_lost(task.lease)):
                self.reporter.retrying(task.spec, task.attempts, "model server restarted")
                self._requeue(task)
                return None
        return result

    @staticmethod
    def _ran_when_lost(worker: Worker, ref: Any) -> bool:
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

    def _server_lost(self, lease: Any) -> bool:
        try:
            return bool(self.pool.lost(lease))
        except Exception:  # noqa: BLE001 - a pool that cannot answer counts as lost
            return True

    def _error(self, task: Task, error_class: str, message: str) -> EncodedEpisode:
        s = task.spec
        return encode_episode(failed_episode(s.identity(self.run), s.maze, s.condition.protocol, error_class,
                                             message, task.attempts))

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
