"""The one retry loop of model calls, whichever transport sends them (``agents.transport``).

- Each attempt is exactly one request (litellm's own retries are off, ``num_retries=0``).
- A rate limit is waited out (its Retry-After honoured) for up to the policy's time budget a call
  and never counts against the retry limit; other transient failures (5xx, malformed replies,
  empty ``choices``, timeouts, refused connections) are retried with capped exponential backoff
  and jitter; a Retry-After wins over the backoff. What is which is the transport's
  ``classify``.
- Every answer is timed and priced (``agents.pricing``), and its reasoning tokens are estimated
  when the provider sent reasoning text without a count.
- A call that cannot get an answer raises ``InfraError`` with a scrubbed message
  (``agents.secrets.scrub``): the episode records an infrastructure error, never an action.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from agents.prompt import with_image_detail
from agents.secrets import scrub
from agents.transport import Answer, Completion, Request, Transport
from agents.types import InfraError
from agents.usage import Budget, Usage


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with jitter; Retry-After, when a server sends one, wins.

    Rate limits are waited out rather than counted as failures, apart from the ``max_retries``
    other transient failures, for up to ``rate_limited_s`` seconds of waiting a call (the model's
    request timeout, by default 900 s), so a provider's 429 storm slows a sweep down (the driver
    lowers its concurrency meanwhile) instead of failing episodes; an endpoint that does nothing
    but refuse still ends the call in the end.
    """

    max_retries: int = 8
    base_s: float = 2.0
    cap_s: float = 120.0
    max_retry_after_s: float = 600.0
    rate_limited_s: float = 900.0

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        backoff = min(self.cap_s, self.base_s * 2**retry)
        jittered = backoff * rng.uniform(0.5, 1.0)
        if retry_after is not None:
            wait = max(0.0, min(retry_after, self.max_retry_after_s))
            return wait + rng.uniform(0, 0.1 * wait)
        return jittered


def call_seed(base: int, step: int, call: int) -> int:
    """The sampling seed of a step's ``call``-th call: one seed per call, drawn from the episode's
    base seed, its step and the call's number. The same episode sends the same seeds again (a
    resumed one too), while no two calls share one: with a single seed pinned to every request a
    sampling model draws the same uniform every turn, and a re-query of the same request at a
    temperature above 0 comes back word for word."""
    digest = hashlib.sha256(f"{base}/{step}/{call}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1  # 0..2^31-1, the range every engine takes


class Caller:
    """One model's calls: a transport's attempts under one retry loop, each answer timed and priced.

    ``budget``: what every request allows the model to spend (the provider family's translation
    of the protocol, which built the body too); ``cost(usage, response)``: USD of an answer
    (``agents.pricing``); ``count_tokens(text)``: the model's token counter, for reasoning a
    provider reported without a count; ``secrets``: what to scrub from every error text;
    ``image_detail``: OpenAI's ``detail`` written into every image part of every request.
    """

    def __init__(
        self,
        transport: Transport,
        retry: RetryPolicy,
        *,
        name: str,
        budget: Budget,
        cost: Callable[[Usage, Any], float],
        count_tokens: Callable[[str], int],
        secrets: tuple[str | None, ...] = (),
        image_detail: str | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        rng: random.Random | None = None,
        on_rate_limit: Callable[[float | None], Any] | None = None,
        seed: int = 0,
    ):
        self.transport = transport
        self.seed = seed
        self.retry = retry
        self.name = name
        self.budget = budget
        self._cost = cost
        self.count_tokens = count_tokens
        self._secrets = secrets
        self._image_detail = image_detail
        self._sleep = sleep
        self._rng = rng or random.Random(0)
        self._on_rate_limit = on_rate_limit
        self._step = self._calls = 0
        self.batch_ids: list[str] = []  # the provider batches this turn's calls went through
        # this turn's failed attempts that were retried: their class, when each failed (UTC) and
        # the seconds then waited (the step's ``failures`` column); never their messages
        self.failures: list[dict[str, Any]] = []

    @property
    def marks_cache(self) -> bool:
        return self.transport.marks_cache

    def begin_turn(self, step: int) -> None:
        """A new step's calls: numbered from 0 again, their batches recorded afresh."""
        self._step, self._calls = step, 0
        self.batch_ids = []
        self.failures = []

    def failures_json(self) -> str | None:
        """This turn's failed attempts as the step's ``failures`` column: a JSON list, None when none."""
        return json.dumps(self.failures, separators=(",", ":")) if self.failures else None

    async def call(self, messages: list[dict[str, Any]]) -> Completion:
        """One model answer, retried by the policy; ``InfraError`` when no answer comes."""
        call = self._calls
        self._calls += 1
        if self._image_detail is not None:
            messages = with_image_detail(messages, self._image_detail)
        body = self.transport.body(messages, seed=call_seed(self.seed, self._step, call))
        failures = rate_limited = 0
        waited = 0.0  # on rate limits, this call
        while True:
            request = Request(body, self._step, call, failures + rate_limited)
            started = time.perf_counter()
            try:
                answer = await self.transport.send(request)
            except Exception as err:
                failure = self.transport.classify(err)
                if failure is None:
                    raise
                message = scrub(f"{self.name}: {failure.message}", self._secrets)
                if failure.verdict == "fail":
                    raise InfraError(failure.error_class, message) from None
                limited = failure.verdict == "wait"
                delay = self.retry.delay(rate_limited if limited else failures, failure.retry_after, self._rng)
                if (waited + delay > self.retry.rate_limited_s) if limited else (failures >= self.retry.max_retries):
                    raise InfraError(failure.error_class, scrub(
                        f"{self.name}: gave up after {failures + rate_limited + 1} attempts: {message}",
                        self._secrets)) from None
                self.failures.append({"class": failure.error_class,
                                      "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
                                      "waited_s": round(delay, 3)})
                if limited:
                    rate_limited += 1
                    waited += delay
                    if self._on_rate_limit is not None:
                        self._on_rate_limit(failure.retry_after)
                else:
                    failures += 1
                await self._sleep(delay)
                continue
            if answer.batch_id is not None:
                self.batch_ids.append(answer.batch_id)
            completion = self.accounted(answer, time.perf_counter() - started)
            return replace(completion, usage=replace(completion.usage, retries=failures + rate_limited))

    def accounted(self, answer: Answer, latency: float) -> Completion:
        """The answer's completion with its latency, its cost, and reasoning tokens estimated when
        the provider reported reasoning text but no count."""
        completion = answer.completion
        usage = completion.usage
        if completion.reasoning and not usage.tokens_reasoning:
            usage = replace(usage, tokens_reasoning=self.count_tokens(completion.reasoning), reasoning_estimated=True)
        return replace(completion, usage=replace(usage, latency_s=latency, cost_usd=self._cost(usage, answer.response)))

    async def aclose(self) -> None:
        await self.transport.aclose()
