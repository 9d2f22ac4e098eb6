"""The one retry loop (``agents.caller``) over the transport interface (``agents.transport``), and
the policies apart from the transports.

The loop is driven here by a transport written for the test: a real implementation of the
interface that answers from a list of outcomes, so each rule of the loop is seen on its own.
Every transport the agent ships runs through the same loop over HTTP in test_agents_llm.py
(litellm and the OpenAI-compatible client) and test_tiers.py; the batch transport through the
driver's rounds in tests/reliability/test_batches.py.
"""

from __future__ import annotations

import ast
import asyncio
import random
from pathlib import Path

import pytest

from agents.caller import Caller, RetryPolicy
from agents.llm import LLMAgent
from agents.model import ModelConfig
from agents.protocol import Protocol, resolve_protocol
from agents.transport import Answer, Completion, EndpointError, Failure, Request, Transport, classify_status
from agents.types import InfraError
from agents.usage import Budget, Usage

KEY = "sk-gridbench-FAKE-0a1b2c3d4e5f6789"
POLICY = RetryPolicy(max_retries=2, base_s=1.0, cap_s=4.0, rate_limited_s=10.0)


class Outcomes(Transport):
    """Answers each attempt with the next outcome: a reply, or an exception to raise."""

    def __init__(self, *outcomes: str | Exception):
        self.outcomes = list(outcomes)
        self.requests: list[Request] = []

    def body(self, messages, seed=None):
        return {"messages": messages}

    async def send(self, request):
        self.requests.append(request)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return Answer(Completion(reply=outcome, usage=Usage(tokens_in=10, tokens_out=2)), batch_id=f"b{len(self.requests)}")


def caller(transport, retry=POLICY, **kw):
    sleeps: list[float] = []
    limited: list[float | None] = []

    async def sleep(s):
        sleeps.append(s)

    c = Caller(transport, retry, name="m", budget=Budget(max_output_tokens=64), cost=lambda usage, response: 0.25,
               count_tokens=len, secrets=(KEY,), sleep=sleep, rng=random.Random(0), on_rate_limit=limited.append, **kw)
    return c, sleeps, limited


def call(c, messages=()):
    return asyncio.run(c.call(list(messages)))


def test_each_attempt_is_one_request_numbered_in_its_step_and_call():
    t = Outcomes(EndpointError("ServiceUnavailableError", "busy", retryable=True), "ACTION: left", "ACTION: right")
    c, sleeps, _ = caller(t)
    c.begin_turn(7)
    first, second = call(c), call(c)
    assert [(r.step, r.call, r.attempt) for r in t.requests] == [(7, 0, 0), (7, 0, 1), (7, 1, 0)]
    assert (first.reply, first.usage.retries, second.usage.retries) == ("ACTION: left", 1, 0)
    assert first.usage.cost_usd == 0.25 and first.usage.latency_s >= 0
    assert c.batch_ids == ["b2", "b3"] and len(sleeps) == 1 and 0.5 <= sleeps[0] <= 1.0  # base_s, jittered
    c.begin_turn(8)
    assert c.batch_ids == []


def test_rate_limits_are_waited_out_within_a_time_budget_and_never_counted_as_retries():
    limited = EndpointError("RateLimitError", "slow down", retryable=True, retry_after=3)
    c, sleeps, heard = caller(Outcomes(limited, limited, "ACTION: toggle"))
    assert call(c).usage.retries == 2 and heard == [3, 3]
    assert all(3.0 <= s <= 3.3 for s in sleeps)  # Retry-After wins over the backoff
    # more than max_retries 429s are fine; past rate_limited_s of waiting the call gives up
    c, sleeps, _ = caller(Outcomes(*[limited] * 5, "never"))
    with pytest.raises(InfraError) as err:
        call(c)
    assert err.value.error_class == "RateLimitError" and len(sleeps) == 3 and sum(sleeps) <= POLICY.rate_limited_s
    assert str(err.value).startswith("m: gave up after 4 attempts: m: RateLimitError: slow down")


def test_transient_failures_stop_at_the_retry_limit_and_fatal_ones_at_once():
    busy = EndpointError("InternalServerError", f"key {KEY} rejected upstream", retryable=True)
    t = Outcomes(busy, busy, busy, "never")
    c, sleeps, _ = caller(t)
    with pytest.raises(InfraError) as err:
        call(c)
    assert len(t.requests) == POLICY.max_retries + 1 and len(sleeps) == POLICY.max_retries
    assert all(s <= POLICY.cap_s for s in sleeps) and KEY not in str(err.value)
    error_class, retryable = classify_status(401, "bad key")
    t = Outcomes(EndpointError(error_class, f"HTTP 401: bad key {KEY}", retryable=retryable), "never")
    c, sleeps, _ = caller(t)
    with pytest.raises(InfraError) as err:
        call(c)
    assert (err.value.error_class, len(t.requests), sleeps) == ("AuthenticationError", 1, [])
    assert str(err.value) == "m: AuthenticationError: HTTP 401: bad key [redacted]"


def test_a_failure_the_transport_does_not_class_propagates_as_it_is():
    t = Outcomes(KeyError("a bug"), "never")
    with pytest.raises(KeyError):
        call(caller(t)[0])
    assert len(t.requests) == 1


def test_a_transport_classes_failures_by_overriding_classify_alone():
    """The loop reads the verdict only: a transport's own exceptions, classed its own way."""

    class Flaky(Outcomes):
        def classify(self, err):
            return Failure.transient("Timeout", str(err), retry_after=0.5) if isinstance(err, TimeoutError) else None

    c, sleeps, _ = caller(Flaky(TimeoutError("slow"), "ACTION: done"))
    assert call(c).usage.retries == 1 and 0.5 <= sleeps[0] <= 0.55
    assert Failure.transient("RateLimitError", "x").verdict == "wait"
    assert Failure.transient("Timeout", "x").verdict == "retry"


def test_reasoning_without_a_count_is_estimated_and_image_detail_reaches_every_image():
    class Thinking(Outcomes):
        async def send(self, request):
            self.requests.append(request)
            return Answer(Completion(reply="ACTION: left", reasoning="x" * 40))

    t = Thinking()
    c, _, _ = caller(t, image_detail="high")
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    u = call(c, [{"role": "user", "content": [image, {"type": "text", "text": "hi"}]}]).usage
    assert (u.tokens_reasoning, u.reasoning_estimated) == (40, True)
    assert t.requests[0].body["messages"][0]["content"][0]["image_url"]["detail"] == "high"


@pytest.mark.parametrize("entry, transport", [
    ({"model": "openai/gpt-5"}, "LiteLLMTransport"),
    ({"model": "hosted_vllm/q", "api_base": "http://127.0.0.1:9/v1"}, "OpenAICompatTransport"),
    ({"model": "anthropic/claude-opus-4-8", "tier": "batch"}, "BatchTransport"),
])
def test_the_entry_picks_the_transport_and_the_style_picks_the_policy(entry, transport):
    config = ModelConfig.for_model(entry.pop("model"), **entry)
    for style, policy in (("gridbench", "GridbenchPolicy"), ("study", "StudyPolicy")):
        protocol = Protocol() if style == "gridbench" else resolve_protocol({"preset": "study-final"})
        agent = LLMAgent(config, protocol, offline=True)
        assert (type(agent.transport).__name__, type(agent.policy).__name__) == (transport, policy)
        assert agent.policy.model is agent.caller and agent.caller.transport is agent.transport


def test_the_policies_never_see_a_transport():
    """The policies import neither a transport nor the retry loop: they know a call, its budget,
    whether requests carry cache markers, and a token counter (``agents.policy.Model``)."""
    root = Path(__file__).resolve().parents[2]
    away = {"agents.caller", "agents.litellm_transport", "agents.openai_compat", "agents.batch_requests",
            "agents.llm", "agents.pricing", "litellm", "aiohttp"}
    for module in ("agents/policy.py", "agents/study_agent.py"):
        tree = ast.parse((root / module).read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not imported & away, (module, imported & away)
