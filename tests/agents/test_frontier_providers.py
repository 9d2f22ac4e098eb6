"""The frontier families (docs/providers.md): GPT-6-class OpenAI reasoning models and Claude 5, as
gridbench refuses and sends them, and an entry's image detail in every image part, through the
real client against the scripted server's OpenAI reasoning persona."""

from __future__ import annotations

import asyncio

import httpx
import pytest

import env
from agents import ModelConfig, Turn
from agents.llm import LLMAgent
from agents.protocol import resolve_protocol
from agents.providers import family_for
from env.errors import BadInput
from testing.scripted_server import ScriptedServer
from tests.agents.conftest import MIDWAY, walk_actions

KEY = "sk-gridbench-FAKE-frontier-0123456789"


def refused(model: str, **fields) -> str | None:
    """The protocol field the model's family refuses in study-final with ``fields`` (None: none)."""
    why = family_for(model).refusal(resolve_protocol({"preset": "study-final", **fields}))
    return why[0] if why else None


def test_claude_5_always_thinks_and_needs_an_explicit_effort():
    claude = family_for("anthropic/claude-opus-5-5")
    assert refused("anthropic/claude-opus-5-5", thinking=False, effort="xhigh") == "thinking"
    why = claude.refusal(resolve_protocol({"preset": "study-final"}))
    assert why is not None and why[0] == "effort" and "medium" in why[1]
    protocol = resolve_protocol({"preset": "study-final", "effort": "xhigh"})
    assert claude.refusal(protocol) is None
    fields, budget = claude.request_fields(protocol, seed=3)
    assert fields == {"max_tokens": 64000, "thinking": {"type": "adaptive", "display": "summarized"},
                      "output_config": {"effort": "xhigh"}}
    assert (budget.thinking, budget.reasoning_effort) == (True, "xhigh")


def test_gpt_6_takes_its_own_effort_levels_and_no_sampling():
    astra = family_for("openai/gpt-6-astra")
    assert refused("openai/gpt-6-astra", effort="max") is None
    assert refused("openai/gpt-6-astra", effort="minimal") == "effort"
    assert refused("openai/gpt-6-astra", temperature=0.5) == "temperature"
    assert refused("openai/gpt-5", effort="max") == "effort"
    fields, _ = astra.request_fields(resolve_protocol({"preset": "study-final", "effort": "xhigh"}), seed=3)
    assert fields["max_completion_tokens"] == 64000 and fields["reasoning_effort"] == "xhigh"
    assert "temperature" not in fields and "max_tokens" not in fields


@pytest.mark.parametrize("model, detail, field", [
    ("anthropic/claude-opus-5-5", "high", "params.image_detail"),
    ("openai/gpt-6-astra", "ultra", "params.image_detail"),
])
def test_an_image_detail_the_provider_cannot_take_is_refused(model, detail, field):
    with pytest.raises(BadInput) as err:
        ModelConfig.for_model(model, params={"image_detail": detail})
    assert err.value.field == field


def test_image_detail_reaches_every_image_part_and_reasoning_is_counted_not_returned(monkeypatch):
    monkeypatch.setenv("GRIDBENCH_TEST_KEY", KEY)
    maze = env.resolve_maze("example")
    history, state = walk_actions(maze, MIDWAY)
    protocol = resolve_protocol({"preset": "study-final", "effort": "xhigh"})
    with ScriptedServer(script=[{"reply": "FINAL_OUTPUT: MOVE_FORWARD", "reasoning": "r" * 400}],
                        persona="openai-reasoning", model="gpt-6-astra") as srv:
        config = ModelConfig.for_model("openai/gpt-6-astra", api_base=srv.url, api_key_env="GRIDBENCH_TEST_KEY",
                                       params={"image_detail": "high", "service_tier": "flex"})
        agent = LLMAgent(config, protocol, seed=1)

        async def one():
            try:
                return await agent.act(Turn(maze, protocol, len(history) + 1, state, history, 57))
            finally:
                await agent.aclose()

        decision = asyncio.run(one())
        (request,) = srv.chat_requests
        # the persona refuses what OpenAI refuses of a reasoning model
        hi = [{"role": "user", "content": "hi"}]
        refused = [httpx.post(f"{srv.url}/chat/completions", headers={"Authorization": f"Bearer {KEY}"}, json=body,
                              timeout=10).status_code
                   for body in ({"model": "gpt-6-astra", "messages": hi, "max_tokens": 10},
                                {"model": "gpt-6-astra", "messages": hi, "reasoning_effort": "none"},
                                {"model": "gpt-6-astra", "messages": hi, "temperature": 0.2})]
    assert refused == [400, 400, 400]
    body = request.body
    images = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]
              if p["type"] == "image_url"]
    assert len(images) == 4  # the last 3 steps' frames and the current one
    assert all(p["image_url"]["detail"] == "high" for p in images)
    assert body["service_tier"] == "flex" and "image_detail" not in body
    assert body["max_completion_tokens"] == 64000 and body["reasoning_effort"] == "xhigh"
    assert decision.action is not None and decision.reasoning == ""
    assert decision.usage.tokens_reasoning == 100 and decision.usage.tokens_out > 100
    assert request.applied == {"thinking": True, "reasoning_effort": "xhigh", "thinking_budget": None,
                               "max_output_tokens": 64000, "constraint": None}
