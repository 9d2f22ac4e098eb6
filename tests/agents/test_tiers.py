"""Tiers (docs/providers.md, *Tiers*): which families sell which, refused at load where a family
has none, part of an arm's identity only when not standard, ``flex`` on the wire with its 429s
waited out unbilled, and every cost at the tier's price (Kimi's cache hits at the cached price)."""

from __future__ import annotations

import asyncio
import json

import pytest

from agents import Protocol
from agents.caller import RetryPolicy
from agents.litellm_transport import litellm_module
from agents.llm import LLMAgent
from agents.model import ModelConfig
from agents.providers import BY_NAME, FAMILIES
from agents.types import Turn
from env import initial_state
from env.errors import BadInput
from testing.scripted_server import ScriptedServer

FAST = RetryPolicy(max_retries=2, base_s=0.01, cap_s=0.02)
KEY_ENV = "GRIDBENCH_TEST_KEY"


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-tiers")
    litellm_module()


def test_each_family_sells_standard_and_the_documented_discounts():
    factors = {f.name: {t.name: t.price_factor for t in f.tiers} for f in FAMILIES}
    assert all(f["standard"] == 1.0 for f in factors.values())
    assert factors["anthropic-adaptive"] == factors["anthropic-budget"] == {"standard": 1.0, "batch": 0.5}
    assert factors["openai-reasoning"] == {"standard": 1.0, "flex": 0.5, "batch": 0.5}
    assert factors["moonshot-kimi-k2"] == {"standard": 1.0, "batch": 0.6}  # Moonshot's guide: 40% off
    assert factors["vllm"] == factors["generic"] == {"standard": 1.0}
    assert BY_NAME["anthropic-adaptive"].tier("batch").max_requests == 100_000
    assert BY_NAME["openai-reasoning"].tier("batch").max_requests == 50_000


@pytest.mark.parametrize("model, tier, message", [
    ("anthropic/claude-opus-4-8", "flex", "Claude 4.7 and later (Anthropic) has no flex tier (it has: standard, batch)"),
    ("moonshot/kimi-k2.6", "flex", "has no flex tier"),
    ("openai/gpt-4o", "batch", "another provider (no thinking controls known) has no batch tier"),
    ("openai/gpt-5", "cheap", "must be one of standard, flex, batch (got 'cheap')"),
])
def test_a_tier_the_family_does_not_sell_is_refused_at_load(model, tier, message):
    with pytest.raises(BadInput) as err:
        ModelConfig.for_model(model, tier=tier)
    assert err.value.field == "tier" and message in str(err.value)


def test_batch_settings_go_with_a_batch_tier_only():
    config = ModelConfig.for_model("anthropic/claude-opus-4-8", tier="batch", batch={"poll_s": 0.1})
    assert (config.batch_poll_s, config.batch_round_wait_s) == (0.1, 5.0)
    with pytest.raises(BadInput, match="only a model entry with tier: batch"):
        ModelConfig.for_model("openai/gpt-5", tier="flex", batch={"poll_s": 1})
    with pytest.raises(BadInput, match="positive number"):
        ModelConfig.for_model("openai/gpt-5", tier="batch", batch={"poll_s": 0})


def test_the_tier_is_part_of_the_identity_only_off_standard():
    plain = ModelConfig.for_model("anthropic/claude-opus-4-8")
    assert plain.identity() == {"model": "anthropic/claude-opus-4-8", "params": {}}  # ids from before tiers hold
    assert ModelConfig.for_model("anthropic/claude-opus-4-8", tier="standard").identity() == plain.identity()
    batch = ModelConfig.for_model("anthropic/claude-opus-4-8", name="claude-batch", tier="batch")
    assert batch.identity() == {**plain.identity(), "tier": "batch"}
    assert batch.public()["tier"] == "batch" and "tier" not in plain.public()


def turn(maze):
    protocol = Protocol(icl_example=False, thinking=True)
    return protocol, Turn(maze, protocol, 1, initial_state(maze), (), 57)


@pytest.mark.parametrize("client", ["litellm", "openai"])
def test_flex_sends_the_tier_waits_out_resource_unavailable_and_pays_half(example_maze, client):
    price = {"input": 2e-6, "output": 8e-6}
    with ScriptedServer(script=["ACTION: left"], flex_unavailable=2) as srv:
        config = ModelConfig.for_model("openai/gpt-5", api_base=srv.url, api_key_env=KEY_ENV, tier="flex",
                                       price=price, client=client)
        sleeps: list[float] = []

        async def sleep(s):
            sleeps.append(s)

        protocol, t = turn(example_maze)
        agent = LLMAgent(config, protocol, retry=FAST, sleep=sleep)

        decision = act_once(agent, t)
        requests = srv.chat_requests
    assert [r.body.get("service_tier") for r in requests] == ["flex"] * 3
    assert [r.answered for r in requests] == [False, False, True]  # two 429s, nothing billed for them
    assert len(sleeps) == 2 and decision.usage.retries == 2 and decision.usage.calls == 1
    u = decision.usage
    assert decision.tier == "flex" and decision.batch_id is None
    assert u.cost_usd == pytest.approx(0.5 * (u.tokens_in * 2e-6 + u.tokens_out * 8e-6))


def test_a_429_for_want_of_quota_fails_at_once(example_maze):
    with ScriptedServer(script=[{"fault": "insufficient_quota"}]) as srv:
        config = ModelConfig.for_model("openai/gpt-5", api_base=srv.url, api_key_env=KEY_ENV, client="openai")
        protocol, t = turn(example_maze)
        agent = LLMAgent(config, protocol, retry=FAST)
        from agents.types import InfraError

        with pytest.raises(InfraError):
            asyncio.run(agent.act(t))
        assert len(srv.chat_requests) == 1


def test_kimi_cache_hits_cost_the_cached_price_through_litellm(example_maze):
    """Moonshot reports cache hits at the top level of usage, which litellm's own pricing misses:
    gridbench prices them at the cached rate of litellm's table ($0.16 against $0.95 a million)."""
    protocol = Protocol(icl_example=False, thinking=True)
    with ScriptedServer(script=["ACTION: left"], persona="moonshot") as srv:
        config = ModelConfig.for_model("moonshot/kimi-k2.6", api_base=srv.url, api_key_env=KEY_ENV)
        agent = LLMAgent(config, protocol, retry=FAST)
        maze = example_maze

        async def two():
            try:
                a = await agent.act(Turn(maze, protocol, 1, initial_state(maze), (), 57))
                b = await agent.act(Turn(maze, protocol, 2, initial_state(maze), (), 57))
                return a, b
            finally:
                await agent.aclose()

        first, second = asyncio.run(two())
    u = second.usage
    assert first.usage.tokens_cached == 0 and u.tokens_cached > 0
    full = u.tokens_in * 0.95e-6 + u.tokens_out * 4e-6
    assert u.cost_usd == pytest.approx(full - u.tokens_cached * (0.95e-6 - 0.16e-6))
    assert u.cost_usd < full


def test_dry_run_prices_each_arm_at_its_tier_beside_the_standard_figure(tmp_path):
    import yaml

    from orchestrator.estimate import estimate
    from orchestrator.sweep import load_sweep

    models = [{"name": "claude", "model": "anthropic/claude-opus-4-8", "tier": "batch"},
              {"name": "kimi", "model": "moonshot/kimi-k2.6", "tier": "batch"},
              {"name": "gpt", "model": "openai/gpt-5", "tier": "flex"},
              {"name": "claude-std", "model": "anthropic/claude-opus-4-8"}]
    path = tmp_path / "tiers.yaml"
    path.write_text(yaml.safe_dump({"name": "tiers", "mazes": ["eval/p0046"], "models": models}))
    rows = {e.name: e for e in estimate(load_sweep(path).episodes())}
    for name, factor in (("claude", 0.5), ("kimi", 0.6), ("gpt", 0.5), ("claude-std", 1.0)):
        e = rows[name]
        assert e.cost_max_standard and e.cost_max == pytest.approx(factor * e.cost_max_standard)
        if name != "gpt":  # no study prior for OpenAI's family: its typical figure is unknown
            assert e.cost_typical_standard and e.cost_typical == pytest.approx(factor * e.cost_typical_standard)
    assert rows["claude"].cost_typical_standard == pytest.approx(rows["claude-std"].cost_typical)
    assert rows["claude"].tier == "batch" and rows["claude-std"].tier == "standard"


def test_a_batch_line_carries_the_request_in_the_providers_own_shape(example_maze):
    """Anthropic's batch params: the system prompt apart, images as base64 sources, the cache
    marks kept; Moonshot's: the chat body under the provider's model name, ``thinking`` laid in
    as the OpenAI SDK lays ``extra_body``; and an answer in a provider's own shape read as litellm
    reads a synchronous one."""
    from agents.batch_requests import CUSTOM_ID, custom_id
    from agents.prompt import build_messages, with_cache_markers

    protocol = Protocol(observation="image+text", thinking=True, effort="xhigh")
    claude = LLMAgent(ModelConfig.for_model("anthropic/claude-opus-4-8", tier="batch"), protocol, offline=True)
    t = Turn(example_maze, protocol, 1, initial_state(example_maze), (), 57)
    messages = with_cache_markers(build_messages(t), t)
    body = claude.transport.body(messages)
    assert body["model"] == "claude-opus-4-8" and body["output_config"] == {"effort": "xhigh"}
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"} and "temperature" not in body
    blocks = [b for m in body["messages"] for b in m["content"]] + body.get("system", [])
    images = [b for b in blocks if b["type"] == "image"]
    assert images and all(b["source"]["type"] == "base64" and b["source"]["media_type"] == "image/png"
                          for b in images)
    assert sum("cache_control" in b for b in blocks) == 1
    assert all(m["role"] != "system" for m in body["messages"])
    kimi = LLMAgent(ModelConfig.for_model("moonshot/kimi-k2.6", tier="batch"), Protocol(thinking=True), offline=True)
    line = kimi.transport.body(messages)
    assert line["model"] == "kimi-k2.6" and line["thinking"] == {"type": "enabled"} and "extra_body" not in line
    ids = {custom_id(f"ep{i}", step, call, attempt) for i in range(3) for step in (1, 12) for call in (0, 1)
           for attempt in (0, 2)}
    assert len(ids) == 24 and all(CUSTOM_ID.match(i) for i in ids)
    answer = claude.transport.read({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-8", "stop_sequence": None,
        "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "ACTION: left"}],
        "stop_reason": "max_tokens", "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 7}})
    assert (answer.reply, answer.reasoning, answer.finish_reason) == ("ACTION: left", "hm", "length")
    assert (answer.usage.tokens_in, answer.usage.tokens_cached, answer.usage.tokens_out) == (100, 90, 7)


def act_once(agent, t):
    """The agent's decision on turn ``t``; the agent is closed after."""
    async def one():
        try:
            return await agent.act(t)
        finally:
            await agent.aclose()

    return asyncio.run(one())


def one_answer(example_maze, srv, model: str, tier: str, client: str = "litellm"):
    config = ModelConfig.for_model(model, api_base=srv.url, api_key_env=KEY_ENV, tier=tier, client=client)
    protocol, t = turn(example_maze)
    agent = LLMAgent(config, protocol, retry=FAST)

    return act_once(agent, t), srv.chat_requests[-1]


@pytest.mark.parametrize("tier, factor", [("standard", 1.0), ("flex", 0.5)])
def test_an_openai_answer_costs_its_tier_of_the_list_price_whatever_tier_it_names(example_maze, tier, factor):
    """OpenAI's answers name the tier that served them (``service_tier: "flex"``); litellm prices
    such an answer at the flex rate by itself, so a flex arm used to be recorded at a quarter of the
    list price, half of its bill. OpenAI bills flex at half of list (docs/providers.md)."""
    from agents.pricing import table_price

    with ScriptedServer(script=["ACTION: left"], persona="openai-reasoning", model="gpt-5") as srv:
        decision, request = one_answer(example_maze, srv, "openai/gpt-5", tier)
    # the persona answers as OpenAI does: "service_tier": "flex" on a flex answer
    assert request.body.get("service_tier") == ("flex" if tier == "flex" else None)
    u, price = decision.usage, table_price("openai/gpt-5")
    assert price is not None
    assert u.cost_usd == pytest.approx(factor * price.cost(u.tokens_in, u.tokens_out, u.tokens_cached))


@pytest.mark.parametrize("model, tier, factor", [
    ("anthropic/claude-opus-4-8", "batch", 0.5), ("openai/gpt-5", "batch", 0.5), ("openai/gpt-5", "flex", 0.5),
    ("moonshot/kimi-k2.6", "batch", 0.6), ("anthropic/claude-opus-4-8", "standard", 1.0),
])
def test_a_batch_answer_costs_its_tier_of_the_table_price(model, tier, factor):
    """A provider batch's answers are priced from litellm's table (``priced_by: table``) at the tier's factor."""
    from agents.pricing import answer_cost, table_price
    from agents.usage import Usage

    config = ModelConfig.for_model(model, tier=tier)
    usage = Usage(tokens_in=12_000, tokens_out=3_000, tokens_cached=2_000)
    price = table_price(model)
    assert price is not None
    assert answer_cost(config, "table", usage) == pytest.approx(factor * price.cost(12_000, 3_000, 2_000))


@pytest.mark.parametrize("model, persona, client", [
    ("anthropic/claude-opus-4-8", None, "litellm"),
    ("moonshot/kimi-k2.6", "moonshot", "litellm"), ("moonshot/kimi-k2.6", "moonshot", "openai"),
    ("openai/gpt-5", "openai-reasoning", "litellm"), ("openai/gpt-5", "openai-reasoning", "openai"),
    ("gemini/gemini-4-argon", "gemini", "litellm"), ("gemini/gemini-3.6-flash", "gemini", "litellm"),
])
def test_a_batch_line_carries_the_body_the_synchronous_call_sends(example_maze, monkeypatch, model, persona, client):
    """One request, one translation: for each family with a batch tier and each client, the body a
    ``tier: batch`` arm puts in its batch line is the body the same call, made synchronously, puts
    on the wire (for Anthropic, the Messages params litellm posts). Before, the openai client sent
    Moonshot the litellm string ``moonshot/kimi-k2.6`` while its batch line named ``kimi-k2.6``."""
    import agents.caller as caller_module

    seen: list[tuple] = []
    original = caller_module.Caller.call

    async def spy(self, messages):
        seen.append((messages, caller_module.call_seed(self.seed, self._step, self._calls)))
        return await original(self, messages)

    monkeypatch.setattr(caller_module.Caller, "call", spy)
    protocol = Protocol(observation="image+text", thinking=True, effort="high", icl_example=False, tile_size=8)
    t = Turn(example_maze, protocol, 1, initial_state(example_maze), (), 57)
    with ScriptedServer(script=["ACTION: left"], **({"persona": persona} if persona else {})) as srv:
        config = ModelConfig.for_model(model, api_base=srv.url, api_key_env=KEY_ENV, client=client)
        agent = LLMAgent(config, protocol, retry=FAST)

        act_once(agent, t)
        sent = srv.chat_requests[-1]
        wire = sent.wire if sent.wire is not None else sent.body  # Anthropic's own params, as posted
    (messages, seed), = seen
    batch = LLMAgent(ModelConfig.for_model(model, tier="batch"), protocol, offline=True).transport.body(messages, seed)
    assert json.loads(json.dumps(batch)) == json.loads(json.dumps(wire))
