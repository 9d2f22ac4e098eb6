"""The LLM agent, through both clients, against the scripted server over real HTTP on 127.0.0.1.

Behaviour meant to be the same for the litellm and the openai client is tested for both (the
``client`` fixture); what only one of them does is tested for that one.
"""

import asyncio
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import env
from agents import InfraError, ModelConfig, Protocol, Turn, build_agent
from agents.caller import RetryPolicy, call_seed
from agents.litellm_transport import litellm_module, read_response
from agents.llm import LLMAgent
from agents.model import request_name
from agents.openai_compat import read_completion
from agents.transport import Answer, EndpointError, classify_status
from agents.types import PastStep
from agents.usage import Budget
from env.errors import BadInput
from env.oracle import solve
from testing.scripted_server import ScriptedServer

KEY = "sk-gridbench-FAKE-7f3a9c1e5b2d4f60"
FAST = RetryPolicy(max_retries=6, base_s=0.01, cap_s=0.05)


@pytest.fixture(scope="module", autouse=True)
def _litellm_loaded():
    litellm_module()  # import once, outside any test's own work


@pytest.fixture(params=["litellm", "openai"])
def client(request):
    return request.param


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("GRIDBENCH_TEST_KEY", KEY)
    return "GRIDBENCH_TEST_KEY"


class Sleeps:
    """Records the backoff the agent asks for, without spending it."""

    def __init__(self):
        self.delays = []

    async def __call__(self, seconds):
        self.delays.append(seconds)
        await asyncio.sleep(0)


AGENT_ONLY = ("retry", "sleep", "seed", "endpoint")


def config(model, **entry):
    return ModelConfig.for_model(model, **entry)


def agent_for(srv, key_env, protocol=None, model="openai/scripted", **kw):
    """An LLM agent on the scripted server; ``kw`` are model-entry keys and the agent's own."""
    own = {k: kw.pop(k) for k in AGENT_ONLY if k in kw}
    own.setdefault("retry", FAST)
    own.setdefault("sleep", Sleeps())
    own.setdefault("seed", 11)
    return LLMAgent(config(model, api_base=srv.url, api_key_env=key_env, **kw),
                    protocol or Protocol(icl_example=False), **own)


def first_turn(maze, protocol=None):
    protocol = protocol or Protocol(icl_example=False)
    return Turn(maze, protocol, 1, env.initial_state(maze), (), 57)


def act(agent, turn):
    """One turn in its own event loop, then the agent closed, as the episode runner closes it."""
    async def one():
        try:
            return await agent.act(turn)
        finally:
            await agent.aclose()

    return asyncio.run(one())


def test_one_request_per_turn_with_pinned_sampling_and_accounting(example_maze, key_env, client):
    reply = "The corridor continues east.\nACTION: forward"
    with ScriptedServer(script=[{"reply": reply, "reasoning": "r" * 400}]) as srv:
        agent = agent_for(srv, key_env, client=client, protocol=Protocol(icl_example=False, temperature=0.3,
                                                                            max_output_tokens=5000))
        d = act(agent, first_turn(example_maze, agent.protocol))
        (req,) = srv.chat_requests
    u = d.usage
    assert (d.action, d.parse, d.reply, d.finish_reason, u.retries, u.reasks) == (2, "exact", reply, "stop", 0, 0)
    assert d.reasoning == "r" * 400 and u.tokens_reasoning == 100 and not u.reasoning_estimated
    assert u.tokens_in > 0 and u.tokens_out == 100 + (len(reply) + 3) // 4
    assert u.latency_s > 0 and u.cost_usd == 0.0  # not in litellm's price table
    body = req.body
    # the call's own seed, drawn from the episode's (11), the step (1) and the call's number (0)
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.3, 5000, call_seed(11, 1, 0))
    # a provider with no known thinking controls: no switch, effort or budget is sent, and none recorded
    assert not {"reasoning_effort", "thinking", "chat_template_kwargs", "thinking_token_budget"} & set(body)
    assert d.budget == Budget(thinking=None, thinking_budget=None, reasoning_effort=None, max_output_tokens=5000)
    assert body["model"] == "scripted"
    assert req.headers.get("authorization") == f"Bearer {KEY}"
    assert len(req.images()) == 1 and req.images()[0].startswith("data:image/png;base64,")
    assert d.image_hashes and len(d.prompt_hash) == 16
    assert KEY not in repr(d)


def test_each_call_sends_its_own_seed_and_the_same_episode_sends_the_same_seeds(example_maze, key_env, client):
    """A re-query sends the same request again: with one seed pinned to every request a sampling
    engine would answer it word for word. Each call's seed differs; running again repeats them."""
    protocol = Protocol(icl_example=False, temperature=1.0, invalid_output="requery", requery_limit=3)

    def seeds() -> list[int]:
        with ScriptedServer(script=["no idea", "still none", "ACTION: left", "ACTION: right"]) as srv:
            agent = agent_for(srv, key_env, client=client, protocol=protocol)

            async def two_turns():
                try:
                    for step in (1, 2):
                        agent.caller.begin_turn(step)
                        await agent.policy.act(Turn(example_maze, protocol, step, env.initial_state(example_maze), (), 57))
                finally:
                    await agent.aclose()

            asyncio.run(two_turns())
            return [r.body["seed"] for r in srv.chat_requests]

    first = seeds()
    assert first == [call_seed(11, 1, 0), call_seed(11, 1, 1), call_seed(11, 1, 2), call_seed(11, 2, 0)]
    assert len(set(first)) == 4 and all(0 <= s < 2**31 for s in first)
    assert seeds() == first


def test_price_per_token_and_estimated_reasoning(example_maze, key_env, client):
    with ScriptedServer(script=["ACTION: left"], reasoning="thinking " * 50, report_reasoning_tokens=False) as srv:
        agent = agent_for(srv, key_env, client=client, price={"input": 1e-6, "output": 3e-6})
        d = act(agent, first_turn(example_maze))
    u = d.usage
    assert u.reasoning_estimated and u.tokens_reasoning > 0
    assert u.cost_usd == pytest.approx(u.tokens_in * 1e-6 + u.tokens_out * 3e-6)


def test_transient_faults_are_retried_and_retry_after_is_honoured(example_maze, key_env, client):
    script = [{"fault": "429", "retry_after": 2}, "500", "503", "malformed", "empty_choices", "hang",
              "ACTION: toggle"]
    sleeps = Sleeps()
    with ScriptedServer(script=script, hang_s=30) as srv:
        agent = agent_for(srv, key_env, client=client, sleep=sleeps, params={"timeout": 1})
        d = act(agent, first_turn(example_maze))
        requests = len(srv.chat_requests)
    assert d.action == 4 and d.usage.retries == 6 and requests == 7  # exactly one HTTP request per attempt
    assert 2.0 <= sleeps.delays[0] <= 2.2  # Retry-After wins over the backoff
    assert all(delay <= FAST.cap_s for delay in sleeps.delays[1:])


def test_exhausted_retries_raise_infra_error(example_maze, key_env, client):
    with ScriptedServer(script=["503"]) as srv:
        agent = agent_for(srv, key_env, client=client, retry=RetryPolicy(max_retries=3, base_s=0.01, cap_s=0.02))
        with pytest.raises(InfraError) as err:
            act(agent, first_turn(example_maze))
        assert len(srv.chat_requests) == 4
    assert err.value.error_class == "ServiceUnavailableError" and "4 attempts" in str(err.value)


@pytest.mark.parametrize("fault, error_class", [
    ("401", "AuthenticationError"), ("400", "BadRequestError"), ("context_length", "ContextWindowExceededError"),
])
def test_permanent_errors_fail_at_once_without_the_key(fault, error_class, example_maze, key_env, client, caplog,
                                                      capfd):
    caplog.set_level(logging.DEBUG)
    with ScriptedServer(script=[fault, "ACTION: left"]) as srv:
        agent = agent_for(srv, key_env, client=client)
        with pytest.raises(InfraError) as err:
            act(agent, first_turn(example_maze))
        assert len(srv.chat_requests) == 1
    assert err.value.error_class == error_class
    out, errout = capfd.readouterr()
    for recorded in (str(err.value), caplog.text, out, errout):
        assert KEY not in recorded and KEY[8:20] not in recorded


def test_cut_off_reply_is_an_invalid_model_answer_not_an_error(example_maze, key_env, client):
    with ScriptedServer(script=["length"]) as srv:
        d = act(agent_for(srv, key_env, client=client), first_turn(example_maze))
        assert len(srv.chat_requests) == 1
    assert (d.action, d.parse, d.finish_reason, d.reply, d.usage.retries) == (None, "invalid", "length", "", 0)


def test_reask_asks_again_at_most_twice(example_maze, key_env, client):
    protocol = Protocol(icl_example=False, invalid_output="reask")
    with ScriptedServer(script=["hmm", "I am not sure", "ACTION: right"]) as srv:
        d = act(agent_for(srv, key_env, client=client, protocol=protocol), first_turn(example_maze, protocol))
        last = srv.chat_requests[-1].body["messages"]
        assert len(srv.chat_requests) == 3
    assert (d.action, d.parse, d.usage.reasks) == (1, "exact", 2)
    assert [m["role"] for m in last[-4:]] == ["assistant", "user", "assistant", "user"]
    assert last[-4]["content"] == "hmm" and d.reply.endswith("ACTION: right")
    with ScriptedServer(mode="garbage") as srv:
        d = act(agent_for(srv, key_env, client=client, protocol=protocol), first_turn(example_maze, protocol))
        assert len(srv.chat_requests) == 3
    assert (d.action, d.parse, d.usage.reasks) == (None, "invalid", 2)
    with ScriptedServer(mode="garbage") as srv:  # noop: no second chance
        d = act(agent_for(srv, key_env, client=client), first_turn(example_maze))
        assert len(srv.chat_requests) == 1
    assert (d.action, d.parse, d.usage.reasks) == (None, "invalid", 0)


def test_multi_conversation_carries_the_agents_own_replies(example_maze, key_env, client):
    protocol = Protocol(icl_example=False, conversation="multi")
    s0 = env.initial_state(example_maze)
    s1, event = env.step(example_maze, s0, 2)

    async def two_turns(agent):  # in one event loop, as an episode plays them
        await agent.act(Turn(example_maze, protocol, 1, s0, (), 57))
        await agent.act(Turn(example_maze, protocol, 2, s1, (PastStep(1, 2, event, s0, s1),), 57))
        await agent.aclose()

    with ScriptedServer(script=["first thoughts\nACTION: forward", "ACTION: left"]) as srv:
        asyncio.run(two_turns(agent_for(srv, key_env, client=client, protocol=protocol)))
        messages = srv.chat_requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "first thoughts\nACTION: forward"


def test_an_oracle_server_solves_the_maze_through_the_agent(example_maze, key_env, client):
    protocol = Protocol(icl_example=False, observation="image")
    with ScriptedServer(mode="oracle", maze="example") as srv:
        agent = build_agent(config("openai/scripted", api_base=srv.url, api_key_env=key_env, client=client), protocol)
        state, history = env.initial_state(example_maze), []
        for n in range(1, 40):
            # each turn in its own event loop (as bench/serving_local.py plays): the openai
            # client must let go of the last loop's connection and open one in the new loop
            d = asyncio.run(agent.act(Turn(example_maze, protocol, n, state, tuple(history), 57)))
            nxt, event = env.step(example_maze, state, d.action)
            history.append(PastStep(n, d.action, event, state, nxt))
            state = nxt
            if event == "goal":
                break
        asyncio.run(agent.aclose())
    assert event == "goal" and n == solve(example_maze).optimal_actions


def test_hosted_vllm_switches_thinking_in_the_chat_template(example_maze, key_env, client):
    for thinking in (True, False):
        protocol = Protocol(icl_example=False, thinking=thinking)
        with ScriptedServer(script=["ACTION: left"]) as srv:
            act(agent_for(srv, key_env, client=client, protocol=protocol, model="hosted_vllm/scripted"),
                first_turn(example_maze, protocol))
            body = srv.chat_requests[0].body
        assert body["chat_template_kwargs"] == {"enable_thinking": thinking} and body["model"] == "scripted"
        assert "reasoning_effort" not in body and "thinking" not in body


def test_a_malformed_reply_from_hosted_vllm_is_retried(example_maze, key_env, client):
    with ScriptedServer(script=["malformed", "ACTION: left"]) as srv:
        d = act(agent_for(srv, key_env, client=client, model="hosted_vllm/scripted"), first_turn(example_maze))
        assert len(srv.chat_requests) == 2
    assert (d.action, d.usage.retries) == (0, 1)


def test_thinking_per_provider_without_network(monkeypatch):
    """The protocol's intent, as each provider family's request carries it (docs/providers.md)."""
    monkeypatch.setenv("GRIDBENCH_TEST_KEY", KEY)

    def agent(model, provider=None, **fields):
        return LLMAgent(config(model, api_key_env="GRIDBENCH_TEST_KEY", provider=provider), Protocol(**fields))

    def kwargs(model, provider=None, **fields):
        a = agent(model, provider, **fields)
        return a.transport.body([{"role": "user", "content": "hi"}]), a.budget

    def refused(field, model, provider=None, **fields):
        """Refused where it is checked, once: when a sweep holding it loads."""
        from orchestrator.sweep import parse_sweep

        entry = {"model": model, "api_key_env": "GRIDBENCH_TEST_KEY", **({"provider": provider} if provider else {})}
        with pytest.raises(BadInput) as err:
            parse_sweep({"mazes": ["example"], "models": [entry], "protocol": fields}, "t.yaml")
        assert err.value.field == f"protocol.{field}", err.value

    # Claude 4.7+: adaptive thinking with summarized display, an effort level, no sampling, no budget
    k, b = kwargs("anthropic/claude-opus-4-8", effort="xhigh")
    assert k["thinking"] == {"type": "adaptive", "display": "summarized"} and k["output_config"] == {"effort": "xhigh"}
    assert k["max_tokens"] == 64000 and not {"temperature", "seed", "top_p"} & set(k)
    assert b == Budget(thinking=True, reasoning_effort="xhigh", max_output_tokens=64000)
    k, b = kwargs("anthropic/claude-opus-4-8", thinking=False)
    assert "thinking" not in k and "output_config" not in k and b.thinking is False
    refused("thinking_budget", "anthropic/claude-opus-4-8", thinking_budget=8000)
    refused("temperature", "anthropic/claude-opus-4-8", temperature=1.0)
    refused("effort", "anthropic/claude-opus-4-8", effort="minimal")
    # older Claude: a token budget below the cap, and no temperature while thinking
    k, b = kwargs("anthropic/claude-opus-4-1", thinking_budget=16000)
    assert k["thinking"] == {"type": "enabled", "budget_tokens": 16000} and k["max_tokens"] == 64000
    assert (b.thinking, b.thinking_budget) == (True, 16000)
    refused("thinking_budget", "anthropic/claude-opus-4-1")  # it thinks only within a budget
    refused("thinking_budget", "anthropic/claude-opus-4-1", thinking_budget=64000)  # not below the cap
    refused("temperature", "anthropic/claude-opus-4-1", thinking_budget=2000, temperature=0.5)
    k, _ = kwargs("anthropic/claude-opus-4-1", thinking=False, temperature=0.5)
    assert k["temperature"] == 0.5 and "thinking" not in k
    # Kimi K2.6: its own switch, in litellm's extra_body; no effort control, fixed sampling
    k, b = kwargs("moonshot/kimi-k2.6", thinking=False)
    assert k["extra_body"] == {"thinking": {"type": "disabled"}} and k["max_tokens"] == 64000 and b.thinking is False
    refused("effort", "moonshot/kimi-k2.6", effort="high")
    refused("temperature", "moonshot/kimi-k2.6", temperature=0.6)
    # OpenAI reasoning models: reasoning_effort and max_completion_tokens; they always reason
    k, b = kwargs("openai/gpt-5", effort="minimal")
    assert (k["reasoning_effort"], k["max_completion_tokens"], b.reasoning_effort, b.thinking) == (
        "minimal", 64000, "minimal", True)
    assert "max_tokens" not in k and k["num_retries"] == 0 and "max_retries" not in k
    refused("thinking", "openai/o3", thinking=False)
    # vLLM: the chat template's switch; a thinking-token budget only with a reasoning parser
    k, b = kwargs("hosted_vllm/Qwen/Qwen3-8B", "vllm-reasoning", thinking_budget=32000)
    assert k["extra_body"] == {"chat_template_kwargs": {"enable_thinking": True}, "thinking_token_budget": 32000}
    assert b.thinking_budget == 32000 and k["max_completion_tokens"] == 64000
    refused("thinking_budget", "hosted_vllm/Qwen/Qwen3-8B", thinking_budget=32000)


def test_configuration_errors_are_bad_input(monkeypatch):
    monkeypatch.delenv("GRIDBENCH_UNSET_KEY", raising=False)
    with pytest.raises(BadInput, match="GRIDBENCH_UNSET_KEY"):
        build_agent(config("openai/x", api_key_env="GRIDBENCH_UNSET_KEY"), Protocol())
    with pytest.raises(BadInput, match="params.api_key"):
        config("openai/x", params={"api_key": "sk-inline-123456789"})
    with pytest.raises(BadInput, match="params.timeout"):
        config("openai/x", params={"timeout": "soon"})
    with pytest.raises(BadInput, match="params.retries"):
        config("openai/x", params={"retries": -1})
    with pytest.raises(BadInput, match="price"):
        config("openai/x", price={"input": 1e-6})
    for bad in ("httpx", "OpenAI", "", None):
        with pytest.raises(BadInput, match="client: must be one of auto, litellm, openai"):
            config("openai/x", api_base="http://127.0.0.1:1/v1", client=bad)
    with pytest.raises(BadInput, match="client: openai needs an OpenAI-compatible endpoint"):
        config("hosted_vllm/x", client="openai")
    with pytest.raises(BadInput, match="api_base"):
        config("hosted_vllm/x", api_base="127.0.0.1:8000/v1", client="openai")
    with pytest.raises(BadInput, match="thinking: thinking is set in the protocol now"):
        config("anthropic/claude-opus-4-8", thinking={"mode": "adaptive"})
    with pytest.raises(BadInput, match="provider: unknown provider family"):
        config("openai/x", provider="vllm-2")
    with pytest.raises(BadInput, match="params.max_tokens: set through the protocol's max_output_tokens"):
        config("openai/x", params={"max_tokens": 10})
    with pytest.raises(BadInput, match="params.extra_body.chat_template_kwargs.enable_thinking"):
        config("hosted_vllm/x", params={"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}})
    with pytest.raises(BadInput, match="params.top_p: Claude 4.7 and later"):
        config("anthropic/claude-opus-4-8", params={"top_p": 0.9})


def test_litellm_price_table_is_used_for_known_models(example_maze, key_env):
    with ScriptedServer(script=["ACTION: left"], reasoning=None) as srv:
        agent = agent_for(srv, key_env, model="openai/gpt-4o")
        d = act(agent, first_turn(example_maze))
        # the openai client has no price table: without a `price` a call costs nothing
        direct = act(agent_for(srv, key_env, model="openai/gpt-4o", client="openai"), first_turn(example_maze))
    info = litellm_module().get_model_info("gpt-4o")
    u = d.usage
    expected = u.tokens_in * info["input_cost_per_token"] + u.tokens_out * info["output_cost_per_token"]
    assert u.cost_usd > 0 and u.cost_usd == pytest.approx(expected)
    assert direct.usage.tokens_in == u.tokens_in and direct.usage.cost_usd == 0.0


def test_connection_refused_is_retried_then_an_infra_error(example_maze, key_env, client):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps = Sleeps()
    agent = LLMAgent(config("openai/scripted", api_base=f"http://127.0.0.1:{port}/v1", api_key_env=key_env,
                            client=client),
                     Protocol(icl_example=False), retry=RetryPolicy(max_retries=2, base_s=0.01, cap_s=0.02),
                     sleep=sleeps)
    with pytest.raises(InfraError) as err:
        act(agent, first_turn(example_maze))
    # litellm reports a refused connection as APIConnectionError or InternalServerError by provider;
    # the openai client as InternalServerError, what litellm says for OpenAI-compatible servers
    assert err.value.error_class in ("APIConnectionError", "InternalServerError")
    assert client == "litellm" or err.value.error_class == "InternalServerError"
    assert "connect" in str(err.value).lower() and len(sleeps.delays) == 2
    assert KEY not in str(err.value)


def test_anthropic_thinking_blocks_become_reasoning_with_estimated_tokens():
    lib = litellm_module()
    response = lib.ModelResponse(
        model="claude-opus-4-1",
        choices=[{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "ACTION: toggle",
            "thinking_blocks": [{"type": "thinking", "thinking": "The switch is under me.", "signature": "x"}]}}],
        usage={"prompt_tokens": 1000, "completion_tokens": 40, "total_tokens": 1040},
    )
    agent = LLMAgent(config("anthropic/claude-opus-4-1", price={"input": 1e-6, "output": 1e-5}),
                     Protocol(thinking_budget=4096))
    result = agent.caller.accounted(Answer(read_response(response), response=response), 0.5)
    assert result.reasoning == "The switch is under me." and result.reply == "ACTION: toggle"
    u = result.usage
    assert u.reasoning_estimated and 0 < u.tokens_reasoning < 40 and u.latency_s == 0.5
    assert u.cost_usd == pytest.approx(1000 * 1e-6 + 40 * 1e-5)


def test_openai_client_body_is_what_an_openai_compatible_server_expects(example_maze, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    params = {"top_p": 0.8, "timeout": 30, "retries": 1,
              "extra_body": {"top_k": 20, "chat_template_kwargs": {"custom": 1}}}
    with ScriptedServer(script=["ACTION: left"]) as srv:
        agent = LLMAgent(config("hosted_vllm/Qwen/Qwen3-8B", api_base=srv.url + "/", params=params, client="openai"),
                         Protocol(icl_example=False), seed=5)
        d = act(agent, first_turn(example_maze))
        (req,) = srv.chat_requests
    body = req.body
    assert d.action == 0 and req.path == "/v1/chat/completions"  # the trailing slash is tolerated
    assert body["model"] == "Qwen/Qwen3-8B" and body["seed"] == call_seed(5, 1, 0) and body["top_p"] == 0.8
    assert body["top_k"] == 20 and body["chat_template_kwargs"] == {"enable_thinking": True, "custom": 1}
    assert not {"extra_body", "timeout", "retries", "num_retries", "api_base", "api_key"} & set(body)
    assert body["messages"] == agent.transport.body(body["messages"])["messages"]
    assert req.headers["authorization"] == "Bearer EMPTY"  # a custom endpoint never gets a provider key
    assert agent.config.timeout_s == 30 and agent.caller.retry.max_retries == 1
    # a provider's prefix is dropped as litellm drops it (the openai client sends what litellm sends);
    # a first part that names no provider is part of the name
    assert [request_name(m) for m in ("openai/scripted", "hosted_vllm/a/b", "together_ai/x", "moonshot/kimi-k2.6",
                                      "org/model", "plain")] == ["scripted", "a/b", "x", "kimi-k2.6", "org/model", "plain"]


def test_openai_client_reads_either_reasoning_field_and_maps_statuses_as_litellm():
    def payload(message):
        return {"choices": [{"message": {"role": "assistant", "content": None, **message}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3}}

    newer = read_completion(payload({"reasoning": "newer vLLM"}))
    older = read_completion(payload({"reasoning_content": "older vLLM"}))
    assert (newer.reasoning, older.reasoning, newer.reply, newer.finish_reason) == ("newer vLLM", "older vLLM", "",
                                                                                    "length")
    assert (newer.usage.tokens_in, newer.usage.tokens_out, newer.usage.tokens_reasoning) == (7, 3, 0)
    for broken, error_class in (({"choices": []}, "EmptyChoices"), ([1], "EmptyChoices"),
                                ({"choices": [{"message": "hi"}]}, "InternalServerError"),
                                ({**payload({}), "usage": {"completion_tokens": "many"}}, "InternalServerError")):
        with pytest.raises(EndpointError) as err:
            read_completion(broken)
        assert (err.value.error_class, err.value.retryable) == (error_class, True)
    # the classes litellm's exception mapping gives these statuses for OpenAI-compatible servers
    expected = {400: ("BadRequestError", False), 401: ("AuthenticationError", False),
                403: ("PermissionDeniedError", False), 404: ("NotFoundError", False), 408: ("Timeout", True),
                418: ("BadRequestError", False), 422: ("BadRequestError", False), 429: ("RateLimitError", True),
                500: ("InternalServerError", True), 502: ("BadGatewayError", True),
                503: ("ServiceUnavailableError", True), 504: ("Timeout", True), 507: ("APIError", True)}
    assert {status: classify_status(status, "no") for status in expected} == expected
    vllm = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"
    llama_cpp = "the request exceeds the available context size, try increasing it"
    assert classify_status(400, vllm) == classify_status(400, llama_cpp) == ("ContextWindowExceededError", False)


def test_the_openai_client_never_imports_litellm(tmp_path):
    script = textwrap.dedent("""
        import asyncio, sys
        import env
        from agents import ModelConfig, Protocol, Turn, build_agent
        from testing.scripted_server import ScriptedServer

        async def play(agent, maze, protocol):
            state, history, actions = env.initial_state(maze), [], []
            for n in range(1, 4):
                d = await agent.act(Turn(maze, protocol, n, state, tuple(history), 57))
                actions.append(d.action)
                state, _ = env.step(maze, state, d.action)
            await agent.aclose()
            return actions

        maze = env.resolve_maze("example")
        protocol = Protocol(icl_example=False, observation="image")
        with ScriptedServer(mode="oracle", maze="example") as srv:
            agent = build_agent(ModelConfig.for_model("hosted_vllm/scripted", api_base=srv.url, client="openai"),
                                protocol)
            actions = asyncio.run(play(agent, maze, protocol))
            assert len(srv.chat_requests) == 3
        assert None not in actions, actions
        print("litellm" in sys.modules, sorted(m for m in sys.modules if m.split(".")[0] in ("openai", "httpx")))
    """)
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["False", "[]"]


def test_anthropic_requests_mark_the_fixed_prefix_for_caching_and_cached_tokens_are_priced(example_maze, key_env):
    """Through litellm's Anthropic provider to the scripted server's /v1/messages: the end of the
    fixed preamble carries cache_control on the wire; the second turn reads it from the cache, and
    those tokens are recorded and priced at the cache rate. The prompt hash ignores the marker."""
    protocol = Protocol(observation="image+text", thinking=False)
    price = {"input": 1e-6, "output": 5e-6, "cached_input": 1e-7}
    with ScriptedServer(script=["ACTION: forward", "ACTION: left"]) as srv:
        agent = LLMAgent(config("anthropic/claude-opus-4-8", api_base=srv.url.removesuffix("/v1"), api_key_env=key_env,
                                price=price), protocol, retry=FAST)
        s0 = env.initial_state(example_maze)
        s1, event = env.step(example_maze, s0, 2)

        async def two_turns():
            first = await agent.act(Turn(example_maze, protocol, 1, s0, (), 57))
            second = await agent.act(Turn(example_maze, protocol, 2, s1, (PastStep(1, 2, event, s0, s1),), 57))
            await agent.aclose()
            return first, second

        first, second = asyncio.run(two_turns())
        wire = [r.wire for r in srv.chat_requests]
    assert all(r.path.endswith("/v1/messages") for r in srv.chat_requests)
    marked = [b for m in wire[0]["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
              if b.get("cache_control")]
    assert len(marked) == 1 and marked[0]["cache_control"] == {"type": "ephemeral"}
    assert first.usage.tokens_cached == 0 and second.usage.tokens_cached > 0
    u = second.usage
    expected = (u.tokens_in - u.tokens_cached) * 1e-6 + u.tokens_cached * 1e-7 + u.tokens_out * 5e-6
    assert u.cost_usd == pytest.approx(expected) and u.cost_usd < u.tokens_in * 1e-6 + u.tokens_out * 5e-6
    # what the model reads is the protocol's prompt, byte for byte: only the marker was added
    text = "".join(b.get("text", "") for m in wire[0]["messages"] for b in m["content"] if b["type"] == "text")
    from agents.prompt import build_messages, render_for_humans

    plain = build_messages(Turn(example_maze, protocol, 1, s0, (), 57))
    assert text == "".join(p["text"] for p in plain[0]["content"] if p["type"] == "text")
    assert first.prompt_hash and "[image" in render_for_humans(plain)


def test_each_retried_failure_is_recorded_in_the_steps_failures_column(example_maze, key_env, client, tmp_path):
    """A 429 (Retry-After 2 s) and a 503 before the answer: the step's ``failures`` column holds
    both, in order, with their classes, when they failed and the seconds waited after each; the
    column is written and read back with the step, and never holds the provider's message."""
    from datetime import UTC, datetime

    from episodes.episode import run_episode
    from traces import EpisodeIdentity, read_run, write_episode

    sleeps = Sleeps()
    protocol = Protocol(icl_example=False, step_cap_factor=1)
    before = datetime.now(UTC)
    with ScriptedServer(script=[{"fault": "429", "retry_after": 2}, "503", "ACTION: left"]) as srv:
        agent = agent_for(srv, key_env, protocol, client=client, sleep=sleeps)
        identity = EpisodeIdentity(run="t", episode_id="e", model_name="m", model="openai/scripted",
                                   condition="baseline", repeat=0, maze_id=example_maze.id)
        result = asyncio.run(run_episode(example_maze, agent, protocol, identity))
    first = result.steps[0]
    failures = json.loads(first.failures)
    assert [f["class"] for f in failures] == ["RateLimitError", "ServiceUnavailableError"]
    assert [f["waited_s"] for f in failures] == [round(s, 3) for s in sleeps.delays[:2]]
    assert 2.0 <= failures[0]["waited_s"] <= 2.2 and failures[1]["waited_s"] <= FAST.cap_s
    at = [datetime.fromisoformat(f["at"]) for f in failures]
    assert before <= at[0] <= at[1] <= datetime.now(UTC)
    assert "overloaded" not in first.failures and "Rate limit" not in first.failures
    assert first.usage.retries == 2 and all(s.failures is None for s in result.steps[1:])
    write_episode(tmp_path, result)
    _, steps = read_run(tmp_path)
    assert steps.sort_values("step")["failures"].tolist()[0] == first.failures
    # a run recorded before the column existed reads it as null: the fixed schema fills it in
    import pyarrow.parquet as pq

    for f in (tmp_path / "steps").glob("*.parquet"):
        pq.write_table(pq.read_table(f).drop_columns(["failures"]), f)
    _, old = read_run(tmp_path)
    assert old["failures"].isna().all() and len(old) == len(steps)
