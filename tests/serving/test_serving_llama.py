"""The bundled model (SmolLM2-135M-Instruct) served by llama.cpp through the ModelServer actor, for real.

Each test starts a real llama-cpp-python server on 127.0.0.1 through a Ray actor, and the
episodes run in Ray tasks pinned to the server's node, talking to it through litellm.
"""

import asyncio
import os
import signal
import time

import pytest

from agents import ModelConfig, build_agent, resolve_protocol
from env import resolve_maze
from episodes.episode import run_episode
from orchestrator.serving.actor import ServerStartError
from orchestrator.serving.bundled import BUNDLED_MODEL, BUNDLED_SHA256, bundled_model_path, sha256_file
from orchestrator.serving.server_pool import ServerPool
from orchestrator.serving.spec import parse_serve
from orchestrator.sweep import ModelEntry
from traces import EpisodeIdentity

pytestmark = pytest.mark.slow

# two short turns, text only, no thinking: what a 135M model on two cores can do quickly
PROTOCOL = dict(observation="text", thinking=False, max_output_tokens=16, temperature=0.0,
                step_cap_factor=0.1, history_frames=0, icl_example=False)


def smollm2(**serve) -> ModelEntry:
    spec = parse_serve({"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct", "n_ctx": 4096, "startup_timeout_s": 300, **serve})
    return ModelEntry(config=ModelConfig.for_model(BUNDLED_MODEL, name="smollm2"), serve=spec, max_concurrency=1)


def play(ray, lease, *, kill_pid=None, retries=None, attempts=1):
    """One episode of the example maze in a Ray task on the server's node.

    ``kill_pid``: the server's process group is killed right after the first step.
    """

    @ray.remote(num_cpus=0.25)
    def episode(url):
        protocol = resolve_protocol(PROTOCOL)
        params = {} if retries is None else {"retries": retries}
        agent = build_agent(ModelConfig.for_model(BUNDLED_MODEL, name="smollm2", params=params), protocol,
                            endpoint=url)

        def on_step(record):
            if kill_pid is not None and record.step == 1:
                os.killpg(kill_pid, signal.SIGKILL)

        identity = EpisodeIdentity(run="t", episode_id="e1", model_name="smollm2", model=BUNDLED_MODEL,
                                   condition="default", repeat=0, maze_id="example")
        result = asyncio.run(run_episode(resolve_maze("example"), agent, protocol, identity, on_step=on_step,
                                         attempts=attempts))
        return result.episode.row(), [s.row() for s in result.steps]

    return ray.get(episode.options(scheduling_strategy=lease.scheduling_strategy()).remote(lease.url))


def test_bundled_model_is_found_and_verified():
    path = bundled_model_path()
    assert path.name.endswith(".gguf")
    assert sha256_file(path) == BUNDLED_SHA256


def test_episode_through_the_served_model_records_tokens_latency_and_replies(ray_local, tmp_path):
    pool = ServerPool(tmp_path, [smollm2()])
    with pool:
        status = pool.info["smollm2"][0]
        assert status["state"] == "ready" and status["url"].startswith("http://127.0.0.1:")
        lease = pool.acquire("smollm2")
        assert lease is not None and pool.acquire("smollm2") is None  # max_concurrency 1
        episode, steps = play(ray_local, lease)
        pool.release(lease)
        pid = status["pid"]
        log = pool.log_path("smollm2", 0)
    assert episode["termination"] != "error", episode["error_message"]
    assert len(steps) == episode["steps"] >= 1
    for row in steps:
        # the whole prompt reached the model (instructions and map: hundreds of tokens), not an
        # empty turn left by a chat format that drops content lists
        assert row["tokens_in"] > 150 and row["tokens_out"] > 0
        assert row["latency_s"] > 0
        assert row["reply"]
    assert episode["tokens_in"] == sum(r["tokens_in"] for r in steps)
    assert log.exists() and "orchestrator.serving.llama_server" in log.read_text()
    # stopping killed the server's whole process group
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_killed_server_is_restarted_and_its_episode_retried(ray_local, tmp_path):
    pool = ServerPool(tmp_path, [smollm2(max_restarts=1)])
    with pool:
        first = pool.acquire("smollm2")
        old_pid = pool.status("smollm2", 0)["pid"]
        # no agent retries: the request in flight when the server dies fails the episode at once
        episode, _ = play(ray_local, first, kill_pid=old_pid, retries=0)
        assert episode["termination"] == "error"
        assert pool.lost(first)  # the driver's cue to retry the episode
        pool.release(first)
        status = pool.wait_ready("smollm2", 0)
        assert status["restarts"] == 1 and status["generation"] == 1 and status["pid"] != old_pid
        second = pool.acquire("smollm2")
        assert second.generation == 1 and second.url == first.url
        episode, steps = play(ray_local, second, attempts=2)
        pool.release(second)
        assert not pool.lost(second)
        # a second death spends max_restarts: the model's remaining episodes cannot get a server
        os.killpg(status["pid"], signal.SIGKILL)
        for _ in range(100):
            if pool.status("smollm2", 0)["state"] == "failed":
                break
            time.sleep(0.1)
        with pytest.raises(ServerStartError, match="max_restarts"):
            pool.acquire("smollm2")
        log = pool.log_path("smollm2", 0).read_text()
    assert episode["termination"] != "error", episode["error_message"]
    assert episode["attempts"] == 2 and steps
    assert "restart 1/1" in log


def test_server_that_exits_at_start_fails_with_its_log_tail(ray_local, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"this is not a GGUF file\n" * 64)
    pool = ServerPool(tmp_path, [smollm2(model=str(broken))])
    with pytest.raises(ServerStartError) as err:
        pool.start()
    message = str(err.value)
    assert "exited with code" in message and "smollm2-0" in message
    assert "log tail" in message
    # the tail is the server's own words, not ours
    tail = message.split("log tail:", 1)[1]
    assert "broken.gguf" in tail
    assert not pool.actors  # everything that started was stopped
