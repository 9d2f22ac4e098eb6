"""The litellm agent against the scripted server over real HTTP on 127.0.0.1."""

import asyncio
import logging

import pytest

import env
from agents import InfraError, Protocol, Turn, build_agent
from agents.llm import LLMAgent, RetryPolicy, effort_for_budget, litellm_module
from agents.scripted_server import ScriptedServer
from agents.types import PastStep
from env.errors import BadInput
from env.oracle import solve

KEY = "sk-gridbench-FAKE-7f3a9c1e5b2d4f60"
FAST = RetryPolicy(max_retries=6, base_s=0.01, cap_s=0.05)


@pytest.fixture(scope="module", autouse=True)
def _litellm_loaded():
    litellm_module()  # import once, outside any test's own work


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


def agent_for(srv, key_env, protocol=None, model="openai/scripted", **kw):
    kw.setdefault("retry", FAST)
    kw.setdefault("sleep", Sleeps())
    return LLMAgent(model, protocol or Protocol(icl_example=False), api_base=srv.url, api_key_env=key_env,
                    seed=kw.pop("seed", 11), **kw)


def first_turn(maze, protocol=None):
    protocol = protocol or Protocol(icl_example=False)
    return Turn(maze, protocol, 1, env.initial_state(maze), (), 57)


def act(agent, turn):
    return asyncio.run(agent.act(turn))


def test_one_request_per_turn_with_pinned_sampling_and_accounting(example_maze, key_env):
    reply = "The corridor continues east.\nACTION: forward"
    with ScriptedServer(script=[{"reply": reply, "reasoning": "r" * 400}]) as srv:
        agent = agent_for(srv, key_env, protocol=Protocol(icl_example=False, temperature=0.3,
                                                             max_output_tokens=5000))
        d = act(agent, first_turn(example_maze, agent.protocol))
        (req,) = srv.chat_requests
    assert (d.action, d.parse, d.reply, d.finish_reason, d.retries, d.reasks) == (2, "exact", reply, "stop", 0, 0)
    assert d.reasoning == "r" * 400 and d.tokens_reasoning == 100 and not d.reasoning_estimated
    assert d.tokens_in > 0 and d.tokens_out == 100 + (len(reply) + 3) // 4
    assert d.latency_s > 0 and d.cost_usd == 0.0  # not in litellm's price table
    body = req.body
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.3, 5000, 11)
    assert body["reasoning_effort"] == "high"  # thinking on, 64k budget, OpenAI-style provider
    assert req.headers.get("authorization") == f"Bearer {KEY}"
    assert len(req.images()) == 1 and req.images()[0].startswith("data:image/png;base64,")
    assert d.image_hashes and len(d.prompt_hash) == 16
    assert KEY not in repr(d)


def test_price_per_token_and_estimated_reasoning(example_maze, key_env):
    with ScriptedServer(script=["ACTION: left"], reasoning="thinking " * 50, report_reasoning_tokens=False) as srv:
        agent = agent_for(srv, key_env, price={"input": 1e-6, "output": 3e-6})
        d = act(agent, first_turn(example_maze))
    assert d.reasoning_estimated and d.tokens_reasoning > 0
    assert d.cost_usd == pytest.approx(d.tokens_in * 1e-6 + d.tokens_out * 3e-6)


def test_transient_faults_are_retried_and_retry_after_is_honoured(example_maze, key_env):
    script = [{"fault": "429", "retry_after": 2}, "500", "503", "malformed", "empty_choices", "hang",
              "ACTION: toggle"]
    sleeps = Sleeps()
    with ScriptedServer(script=script, hang_s=30) as srv:
        agent = agent_for(srv, key_env, sleep=sleeps, params={"timeout": 1})
        d = act(agent, first_turn(example_maze))
        requests = len(srv.chat_requests)
    assert d.action == 4 and d.retries == 6 and requests == 7  # exactly one HTTP request per attempt
    assert 2.0 <= sleeps.delays[0] <= 2.2  # Retry-After wins over the backoff
    assert all(delay <= FAST.cap_s for delay in sleeps.delays[1:])


def test_exhausted_retries_raise_infra_error(example_maze, key_env):
    with ScriptedServer(script=["503"]) as srv:
        agent = agent_for(srv, key_env, retry=RetryPolicy(max_retries=3, base_s=0.01, cap_s=0.02))
        with pytest.raises(InfraError) as err:
            act(agent, first_turn(example_maze))
        assert len(srv.chat_requests) == 4
    assert err.value.error_class == "ServiceUnavailableError" and "4 attempts" in str(err.value)


@pytest.mark.parametrize("fault, error_class", [
    ("401", "AuthenticationError"), ("400", "BadRequestError"), ("context_length", "ContextWindowExceededError"),
])
def test_permanent_errors_fail_at_once_without_the_key(fault, error_class, example_maze, key_env, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    with ScriptedServer(script=[fault, "ACTION: left"]) as srv:
        agent = agent_for(srv, key_env)
        with pytest.raises(InfraError) as err:
            act(agent, first_turn(example_maze))
        assert len(srv.chat_requests) == 1
    assert err.value.error_class == error_class
    out, errout = capfd.readouterr()
    for recorded in (str(err.value), caplog.text, out, errout):
        assert KEY not in recorded and KEY[8:20] not in recorded


def test_cut_off_reply_is_an_invalid_model_answer_not_an_error(example_maze, key_env):
    with ScriptedServer(script=["length"]) as srv:
        d = act(agent_for(srv, key_env), first_turn(example_maze))
        assert len(srv.chat_requests) == 1
    assert (d.action, d.parse, d.finish_reason, d.reply, d.retries) == (None, "invalid", "length", "", 0)


def test_reask_asks_again_at_most_twice(example_maze, key_env):
    protocol = Protocol(icl_example=False, invalid_output="reask")
    with ScriptedServer(script=["hmm", "I am not sure", "ACTION: right"]) as srv:
        d = act(agent_for(srv, key_env, protocol=protocol), first_turn(example_maze, protocol))
        last = srv.chat_requests[-1].body["messages"]
        assert len(srv.chat_requests) == 3
    assert (d.action, d.parse, d.reasks) == (1, "exact", 2)
    assert [m["role"] for m in last[-4:]] == ["assistant", "user", "assistant", "user"]
    assert last[-4]["content"] == "hmm" and d.reply.endswith("ACTION: right")
    with ScriptedServer(mode="garbage") as srv:
        d = act(agent_for(srv, key_env, protocol=protocol), first_turn(example_maze, protocol))
        assert len(srv.chat_requests) == 3
    assert (d.action, d.parse, d.reasks) == (None, "invalid", 2)
    with ScriptedServer(mode="garbage") as srv:  # noop: no second chance
        d = act(agent_for(srv, key_env), first_turn(example_maze))
        assert len(srv.chat_requests) == 1
    assert (d.action, d.parse, d.reasks) == (None, "invalid", 0)


def test_multi_conversation_carries_the_agents_own_replies(example_maze, key_env):
    protocol = Protocol(icl_example=False, conversation="multi")
    with ScriptedServer(script=["first thoughts\nACTION: forward", "ACTION: left"]) as srv:
        agent = agent_for(srv, key_env, protocol=protocol)
        s0 = env.initial_state(example_maze)
        act(agent, Turn(example_maze, protocol, 1, s0, (), 57))
        s1, event = env.step(example_maze, s0, 2)
        act(agent, Turn(example_maze, protocol, 2, s1, (PastStep(1, 2, event, s0, s1),), 57))
        messages = srv.chat_requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "first thoughts\nACTION: forward"


def test_an_oracle_server_solves_the_maze_through_the_agent(example_maze, key_env):
    protocol = Protocol(icl_example=False, observation="image")
    with ScriptedServer(mode="oracle", maze="example") as srv:
        agent = build_agent("openai/scripted", protocol, api_base=srv.url, api_key_env=key_env)
        state, history = env.initial_state(example_maze), []
        for n in range(1, 40):
            d = act(agent, Turn(example_maze, protocol, n, state, tuple(history), 57))
            nxt, event = env.step(example_maze, state, d.action)
            history.append(PastStep(n, d.action, event, state, nxt))
            state = nxt
            if event == "goal":
                break
    assert event == "goal" and n == solve(example_maze).optimal_actions


def test_hosted_vllm_switches_thinking_in_the_chat_template(example_maze, key_env):
    for thinking in (True, False):
        protocol = Protocol(icl_example=False, thinking=thinking)
        with ScriptedServer(script=["ACTION: left"]) as srv:
            act(agent_for(srv, key_env, protocol=protocol, model="hosted_vllm/scripted"),
                first_turn(example_maze, protocol))
            body = srv.chat_requests[0].body
        assert body["chat_template_kwargs"] == {"enable_thinking": thinking}
        assert "reasoning_effort" not in body and "thinking" not in body


def test_thinking_per_provider_without_network():
    def kwargs(model, **fields):
        agent = LLMAgent(model, Protocol(**fields))
        return agent.request_kwargs([{"role": "user", "content": "hi"}])

    k = kwargs("anthropic/claude-opus-4-1")
    assert k["thinking"] == {"type": "enabled", "budget_tokens": 64000} and k["max_tokens"] == 70000
    k = kwargs("anthropic/claude-opus-4-1", thinking_budget=100000)
    assert k["max_tokens"] > 100000  # Anthropic wants max tokens above the budget
    assert "thinking" not in kwargs("anthropic/claude-opus-4-1", thinking=False)
    assert "seed" not in kwargs("anthropic/claude-opus-4-1")  # Anthropic takes no seed
    assert kwargs("openai/gpt-5", thinking_budget=2000)["reasoning_effort"] == "low"
    assert "reasoning_effort" not in kwargs("openai/gpt-5", thinking=False)
    assert kwargs("openai/gpt-5")["num_retries"] == 0 and "max_retries" not in kwargs("openai/gpt-5")
    assert [effort_for_budget(b) for b in (1024, 16000, 64000)] == ["low", "medium", "high"]


def test_configuration_errors_are_bad_input(monkeypatch):
    monkeypatch.delenv("GRIDBENCH_UNSET_KEY", raising=False)
    with pytest.raises(BadInput, match="GRIDBENCH_UNSET_KEY"):
        build_agent("openai/x", Protocol(), api_key_env="GRIDBENCH_UNSET_KEY")
    with pytest.raises(BadInput, match="params.api_key"):
        build_agent("openai/x", Protocol(), params={"api_key": "sk-inline-123456789"})
    with pytest.raises(BadInput, match="params.timeout"):
        build_agent("openai/x", Protocol(), params={"timeout": "soon"})
    with pytest.raises(BadInput, match="params.retries"):
        build_agent("openai/x", Protocol(), params={"retries": -1})
    with pytest.raises(BadInput, match="price.output"):
        build_agent("openai/x", Protocol(), price={"input": 1e-6})


def test_litellm_price_table_is_used_for_known_models(example_maze, key_env):
    with ScriptedServer(script=["ACTION: left"], reasoning=None) as srv:
        agent = agent_for(srv, key_env, model="openai/gpt-4o")
        d = act(agent, first_turn(example_maze))
    info = litellm_module().get_model_info("gpt-4o")
    expected = d.tokens_in * info["input_cost_per_token"] + d.tokens_out * info["output_cost_per_token"]
    assert d.cost_usd > 0 and d.cost_usd == pytest.approx(expected)


def test_connection_refused_is_retried_then_an_infra_error(example_maze, key_env):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps = Sleeps()
    agent = LLMAgent("openai/scripted", Protocol(icl_example=False), api_base=f"http://127.0.0.1:{port}/v1",
                     api_key_env=key_env, retry=RetryPolicy(max_retries=2, base_s=0.01, cap_s=0.02), sleep=sleeps)
    with pytest.raises(InfraError) as err:
        act(agent, first_turn(example_maze))
    # litellm reports a refused connection as APIConnectionError or InternalServerError by provider
    assert err.value.error_class in ("APIConnectionError", "InternalServerError")
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
    agent = LLMAgent("anthropic/claude-opus-4-1", Protocol(), price={"input": 1e-6, "output": 1e-5})
    result = agent._read(response, 0.5)
    assert result.reasoning == "The switch is under me." and result.reply == "ACTION: toggle"
    assert result.reasoning_estimated and 0 < result.tokens_reasoning < 40
    assert result.cost_usd == pytest.approx(1000 * 1e-6 + 40 * 1e-5)
