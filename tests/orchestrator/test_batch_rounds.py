"""A batch arm's first round is full-size: the broker (``orchestrator.batching.Broker``, plain
asyncio here, no Ray) waits for the first request of every episode the driver starts at once
(``Scheduler.at_once``), not only of those that joined before the first one asked, so that a
provider that reserves the balance a batch may cost refuses the arm's largest batch in its first
round, not mid-run (the study's launch: its one-request smoke batches passed Moonshot's balance
check, its 50-request rounds did not). A round still goes ``round_wait_s`` after the last episode
joined when the others never come."""

from __future__ import annotations

import asyncio
import time

import pytest

from agents.model import ModelConfig
from agents.providers import Outcome, ProviderBatches
from orchestrator.batching import Broker
from orchestrator.sweep import parse_sweep
from testing.dispatch import queued, scheduler

BODY = {"model": "claude-opus-4-8", "max_tokens": 16, "messages": [{"role": "user", "content": "x"}]}


class Provider(ProviderBatches):
    """A provider whose batches end at once; it notes each batch's requests and when it came."""

    def __init__(self) -> None:
        self.batches: list[tuple[float, list[str]]] = []

    async def submit(self, requests: dict) -> str:
        self.batches.append((time.monotonic(), list(requests)))
        return f"batch-{len(self.batches)}"

    async def ended(self, batch_id: str) -> bool:
        return True

    async def outcomes(self, batch_id: str) -> dict[str, Outcome]:
        _, ids = self.batches[int(batch_id.split("-")[1]) - 1]
        return {i: Outcome("succeeded", body={}) for i in ids}

    async def cancel(self, batch_id: str) -> None:
        pass


def rounds(tmp_path, expected: int, joins: list[float | None], round_wait_s: float = 2.0,
           asks: int = 1) -> tuple[float, Provider]:
    """Episodes join a broker ``joins[k]`` seconds after the start (None: joins and leaves without
    asking) and each asks ``asks`` requests in turn; (when the run started, the provider)."""
    config = ModelConfig.for_model("anthropic/claude-opus-4-8", api_base="http://127.0.0.1:9", tier="batch",
                                   batch={"poll_s": 0.01, "round_wait_s": round_wait_s})
    provider = Provider()

    async def episode(broker: Broker, k: int, at: float | None) -> None:
        await asyncio.sleep(at or 0.0)
        await broker.join(f"ep{k}")
        for step in range(asks if at is not None else 0):
            outcome, _ = await broker.complete(f"ep{k}", f"ep{k}-{step}", BODY)
            assert outcome["kind"] == "succeeded"
        await broker.leave(f"ep{k}")

    async def go() -> float:
        broker = Broker(config, str(tmp_path / "batches" / "arm.jsonl"), provider, expected=expected)
        t0 = time.monotonic()
        await asyncio.gather(*(episode(broker, k, at) for k, at in enumerate(joins)))
        return t0

    return asyncio.run(go()), provider


def test_the_first_round_waits_for_every_episode_started_at_once(tmp_path):
    """Four episodes join 0.2 s apart, each asking at once: one round of four, closed as the fourth
    asked (well before ``round_wait_s``), and every later round of all four too."""
    t0, provider = rounds(tmp_path, expected=4, joins=[0.0, 0.2, 0.4, 0.6], asks=3)
    assert [len(ids) for _, ids in provider.batches] == [4, 4, 4]
    assert provider.batches[0][0] - t0 < 1.5  # the fourth asked at 0.6 s; round_wait_s is 2 s


def test_without_the_first_rounds_size_its_first_batch_held_one_request(tmp_path):
    """What the broker did before it knew the first round's size: the first episode's request went
    alone while the others were still starting (the batches fall into step after it)."""
    _, provider = rounds(tmp_path, expected=0, joins=[0.0, 0.2, 0.4, 0.6], asks=3)
    assert len(provider.batches[0][1]) == 1


@pytest.mark.parametrize("joins, first", [
    ([0.0, 0.1], [2]),  # two of the four expected ever come: the round goes round_wait_s after the last joined
    ([0.0, None, 0.1], [2]),  # one of three leaves without asking (its agent could not be built): no wait
])
def test_the_first_round_waits_no_longer_than_round_wait_s_for_episodes_that_never_ask(tmp_path, joins, first):
    expected = 4 if len(joins) == 2 else 3
    t0, provider = rounds(tmp_path, expected=expected, joins=joins, round_wait_s=0.5)
    assert [len(ids) for _, ids in provider.batches] == first
    waited = provider.batches[0][0] - t0
    if expected == 4:
        assert 0.55 <= waited < 1.5, waited  # the last joined at 0.1 s, and nothing came for 0.5 s
    else:
        assert waited < 0.45, waited  # closed when the second asked: the third left


def test_the_first_rounds_size_is_what_the_scheduler_starts_at_once(maze_dir):
    """``Scheduler.at_once``, which the driver gives each batch arm's broker, is the number of the
    arm's episodes its first dispatch starts: its episodes to run, at most its ``max_concurrency``."""
    def arm(name: str, timeout: int, **more) -> dict:  # three arms of one model (their params tell them apart)
        return {"name": name, "model": "anthropic/claude-opus-4-8", "api_base": "http://127.0.0.1:9",
                "tier": "batch", "params": {"timeout": timeout}, **more}

    specs = parse_sweep({"name": "t", "mazes": str(maze_dir), "repeats": 2, "models": [
        arm("claude", 10, max_concurrency=3), arm("all", 11, max_concurrency=50)]}, "t.yaml").episodes()
    sched, actors = scheduler(queued(specs, None))
    sizes = {name: sched.at_once(name) for name in ("claude", "all")}
    assert sizes == {"claude": 3, "all": 12}  # six mazes, two repeats each
    sched.dispatch()
    started = [spec.model.name for _, spec in actors.started]
    assert {name: started.count(name) for name in sizes} == sizes
    assert sched.at_once("all") == 0 and sched.at_once("claude") == 3  # none of it left waiting; 9 left
