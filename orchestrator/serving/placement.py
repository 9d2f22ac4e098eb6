"""Where replicas go and which replica an episode talks to. Pure bookkeeping, no Ray.

A vLLM replica needs ``tensor_parallel_size`` GPUs of ONE node: tensor parallelism across nodes
would put every layer's all-reduce on the network, so a node that cannot hold a whole replica
gets none. Episodes of a served model are then spread over the replicas, least-loaded first,
never more than ``per_replica`` in flight on one replica.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from env.errors import BadInput
from orchestrator.serving.spec import ServeSpec


@dataclass(frozen=True)
class NodeCapacity:
    node_id: str
    gpus: int
    cpus: float


def plan_replicas(spec: ServeSpec, nodes: list[NodeCapacity], source: str = "serve") -> list[str]:
    """The node of each replica, in replica order.

    vLLM replicas fill the node with the most free GPUs first (so replicas spread over nodes
    when they can and pack when they must); llama.cpp replicas go round-robin over the nodes
    with the most CPUs. A spec the cluster cannot hold is a ``BadInput`` saying what is missing.
    """
    if not nodes:
        raise BadInput(source, "serve", "no alive Ray node to place a model server on")
    if spec.engine == "vllm":
        tp = spec.tensor_parallel_size
        free = {n.node_id: n.gpus for n in nodes}
        order = [n.node_id for n in nodes]
        placed: list[str] = []
        for _ in range(spec.replicas):
            # ties keep the node order given, so the plan is deterministic
            best = max(order, key=lambda nid: (free[nid], -order.index(nid)))
            if free[best] < tp:
                whole = sum(n.gpus // tp for n in nodes)
                raise BadInput(
                    source, "serve.replicas",
                    f"{spec.replicas} replicas of tensor_parallel_size {tp} need {tp} GPUs on one node "
                    f"each; the cluster holds {whole} such replica(s) "
                    f"(GPUs per node: {', '.join(str(n.gpus) for n in nodes)})",
                )
            free[best] -= tp
            placed.append(best)
        return placed
    by_cpu = sorted(nodes, key=lambda n: -n.cpus)
    return [by_cpu[i % len(by_cpu)].node_id for i in range(spec.replicas)]


def plan_models(specs: dict[str, ServeSpec], nodes: list[NodeCapacity]) -> dict[str, list[str]]:
    """Every served model's replica nodes; each model plans on the GPUs the ones before it left."""
    plans = {}
    for name, spec in specs.items():
        plans[name] = placed = plan_replicas(spec, nodes, source=f"models.{name}")
        if spec.engine == "vllm":
            used = {nid: placed.count(nid) * spec.tensor_parallel_size for nid in placed}
            nodes = [replace(n, gpus=n.gpus - used.get(n.node_id, 0)) for n in nodes]
    return plans


def place_replica(spec: ServeSpec, nodes: list[NodeCapacity], hosted: dict[str, int],
                  gpus_held: dict[str, int] | None = None) -> str | None:
    """The node for one replica placed again (its node was lost), or None when no node can hold it.

    ``nodes``: the alive nodes, less any known lost; ``hosted``: the replicas each node already
    serves, ``gpus_held`` the GPUs the vLLM ones hold. A vLLM replica needs ``tensor_parallel_size`` free GPUs
    of one node, a llama.cpp replica a node with CPUs; of those, the least loaded, then the
    largest, then the first given.
    """
    if spec.engine == "vllm":
        tp = spec.tensor_parallel_size
        held = gpus_held or {}
        fits = [n for n in nodes if n.gpus - held.get(n.node_id, 0) >= tp]
        size = {n.node_id: float(n.gpus - held.get(n.node_id, 0)) for n in fits}
    else:
        fits = [n for n in nodes if n.cpus >= 1]
        size = {n.node_id: n.cpus for n in fits}
    if not fits:
        return None
    order = [n.node_id for n in fits]
    return min(order, key=lambda nid: (hosted.get(nid, 0), -size[nid], order.index(nid)))


@dataclass
class ReplicaBalancer:
    """In-flight episodes per replica; ``acquire`` picks the least-loaded one with room."""

    replicas: int
    per_replica: int
    in_flight: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.replicas < 1 or self.per_replica < 1:
            raise ValueError("a balancer needs at least one replica and one slot per replica")
        if not self.in_flight:
            self.in_flight = [0] * self.replicas

    def acquire(self, healthy: list[bool] | None = None) -> int | None:
        """A replica index, or None when every (healthy) replica is full."""
        candidates = [
            i for i in range(self.replicas)
            if self.in_flight[i] < self.per_replica and (healthy is None or healthy[i])
        ]
        if not candidates:
            return None
        best = min(candidates, key=lambda i: (self.in_flight[i], i))
        self.in_flight[best] += 1
        return best

    def release(self, replica: int) -> None:
        if self.in_flight[replica] <= 0:
            raise ValueError(f"replica {replica} has no episode in flight to release")
        self.in_flight[replica] -= 1

    @property
    def capacity(self) -> int:
        return self.replicas * self.per_replica
