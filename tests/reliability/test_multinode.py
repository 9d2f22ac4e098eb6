"""A multi-node cluster simulated on this machine (``ray.cluster_utils.Cluster``: a head and
three worker nodes, each its own raylet, with the ``env_slot`` resource real clusters declare).

- Episodes of a served model (the bundled llama.cpp model, served through the ``ServerPool``)
  run on the node that hosts its server: read from Ray's actor table, not assumed.
- A whole node removed mid-sweep: its episodes are rescheduled on the remaining nodes and each
  finishes exactly once.
- The node of a served model's server removed mid-episode: the server starts again on another
  node and the episodes continue there from their journaled steps.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import pandas as pd
import pytest
from sweep_runs import FAKE_KEY, FAST_PROTOCOL, KEY_ENV, MAZES, actor_node, actor_pid, copy_mazes, sweep_file

from orchestrator.actors import ENV_SLOT
from orchestrator.driver import Driver
from orchestrator.serving.bundled import BUNDLED_MODEL, BUNDLED_SPEC
from orchestrator.serving.server_pool import ServerPool
from orchestrator.sweep import load_sweep
from testing.scripted_server import ScriptedServer

pytestmark = pytest.mark.slow
STORE = 80 * 1024**2


@pytest.fixture(scope="module")
def cluster(request):
    import ray
    from ray.cluster_utils import Cluster

    os.environ[KEY_ENV] = FAKE_KEY
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():
        ray.shutdown()
    # the head hosts the driver only: no CPU and no env slot, so every episode runs on a worker node
    # a node killed outright is noticed by missed health checks: check every second, not every three
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "object_store_memory": STORE, "include_dashboard": False,
        "_system_config": {"health_check_period_ms": 1000, "health_check_failure_threshold": 10}})
    nodes = {
        "serverhost": c.add_node(num_cpus=3, resources={ENV_SLOT: 32, "serverhost": 1}, object_store_memory=STORE),
        "a": c.add_node(num_cpus=2, resources={ENV_SLOT: 32, "a": 1}, object_store_memory=STORE),
        "b": c.add_node(num_cpus=2, resources={ENV_SLOT: 32, "b": 1}, object_store_memory=STORE),
    }
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False, logging_level="ERROR")
    yield c, nodes
    ray.shutdown()
    c.shutdown()


def live_node(actor) -> str | None:
    """The node an actor runs on, once it runs (a new actor has no node yet); None when it died
    first (placed on a node that was gone before Ray noticed)."""
    return actor_node(actor) if actor_pid(actor) is not None else None


def node_ids(c) -> dict:
    return {n.node_id: n for n in c.list_all_nodes()}


def test_served_model_episodes_run_on_the_server_node(cluster, tmp_path):
    c, nodes = cluster
    path = sweep_file(tmp_path / "served.yaml", mazes=str(copy_mazes(tmp_path / "mazes", ["scale-8"])), repeats=3,
                      protocol={**FAST_PROTOCOL, "max_output_tokens": 16, "temperature": 0.0, "step_cap_factor": 0.15},
                      models=[{"name": "smollm2", "model": BUNDLED_MODEL, "max_concurrency": 3,
                               "serve": {"engine": "llama_cpp", "model": BUNDLED_SPEC, "n_ctx": 4096, "startup_timeout_s": 300}}])
    sweep = load_sweep(path)
    placed: list[tuple[str, str]] = []
    pool = ServerPool(tmp_path / "run", sweep.models)
    with pool:
        server_node = pool.nodes["smollm2"][0]
        actor = pool.actors["smollm2"][0]
        assert actor_node(actor) == server_node  # the server actor really is where the plan put it
        outcome = Driver(sweep, tmp_path / "run", pool=pool,
                         on_dispatch=lambda spec, a, n: placed.append((spec.episode_id, live_node(a)))).execute()
    # the node with the most CPUs hosts the llama.cpp replica; two other nodes had room for episodes
    assert server_node == nodes["serverhost"].node_id
    assert len(placed) == 3 and {n for _, n in placed} == {server_node}
    episodes = pd.read_parquet(tmp_path / "run" / "episodes")
    assert outcome.errors == 0 and len(episodes) == 3 and (episodes["steps"] > 0).all()


def test_a_lost_node_costs_no_episode(cluster, tmp_path):
    c, nodes = cluster
    with ScriptedServer(mode="oracle", mazes=str(MAZES), latency=0.1) as srv:
        sweep = load_sweep(sweep_file(tmp_path / "nodes.yaml", protocol=FAST_PROTOCOL, repeats=2, models=[{
            "name": "scripted", "model": "openai/scripted", "api_base": srv.url, "api_key_env": KEY_ENV,
            "price": {"input": 0.0, "output": 0.0}, "max_concurrency": 6}]))
        lost: dict = {}
        placed: list[tuple[str, str, int]] = []

        def remove_node_later(node_id: str) -> None:
            time.sleep(1.0)
            lost["node"] = node_id
            c.remove_node(node_ids(c)[node_id], allow_graceful=False)

        def on_dispatch(spec, actor, attempts):
            node = live_node(actor) if attempts > 1 else None
            placed.append((spec.episode_id, node, attempts))
            if len(placed) == 4 and not lost:
                # the first model actor holds four episodes in flight: take its whole node away
                threading.Thread(target=remove_node_later, args=(live_node(actor),), daemon=True).start()

        outcome = Driver(sweep, tmp_path / "run", on_dispatch=on_dispatch).execute()
        answered = sum(r.answered for r in srv.chat_requests)
    episodes = pd.read_parquet(tmp_path / "run" / "episodes")
    steps = pd.read_parquet(tmp_path / "run" / "steps")
    # an answer that reached the lost node before its step was journaled died with it and is asked
    # again: at most one call per attempt lost (a replacement actor Ray placed on the node before it
    # declared it dead is lost too), every other call answered exactly once
    paid_twice = answered - int(steps["calls"].sum())
    lost_attempts = int((episodes["attempts"] - 1).sum())
    print(f"node lost: {lost_attempts} episode attempts lost with it, calls paid twice: {paid_twice}")
    assert 0 <= paid_twice <= lost_attempts
    assert lost["node"] not in {n.node_id for n in c.list_all_nodes()}
    assert set(episodes["episode_id"]) == {s.episode_id for s in sweep.episodes()} and episodes["episode_id"].is_unique
    assert outcome.errors == 0 and episodes["solved"].all()
    assert not steps.duplicated(["episode_id", "step"]).any() and int(episodes["steps"].sum()) == len(steps)
    # each rescheduled episode finished where it was last sent: a node that is still there
    last: dict[str, tuple[str | None, int]] = {}
    for eid, node, attempts in placed:
        last[eid] = (node, attempts)
    retried = {eid: node for eid, (node, attempts) in last.items() if attempts > 1}
    assert retried and set(episodes.loc[episodes["attempts"] > 1, "episode_id"]) == set(retried)
    alive = {n.node_id for n in c.list_all_nodes()}
    assert all(node in alive and node != lost["node"] for node in retried.values()), retried


def test_a_lost_server_node_is_replaced_and_its_episodes_continue(cluster, tmp_path):
    """The node hosting a served model's server goes mid-episode: the pool starts the server again
    on an alive node, the episodes continue there from their journaled steps, the run ends complete."""
    import ray

    from traces import Journals

    c, _ = cluster
    # a node of its own, the largest, so the placement puts the server there whatever the tests
    # before this one removed
    host = c.add_node(num_cpus=4, resources={ENV_SLOT: 32}, object_store_memory=STORE)
    c.wait_for_nodes()
    path = sweep_file(tmp_path / "served.yaml", mazes=str(copy_mazes(tmp_path / "mazes", ["scale-8"])), repeats=2,
                      protocol={**FAST_PROTOCOL, "max_output_tokens": 16, "temperature": 0.0, "step_cap_factor": 0.15},
                      models=[{"name": "smollm2", "model": BUNDLED_MODEL, "max_concurrency": 2,
                               "serve": {"engine": "llama_cpp", "model": BUNDLED_SPEC, "n_ctx": 4096,
                                         "startup_timeout_s": 300}}])
    sweep = load_sweep(path)
    run = tmp_path / "run"
    lost: dict = {}
    said: list[str] = []

    def lose_the_server_node(episode_id: str, episode_actor) -> None:
        journals = Journals.of_run(run)
        deadline = time.monotonic() + 60
        while not journals.read(episode_id).rows and time.monotonic() < deadline:
            time.sleep(0.05)  # mid-episode: a step journaled, the next call on its way
        pids = [actor_pid(episode_actor), actor_pid(pool.actors["smollm2"][0])]
        server_pid = pool.info["smollm2"][0]["pid"]
        lost["node"] = host.node_id
        c.remove_node(host, allow_graceful=False)
        # a machine that goes takes its processes with it: remove_node kills only Ray's daemons
        for pid in pids:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server_pid, signal.SIGKILL)

    def on_dispatch(spec, actor, attempts):
        if not lost and attempts == 1:
            lost["pending"] = True
            threading.Thread(target=lose_the_server_node, args=(spec.episode_id, actor), daemon=True).start()

    t0 = time.monotonic()
    pool = ServerPool(run, sweep.models)
    pool.on_event = said.append
    with pool:
        assert pool.nodes["smollm2"][0] == host.node_id
        outcome = Driver(sweep, run, pool=pool, on_dispatch=on_dispatch).execute()
        moved_to = pool.nodes["smollm2"][0]
        generation = pool.info["smollm2"][0]["generation"]
    took = time.monotonic() - t0
    episodes = pd.read_parquet(run / "episodes")
    steps = pd.read_parquet(run / "steps")
    log = pool.log_path("smollm2", 0).read_text()
    # every chat completion the servers answered, less their own one-token readiness checks
    answered = log.count('"POST /v1/chat/completions HTTP/1.1" 200') - log.count("=== gridbench: smollm2-0 generation")
    paid_twice = answered - int(steps["calls"].sum())
    in_flight = int((episodes["attempts"] > 1).sum())
    print(f"server node lost: {said}; {in_flight} episodes continued elsewhere, calls paid twice: {paid_twice}, "
          f"run {took:.1f} s")
    assert lost["node"] not in {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert moved_to != lost["node"] and generation == 1 and pool.moves and len(said) == 1
    assert outcome.errors == 0 and episodes["episode_id"].is_unique
    assert set(episodes["episode_id"]) == {s.episode_id for s in sweep.episodes()}
    assert not steps.duplicated(["episode_id", "step"]).any() and int(episodes["steps"].sum()) == len(steps)
    for _, ep in steps.groupby("episode_id"):
        assert sorted(ep["step"]) == list(range(1, len(ep) + 1))
    assert in_flight >= 1 and (episodes.loc[episodes["attempts"] > 1, "resumed"] >= 1).any()
    assert 0 <= paid_twice <= in_flight
