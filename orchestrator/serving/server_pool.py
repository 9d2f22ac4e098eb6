"""``ServerPool``: the driver's handle on every model server of a sweep.

The driver starts the pool before the first episode and stops it after the last (or when it
exits: the pool is a context manager, and Ray kills the actors of a dead driver, which takes
their server processes with them). For each episode of a served model the driver asks for a
``Lease``: the least-loaded ready replica with room, its URL (the agent's ``api_base``) and its
node (where the episode must run). When an episode ends in an infrastructure error, ``lost``
says whether its replica died or restarted meanwhile, in which case the episode is retried.
A replica whose actor is dead (its node lost) is placed again on an alive node that can hold it,
with the next generation, and started without holding up the driver (``_replace``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from env.files import atomic_write
from orchestrator.serving.actor import ModelServer, ServerStartError
from orchestrator.serving.placement import NodeCapacity, ReplicaBalancer, place_replica, plan_models
from orchestrator.serving.spec import ServeSpec, Weights
from orchestrator.sweep import DEFAULT_CONDITION, Condition, ModelEntry, Sweep, resolve_serve

STATUS_TIMEOUT_S = 30.0
RECHECK_S = 1.0


@dataclass(frozen=True)
class Lease:
    """One episode's claim on one replica."""

    model_name: str
    replica: int
    url: str  # api_base for litellm
    node_id: str
    generation: int

    def scheduling_strategy(self) -> NodeAffinitySchedulingStrategy:
        """Pins the episode to the server's node (hard: the server may listen on loopback)."""
        return NodeAffinitySchedulingStrategy(node_id=self.node_id, soft=False)


def cluster_nodes() -> list[NodeCapacity]:
    return [
        NodeCapacity(node_id=n["NodeID"], gpus=int(n["Resources"].get("GPU", 0)), cpus=n["Resources"].get("CPU", 0.0))
        for n in ray.nodes() if n.get("Alive")
    ]


def _alone(model: ModelEntry) -> ServeSpec:
    """A served entry's spec resolved for its own protocol fields and mazes (or the design example)."""
    from agents.protocol import resolve_protocol
    from env.sets import resolve_maze

    mazes = list(model.mazes) if model.mazes else [resolve_maze("example")]
    return resolve_serve(model, [Condition(DEFAULT_CONDITION, resolve_protocol({}), None)], mazes)


class ServerPool:
    def __init__(self, run_dir: str | Path, models: Iterable[ModelEntry], *,
                 specs: dict[str, ServeSpec] | None = None):
        """``models``: a sweep's model entries; those with ``serve`` get servers. ``specs``: their
        serve specs resolved for the sweep (``Sweep.serve_spec``); a model without one is
        resolved for its own protocol and mazes alone."""
        self.run_dir = Path(run_dir).resolve()
        specs = specs or {}
        self.models = {m.name: m for m in models if m.serve is not None}
        self.specs = {name: specs.get(name) or _alone(m) for name, m in self.models.items()}
        self.actors: dict[str, list[Any]] = {}  # ModelServer actor handles (Any: see orchestrator/driver.py)
        self.info: dict[str, list[dict[str, Any]]] = {}
        self.nodes: dict[str, list[str]] = {}
        self.balancers: dict[str, ReplicaBalancer] = {}
        self.healthy: dict[str, list[bool]] = {}
        self.checked: dict[tuple[str, int], float] = {}
        self._offset = 0
        # replicas whose node was lost: the start of each one's new server, on another node
        self.replacing: dict[tuple[str, int], Any] = {}
        self.lost_nodes: set[str] = set()
        self.moves: list[dict[str, Any]] = []  # every re-placement, for the run's summary
        self.on_event: Callable[[str], object] | None = None  # one line for each re-placement

    @classmethod
    def for_sweep(cls, run_dir: str | Path, sweep: Sweep) -> ServerPool:
        """The pool of a sweep's served models, each spec resolved for the largest request the
        model runs (its own protocol fields over every condition); starts nothing."""
        return cls(run_dir, sweep.models, specs={m.name: sweep.serve_spec(m) for m in sweep.models
                                                 if m.serve is not None})

    def __bool__(self) -> bool:
        return bool(self.models)

    def __enter__(self) -> ServerPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- life --------------------------------------------------------------------------
    def start(self, on_ready: Callable[[str, int, dict[str, Any]], object] | None = None) -> None:
        """Start every replica of every served model, all at once, and wait until all answer.

        If any replica fails to start, every server is stopped and its ``ServerStartError``
        (ending with the log tail) is raised.
        """
        if not self.models:
            return
        nodes = cluster_nodes()
        # every placement first: a model the cluster cannot hold stops the run before any server starts
        self.nodes = plan_models(self.specs, nodes)
        pending = {}
        for m in self.models.values():
            spec = self.specs[m.name]
            placed = self.nodes[m.name]
            self.actors[m.name] = []
            for replica, node_id in enumerate(placed):
                actor = self._new_actor(m.name, replica, node_id)
                self.actors[m.name].append(actor)
                pending[actor.start.remote()] = (m.name, replica)
            assert m.max_concurrency is not None  # a served model is called: ModelEntry gives it one
            per = spec.per_replica_concurrency(m.max_concurrency)
            self.balancers[m.name] = ReplicaBalancer(spec.replicas, per)
            self.healthy[m.name] = [False] * spec.replicas
            self.info[m.name] = [{} for _ in placed]
        refs = list(pending)
        try:
            while refs:
                done, refs = ray.wait(refs, num_returns=1)
                name, replica = pending[done[0]]
                status = ray.get(done[0])
                self.info[name][replica] = status
                self.healthy[name][replica] = True
                if on_ready is not None:
                    on_ready(name, replica, status)
        except ray.exceptions.RayTaskError as err:
            self.stop()
            cause = getattr(err, "cause", None)
            # the server's own log tail says what went wrong; Ray's wrapping traceback does not
            raise ServerStartError(str(cause) if isinstance(cause, ServerStartError) else str(err)) from None
        except BaseException:
            self.stop()
            raise

    def _new_actor(self, name: str, replica: int, node_id: str, generation: int = 0) -> Any:
        """A ``ModelServer`` actor pinned to ``node_id``; its server starts on ``start``."""
        spec = self.specs[name]
        # no CPU request: the actor only supervises, and the server's threads are outside
        # Ray's accounting anyway; holding a CPU here could starve the episodes' actors
        resources = {"num_cpus": 0}
        if spec.engine == "vllm":
            resources["num_gpus"] = spec.tensor_parallel_size
        self._offset += 1  # each server its own first port to try: two on one host never race for one
        return ModelServer.options(
            name=None, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
            **resources,
        ).remote(
            name=name, replica=replica, model=self.models[name].model, spec=spec,
            log_path=str(self.log_path(name, replica)), port_offset=self._offset - 1, generation=generation,
        )

    def _replace(self, name: str, replica: int, why: str) -> None:
        """The replica's actor is dead (its node was lost): start its server on an alive node
        that can hold it, with the next generation, without waiting for it (``_recheck`` sees it
        become ready); failed when no node can."""
        old = self.info[name][replica]
        lost_node = self.nodes[name][replica]
        self.lost_nodes.add(lost_node)
        try:
            ray.kill(self.actors[name][replica], no_restart=True)  # unreachable is not always dead
        except Exception:  # noqa: BLE001 - a dead actor needs no killing
            pass
        hosted: dict[str, int] = {}
        gpus_held: dict[str, int] = {}
        for other, placed in self.nodes.items():
            for r, nid in enumerate(placed):
                if (other, r) != (name, replica) and self.info[other][r].get("state") not in ("failed", "stopped"):
                    hosted[nid] = hosted.get(nid, 0) + 1
                    if self.specs[other].engine == "vllm":
                        gpus_held[nid] = gpus_held.get(nid, 0) + self.specs[other].tensor_parallel_size
        alive = [n for n in cluster_nodes() if n.node_id not in self.lost_nodes]
        node_id = place_replica(self.specs[name], alive, hosted, gpus_held)
        generation = int(old.get("generation", 0)) + 1
        label = f"{name}-{replica}"
        if node_id is None:
            self.info[name][replica] = {**old, "state": "failed", "last_error": (
                f"{label}: its node was lost ({why}) and no alive node can hold it")}
            self.healthy[name][replica] = False
            self._say(f"server {label} failed: its node {lost_node} was lost and no alive node can hold it")
            return
        actor = self._new_actor(name, replica, node_id, generation)
        self.actors[name][replica] = actor
        self.nodes[name][replica] = node_id
        self.info[name][replica] = {**old, "state": "starting", "generation": generation, "node_id": node_id}
        self.healthy[name][replica] = False
        self.replacing[(name, replica)] = actor.start.remote()
        self.moves.append({"server": label, "from": lost_node, "to": node_id, "generation": generation})
        self._say(f"server {label} re-placed on node {node_id} after its node {lost_node} was lost")

    def _say(self, line: str) -> None:
        if self.on_event is not None:
            self.on_event(line)

    def stop(self) -> None:
        """Kill every server's process group; copy logs written on other nodes to the run."""
        here = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
        for name, actors in self.actors.items():
            for replica, actor in enumerate(actors):
                try:
                    ray.get(actor.stop.remote(), timeout=60)
                    if self.nodes[name][replica] != here:
                        text = ray.get(actor.log_text.remote(), timeout=60)
                        atomic_write(self.log_path(name, replica), text)
                except Exception:  # noqa: BLE001 - an actor that is gone already took its server with it
                    pass
                ray.kill(actor, no_restart=True)
        self.actors.clear()

    def weights(self) -> dict[str, Weights]:
        """What each started model's servers serve, as its first replica reported it."""
        out = {}
        for name, infos in self.info.items():
            reported = next((i["weights"] for i in infos if i.get("weights")), None)
            if reported:
                out[name] = Weights(**reported)
        return out

    def log_path(self, name: str, replica: int) -> Path:
        return self.run_dir / "servers" / f"{name}-{replica}.log"

    # ---- episodes ----------------------------------------------------------------------
    def serves(self, model_name: str) -> bool:
        return model_name in self.models

    def capacity(self, model_name: str) -> int:
        return self.balancers[model_name].capacity

    def acquire(self, model_name: str) -> Lease | None:
        """The least-loaded healthy replica with room, or None when all are full or restarting.

        Raises ``ServerStartError`` when every replica of the model has failed for good.
        """
        self._recheck(model_name)
        replica = self.balancers[model_name].acquire(self.healthy[model_name])
        if replica is None:
            return None
        info = self.info[model_name][replica]
        return Lease(model_name, replica, info["url"], self.nodes[model_name][replica], info["generation"])

    def _recheck(self, model_name: str) -> None:
        """Ask replicas marked unhealthy how they are, at most once a second each; a re-placed
        replica is ready when its start returns (never waited for)."""
        now = time.monotonic()
        states = []
        for replica, ok in enumerate(self.healthy[model_name]):
            key = (model_name, replica)
            if key in self.replacing:
                self._started(model_name, replica)
            elif not ok and now - self.checked.get(key, 0.0) >= RECHECK_S:
                self.checked[key] = now
                try:
                    self.status(model_name, replica)
                except Exception:  # noqa: BLE001 - an actor that cannot answer is a failed replica
                    self.info[model_name][replica] = {**self.info[model_name][replica], "state": "failed"}
            states.append(self.info[model_name][replica].get("state"))
        if states and all(st in ("failed", "stopped") for st in states):
            errors = [self.info[model_name][r].get("last_error") or "" for r in range(len(states))]
            raise ServerStartError(next((e for e in errors if e), f"every replica of {model_name} failed"))

    def _started(self, name: str, replica: int) -> None:
        """A re-placed replica's start, if it returned: ready, failed, or lost with its node too."""
        ref = self.replacing[(name, replica)]
        done, _ = ray.wait([ref], timeout=0)
        if not done:
            return
        del self.replacing[(name, replica)]
        try:
            status = ray.get(ref)
        except ray.exceptions.RayActorError as err:
            self._replace(name, replica, type(err).__name__)
            return
        except Exception as err:  # noqa: BLE001 - a server that did not start: failed, as at the run's start
            cause = getattr(err, "cause", None)
            message = str(cause) if isinstance(cause, ServerStartError) else str(err)
            self.info[name][replica] = {**self.info[name][replica], "state": "failed", "last_error": message}
            return
        self.info[name][replica] = status
        self.healthy[name][replica] = status["state"] == "ready"

    def suspect(self, lease: Lease) -> None:
        """An episode of ``lease`` lost its actor: ask its replica how it is before the next lease
        (a replica whose node went with the episode is re-placed then)."""
        if (lease.model_name, lease.replica) not in self.replacing:
            self.healthy[lease.model_name][lease.replica] = False
            self.checked.pop((lease.model_name, lease.replica), None)

    def release(self, lease: Lease) -> None:
        self.balancers[lease.model_name].release(lease.replica)

    def status(self, model_name: str, replica: int) -> dict[str, Any]:
        """The replica's state; a replica whose actor is dead (its node lost) is re-placed, and
        its state is then ``starting`` with the next generation."""
        try:
            status = ray.get(self.actors[model_name][replica].status.remote(), timeout=STATUS_TIMEOUT_S)
        except ray.exceptions.RayActorError as err:  # ActorDiedError, ActorUnavailableError: gone with its node
            if (model_name, replica) not in self.replacing:
                self._replace(model_name, replica, type(err).__name__)
            return self.info[model_name][replica]
        self.info[model_name][replica] = status
        self.healthy[model_name][replica] = status["state"] == "ready"
        return status

    def lost(self, lease: Lease) -> bool:
        """Did the lease's server die or restart since the lease was taken?"""
        status = self.status(lease.model_name, lease.replica)
        return status["generation"] != lease.generation or status["state"] != "ready"

    def wait_ready(self, model_name: str, replica: int, timeout_s: float | None = None) -> dict[str, Any]:
        """Block while a replica restarts; raise ``ServerStartError`` if it failed for good."""
        spec = self.specs[model_name]
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else spec.startup_timeout_s + 30)
        while True:
            status = self.status(model_name, replica)
            if status["state"] == "ready":
                return status
            if status["state"] in ("failed", "stopped"):
                raise ServerStartError(status["last_error"] or f"{model_name}-{replica} is {status['state']}")
            if time.monotonic() > deadline:
                raise ServerStartError(f"{model_name}-{replica} still {status['state']} after waiting")
            time.sleep(0.5)
