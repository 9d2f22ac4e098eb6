"""Lockstep provider batches for ``tier: batch`` arms (docs/cluster.md, *Choosing a tier*).

One ``BatchBroker`` actor per batch arm gathers the next request of every live episode of that
arm into one provider batch per round: a round closes when every live episode has its request
ready, or when the provider's limit on one batch is reached, or ``batch.round_wait_s`` after its
first request came or an episode last joined (an episode busy elsewhere, or one held back by a
budget, waits for the next round). The first round is full-size: it waits for the first request
of every episode the driver starts at once (``expected``: the arm's episodes to run, at most its
``max_concurrency``), not only of those that joined before the first asked, so that a provider
that reserves the balance a batch may cost refuses the largest batch at once, not mid-run.
While a batch of the arm is in flight, a new request waits for it: its episodes' next requests
join the same round, so episodes that started apart fall into step after one round. The broker
submits the round, polls it every ``batch.poll_s`` and hands each result to its episode as if
it had come synchronously (``agents.llm`` parses, re-asks, retries and records it as any other
answer; a re-ask is a new request, in the next round).

Exactly once, across kills: the broker writes the batch's id, its requests' custom ids and their
episodes to the run's batch journal (``partial/batches/<arm>.jsonl``, fsynced) before any
episode hears its request was submitted. A custom id is the same every time an episode reaches
the same request (``agents.batch_requests.custom_id``: episode, step, call, attempt), so a rerun
after the driver was killed resumes each episode from its journal, and when the episode asks
again for a request the batch journal holds, the broker polls that batch instead of submitting
the request again. A request a batch leaves unprocessed (``expired``, ``canceled``) goes again
in the next round, journaled as a resubmission of the same request; an ``errored`` one goes back
to the agent as the synchronous error would, under its retry rules.

A batch that fails as a whole is never an answer of the model: one the provider refuses at
submission, or whose status or results cannot be read, fails each of its requests as the
synchronous call would have failed (``agents.providers.failed``: retried by the agent's retry
rules, a new request in a later round); one the provider fails whole (``"*"``) gives each request
that error; one that expires or is cancelled whole leaves its requests unprocessed, and they go
again. The arm's progress (``BatchBroker.progress``: ``again``, ``failed``, ``last_failure``)
counts both, and the ``run`` command's progress display prints a line for each.

The one window this does not close: a driver killed after the provider accepted a batch and
before its journal line was written (one request's round trip) leaves a batch no rerun knows of.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import ray

from agents.batch_requests import custom_id
from agents.model import ModelConfig
from agents.providers import Outcome, ProviderBatches, Tier, api_of, failed
from agents.secrets import scrub
from agents.transport import EndpointError

BATCH_JOURNAL_DIR = "batches"
UNPROCESSED = ("expired", "canceled")
# a request's line in a batch beyond its body: its custom_id, method and URL in the JSONL files
LINE_OVERHEAD = 128


class BatchJournal:
    """The batches of one arm: a line per submitted batch, ``{"batch": id, "requests": {wire id:
    [episode, request id]}}``, where the wire id is the request's id, or a resubmission's
    (``<id>-r<n>``). Appended and fsynced before a submission is acknowledged."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a kill: its batch was never acknowledged
                continue
        return out

    def append(self, entry: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())


@dataclass
class Waiting:
    """A request waiting for a round: its body, where its answer goes, and its resubmissions."""

    episode: str
    body: dict[str, Any]
    answer: asyncio.Future
    again: int = 0  # times it went unprocessed

    @cached_property
    def size(self) -> int:
        """Its bytes in a batch: the body as JSON and the line around it (its id, the method, the
        URL the providers' JSONL files name), counted once."""
        return len(json.dumps(self.body, separators=(",", ":"))) + LINE_OVERHEAD


def next_batch(waiting: dict[str, Waiting], tier: Tier) -> dict[str, Waiting]:
    """The requests of the next batch: the waiting ones in order, as many as the tier lets one
    batch hold (``Tier.max_requests``, and ``Tier.max_bytes`` of requests; a request larger than
    that alone still goes, and the provider says why it refuses it)."""
    limit, room = tier.max_requests, tier.max_bytes
    taken: dict[str, Waiting] = {}
    size = 0
    for request, w in waiting.items():
        if taken and ((limit is not None and len(taken) >= limit) or (room is not None and size + w.size > room)):
            break
        taken[request] = w
        size += w.size
    return taken


@dataclass
class Rounds:
    """What the progress line shows of a batch arm."""

    rounds: int = 0
    submitted: int = 0  # requests
    in_flight: dict[str, float] = field(default_factory=dict)  # batch id -> when submitted (monotonic)
    overhead_s: float = 0.0  # the broker's own time on rounds: gathering closed, submit, journal, hand back
    again: int = 0  # requests sent again: their batch expired or was cancelled before running them
    failed: int = 0  # batches that failed as a whole: refused, unreadable, or failed by the provider
    last_failure: str | None = None  # why the last of them failed, in one line

    def failure(self, why: str) -> None:
        self.failed += 1
        self.last_failure = scrub(why.strip().splitlines()[0] if why.strip() else "unknown")


class Broker:
    """The lockstep rounds of one batch arm (see the module's docstring): plain asyncio, which the
    driver runs as a Ray actor (``BatchBroker``). ``expected``: the episodes the driver starts at
    once, whose first requests the first round waits for."""

    def __init__(self, config: ModelConfig, journal_path: str, provider: ProviderBatches | None = None,
                 expected: int = 0):
        self.config = config
        self.expected = expected
        self.departed = 0  # episodes that left before the first round
        self.last_joined = 0.0  # when an episode last joined (monotonic)
        self.tier = config.tier_facts
        self.journal = BatchJournal(Path(journal_path))
        self.provider = provider or api_of(config.family).batches(config)
        self.live: set[str] = set()
        self.waiting: dict[str, Waiting] = {}  # request id -> its wait, not yet in a batch
        self.first_waiting: float | None = None
        self.known: dict[str, tuple[str, str]] = {}  # request id -> (batch id, wire id) of its latest submission
        self.awaiting_known = 0  # requests of live episodes waiting on a batch already submitted
        self.in_batches = 0  # requests of this broker's own batches still unanswered
        self.last_answered = 0.0  # when a batch's answers were last handed back (monotonic)
        self.results: dict[str, asyncio.Future] = {}  # batch id -> its outcomes, once read
        self.stats = Rounds()
        self._wake = asyncio.Event()
        self._loop: asyncio.Task | None = None
        for entry in self.journal.read():
            for wire, (_episode, request) in entry["requests"].items():
                self.known[request] = (entry["batch"], wire)

    # ---- the episodes' side -----------------------------------------------------------------
    async def join(self, episode: str) -> None:
        self.live.add(episode)
        self.last_joined = time.monotonic()
        self._wake.set()

    async def leave(self, episode: str) -> None:
        if episode in self.live and not self.stats.rounds:
            self.departed += 1
        self.live.discard(episode)
        self._wake.set()

    async def complete(self, episode: str, request: str, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The outcome of one request (``Outcome`` as a dict) and the batch that answered it."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop().create_task(self._rounds())
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        if request in self.known:  # submitted before (by this driver or one that was killed): never again
            self.awaiting_known += 1
            batch, wire = self.known[request]
            try:
                outcomes = await self._outcomes(batch)
                outcome = outcomes.get(wire) or outcomes.get("*") or Outcome("expired")
            except Exception as err:  # noqa: BLE001 - the batch cannot be read now: a retryable failure
                outcome = failed(err)
                if self.results.pop(batch, None) is not None:  # once a batch, however many wait on it
                    self.stats.failure(f"batch {batch}: reading it failed: {outcome.error_class}: {outcome.message}")
            finally:
                self.awaiting_known -= 1
                self._wake.set()
            if outcome.kind not in UNPROCESSED:
                return outcome.__dict__, batch
            self.stats.again += 1
            again = int(wire.rsplit("-r", 1)[1]) if wire != request else 0
            self.waiting[request] = Waiting(episode, body, answer, again + 1)
        else:
            self.waiting[request] = Waiting(episode, body, answer)
        if self.first_waiting is None:
            self.first_waiting = time.monotonic()
        self._wake.set()
        return await answer

    def progress(self) -> dict[str, Any]:
        now = time.monotonic()
        return {"rounds": self.stats.rounds, "submitted": self.stats.submitted,
                "in_flight": {b: now - t for b, t in self.stats.in_flight.items()},
                "overhead_s": self.stats.overhead_s, "live": len(self.live), "waiting": len(self.waiting),
                "again": self.stats.again, "failed": self.stats.failed, "last_failure": self.stats.last_failure}

    # ---- the rounds ---------------------------------------------------------------------------
    def _round_ready(self) -> bool:
        """Every live episode has its request ready (before the first round, every episode
        ``expected``); or the provider's limit on one batch is reached; or, with no batch of this
        arm in flight (its episodes would join the next round: lockstep), ``round_wait_s`` has
        passed since the round's first request, the last answers or the last episode to join."""
        if not self.waiting:
            return False
        if len(self._batch()) < len(self.waiting) or len(self.waiting) == self.tier.max_requests:
            return True  # a batch is as full as the provider lets it be
        first = 0 if self.stats.rounds else self.expected - self.departed
        if len(self.waiting) + self.awaiting_known >= max(len(self.live), first):
            return True
        if self.in_batches or self.awaiting_known:
            return False
        return time.monotonic() >= self._deadline()

    def _batch(self) -> dict[str, Waiting]:
        return next_batch(self.waiting, self.tier)

    def _deadline(self) -> float:
        assert self.first_waiting is not None
        return max(self.first_waiting, self.last_answered, self.last_joined) + self.config.batch_round_wait_s

    async def _rounds(self) -> None:
        while True:
            self._wake.clear()
            if self._round_ready():
                await self._submit_round()
                continue
            timeout = None  # woken by a request, an episode leaving, or a batch's answers
            if self.waiting and not (self.in_batches or self.awaiting_known):
                timeout = max(0.01, self._deadline() - time.monotonic())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass

    async def _submit_round(self) -> None:
        started = time.monotonic()
        taken = self._batch()
        for request in taken:
            del self.waiting[request]
        self.first_waiting = time.monotonic() if self.waiting else None
        wires = {(f"{request}-r{w.again}" if w.again else request): request for request, w in taken.items()}
        try:
            batch = await self.provider.submit({wire: taken[request].body for wire, request in wires.items()})
        except Exception as err:  # noqa: BLE001 - the provider refused the batch: each request hears why
            failure = failed(err).__dict__
            self.stats.failure(f"a batch of {len(taken)} requests was refused: {failure['error_class']}: "
                               f"{failure['message']}")
            for w in taken.values():
                if not w.answer.done():
                    w.answer.set_result((failure, ""))
            return
        # durable before any episode hears of it: a rerun polls this batch instead of sending again
        self.journal.append({"batch": batch, "requests": {wire: [taken[r].episode, r] for wire, r in wires.items()}})
        for wire, request in wires.items():
            self.known[request] = (batch, wire)
        self.stats.rounds += 1
        self.stats.submitted += len(wires)
        self.in_batches += len(wires)
        self.stats.overhead_s += time.monotonic() - started
        asyncio.get_running_loop().create_task(self._answer_round(batch, wires, taken))

    async def _answer_round(self, batch: str, wires: dict[str, str], taken: dict[str, Waiting]) -> None:
        try:
            outcomes = await self._outcomes(batch)
        except Exception as err:  # noqa: BLE001 - polling failed for good: the requests fail as a call would
            self.in_batches -= len(wires)
            self._wake.set()
            self.results.pop(batch, None)  # asked again, it is polled again
            failure = failed(err).__dict__
            self.stats.failure(f"batch {batch}: reading it failed: {failure['error_class']}: {failure['message']}")
            for w in taken.values():
                if not w.answer.done():
                    w.answer.set_result((failure, batch))
            return
        started = time.monotonic()
        self.in_batches -= len(wires)
        self.last_answered = started
        self._wake.set()
        whole = outcomes.get("*")
        if whole is not None and whole.kind not in UNPROCESSED:
            self.stats.failure(f"batch {batch} failed as a whole: {whole.error_class}: {whole.message}")
        for wire, request in wires.items():
            w = taken[request]
            outcome = outcomes.get(wire) or whole or Outcome("expired")
            if outcome.kind in UNPROCESSED:  # never processed: it goes again in the next round
                self.stats.again += 1
                self.waiting[request] = Waiting(w.episode, w.body, w.answer, w.again + 1)
                if self.first_waiting is None:
                    self.first_waiting = time.monotonic()
                self._wake.set()
            elif not w.answer.done():
                w.answer.set_result((outcome.__dict__, batch))
        # handed back: not kept (an episode asking again, after its actor died, polls the provider again)
        self.results.pop(batch, None)
        self.stats.overhead_s += time.monotonic() - started

    async def _outcomes(self, batch: str) -> dict[str, Outcome]:
        """A batch's outcomes, polled for once however many requests wait on it."""
        if batch not in self.results:
            self.results[batch] = asyncio.get_running_loop().create_task(self._poll(batch))
        return await self.results[batch]

    async def _poll(self, batch: str) -> dict[str, Outcome]:
        self.stats.in_flight[batch] = time.monotonic()
        try:
            while not await self.provider.ended(batch):
                await asyncio.sleep(self.config.batch_poll_s)
            return await self.provider.outcomes(batch)
        finally:
            self.stats.in_flight.pop(batch, None)


BatchBroker = ray.remote(max_restarts=0)(Broker)


class EpisodeGateway:
    """One episode's way into its arm's broker (``agents.batch_requests.BatchGateway``)."""

    def __init__(self, broker: Any, episode_id: str):
        self.broker, self.episode_id = broker, episode_id

    async def join(self) -> None:
        await self.broker.join.remote(self.episode_id)

    async def leave(self) -> None:
        await self.broker.leave.remote(self.episode_id)

    async def complete(self, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
        step, call, attempt = request["key"]
        outcome, batch = await self.broker.complete.remote(self.episode_id,
                                                           custom_id(self.episode_id, step, call, attempt),
                                                           request["body"])
        if outcome["kind"] != "succeeded":
            raise EndpointError(outcome["error_class"] or "BatchRequestFailed", outcome["message"],
                                retryable=outcome["retryable"])
        return outcome["body"], batch


def journal_path(journal_dir: Path, model: str) -> str:
    return str(journal_dir / BATCH_JOURNAL_DIR / f"{model}.jsonl")


def start_brokers(models: list[Any], journal_dir: Path, expected: dict[str, int] | None = None) -> dict[str, Any]:
    """A broker per batch arm of ``models`` (``orchestrator.sweep.ModelEntry``), on this node: its
    journal lives on the driver's disk. ``expected``: per arm, the episodes the driver starts at
    once (the size of its first round)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    out: dict[str, Any] = {}
    for m in models:
        if m.builtin or m.config.tier != "batch":
            continue
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        out[m.name] = BatchBroker.options(  # Ray types the actor class ray.remote makes of Broker
            num_cpus=0, max_concurrency=100_000, scheduling_strategy=here,
        ).remote(m.config, journal_path(journal_dir, m.name), None, (expected or {}).get(m.name, 0))
    return out
