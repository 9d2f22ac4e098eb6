"""Simulated time for tests: an asyncio event loop whose clock jumps to its next timer whenever
nothing is ready, so a thinking turn of many minutes or a provider batch that stays in progress
for hours takes milliseconds, and a provider's batch endpoints in memory on that clock.

- ``run(main)``: ``asyncio.run`` on a ``VirtualClockLoop``; ``main`` gets the loop (to read or
  patch its clock) and its result is returned. Every timer (``asyncio.sleep``, ``wait_for``,
  aiohttp's and the agent's timeouts) runs on the virtual clock. Real I/O still happens: sockets
  that are ready are served first, and the clock only jumps when none is; while work is in an
  executor thread (a DNS lookup, ``asyncio.to_thread``) the loop waits for it in real time.
- ``MemoryBatches``: ``agents.providers.ProviderBatches`` in memory, its batches in progress for
  ``latency`` seconds of the running loop's clock, each with a fate (``FATES``) that covers what
  a batch may do as a whole: be refused, become unreadable, expire or be cancelled whole, fail
  whole. ``chat_answer`` is an OpenAI chat completion, the body a batch line's answer holds.
"""

from __future__ import annotations

import asyncio
import itertools
import selectors
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, TypeVar, TypeVarTuple

from agents.providers import Outcome, ProviderBatches, errored

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class _JumpingSelector(selectors.BaseSelector):
    """The loop's selector: ready sockets first; when none is ready and a timer is due later, the
    loop's clock jumps to it instead of sleeping."""

    GRACE_S = 0.002  # real time given to sockets other than the loop's own before the clock jumps

    def __init__(self, loop: VirtualClockLoop):
        self._real, self._loop = selectors.DefaultSelector(), loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.get_key(fileobj)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = self._real.select(0)
        if events or timeout == 0:
            return events
        if timeout is None or self._loop.executor_jobs:
            return self._real.select(timeout)  # no timer, or a thread at work: wait for it in real time
        if len(self._real.get_map()) > 1:  # sockets besides the loop's self-pipe: data may be in transit
            events = self._real.select(self.GRACE_S)
            if events:
                return events
        self._loop.now += timeout
        return []


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock (``now``, seconds from 0) that jumps to the next timer."""

    def __init__(self) -> None:
        self.now = 0.0
        self.executor_jobs = 0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self.now

    def run_in_executor(self, executor: Executor | None, func: Callable[[*Ts], T],
                        *args: *Ts) -> asyncio.Future[T]:
        future = super().run_in_executor(executor, func, *args)
        self.executor_jobs += 1

        def done(_: asyncio.Future[T]) -> None:
            self.executor_jobs -= 1

        future.add_done_callback(done)
        return future


def run(main: Callable[[VirtualClockLoop], Awaitable[T]]) -> T:
    """``main(loop)`` to its end on a fresh virtual-clock loop; tasks left running are cancelled."""
    loop = VirtualClockLoop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main(loop))
    finally:
        try:
            tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in tasks:
                t.cancel()
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


# ---- a provider's batches in memory ------------------------------------------------------------
FATES = (
    "ok",            # every request answered when the batch ends
    "expire",        # every other request left unprocessed (expired) when the window closed
    "expire_whole",  # the batch expired with no result at all (Gemini's expired batch)
    "cancel_whole",  # every request canceled before it ran
    "fail_whole",    # the provider failed the batch as a whole (a file that fails validation): "*"
    "refuse",        # the provider refused the batch when it was submitted (a 503)
    "unreadable",    # its status cannot be read: the poll fails (the connection drops)
)


class ProviderError(Exception):
    """What a provider's SDK raises: an HTTP status (``status_code``) or none (a lost connection)."""

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


def chat_answer(reply: str, finish_reason: str = "stop") -> dict[str, Any]:
    """An OpenAI chat completion of ``reply``: what a batch line's answer holds."""
    return {"id": "chatcmpl-memory", "object": "chat.completion", "model": "memory",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                         "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}


@dataclass
class MemoryBatch:
    id: str
    requests: dict[str, dict[str, Any]]  # custom id -> body
    fate: str
    created: float
    ends: float
    polls: int = 0  # times its status was asked
    cancelled: bool = False


@dataclass
class MemoryBatches(ProviderBatches):
    """A provider's batch endpoints in memory (see the module's docstring). ``answer(custom_id,
    body)``: the answer of one request, in the provider's own shape (``chat_answer``);
    ``fates``: one per batch submitted, in order, the last repeating."""

    answer: Callable[[str, dict[str, Any]], dict[str, Any]]
    latency: float = 0.0
    fates: Sequence[str] = ("ok",)
    batches: dict[str, MemoryBatch] = field(default_factory=dict)
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (batch id, custom id) of every line
    refused: int = 0  # submissions refused
    _ids: itertools.count = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        assert set(self.fates) <= set(FATES), self.fates

    def _fate(self) -> str:
        n = len(self.batches) + self.refused
        return self.fates[min(n, len(self.fates) - 1)]

    async def submit(self, requests: dict[str, dict[str, Any]]) -> str:
        fate = self._fate()
        if fate == "refuse":
            self.refused += 1
            raise ProviderError("Error code: 503 - the batch service is overloaded", status_code=503)
        now = asyncio.get_running_loop().time()
        batch = MemoryBatch(f"batch_{next(self._ids)}", dict(requests), fate, now, now + self.latency)
        self.batches[batch.id] = batch
        self.submitted += [(batch.id, cid) for cid in requests]
        return batch.id

    async def ended(self, batch_id: str) -> bool:
        batch = self.batches[batch_id]
        batch.polls += 1
        if batch.fate == "unreadable":
            raise ProviderError("Connection error: the server closed the connection")
        return batch.cancelled or asyncio.get_running_loop().time() >= batch.ends

    async def outcomes(self, batch_id: str) -> dict[str, Outcome]:
        batch = self.batches[batch_id]
        if batch.fate == "fail_whole":
            return {"*": errored(400, "the batch failed validation: a line is not a chat request")}
        if batch.fate == "expire_whole":
            return {}
        out: dict[str, Outcome] = {}
        for i, (cid, body) in enumerate(batch.requests.items()):
            if batch.fate == "cancel_whole" or batch.cancelled:
                out[cid] = Outcome("canceled")
            elif batch.fate == "expire" and i % 2 == 1:
                out[cid] = Outcome("expired")
            else:
                out[cid] = Outcome("succeeded", body=self.answer(cid, body))
        return out

    async def cancel(self, batch_id: str) -> None:
        self.batches[batch_id].cancelled = True
