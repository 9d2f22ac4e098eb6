"""Every model entry and every condition of every shipped sweep, against the persona of its provider.

The scripted server's personas behave as the real providers document (testing/personas.py,
docs/providers.md), without reading gridbench's provider table: Anthropic for Claude, Moonshot
for Kimi, vLLM started from the exact command line gridbench builds for a served model, llama.cpp
for the bundled model. Each entry x condition plays one episode on a two-step corridor through
the real transport (litellm's own request transformation for Claude and Kimi, the openai client
for served models), with no error episode, and every step's budget columns are what the persona
applied to that step's request. Which sweeps, entries and conditions: whatever the shipped sweeps
hold when the test runs. The bodies sent to Claude are also checked against the anthropic SDK's
own request types.
"""

from __future__ import annotations

import asyncio
import typing
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from agents import build_agent
from episodes.episode import run_episode
from orchestrator.serving.command_lines import vllm_command
from orchestrator.sweep import load_sweep, model_conditions, shipped_sweeps
from testing.scripted_server import ScriptedServer
from traces import EpisodeIdentity

TINY = Path(__file__).resolve().parent / "tiny"
ENTRIES = [(sweep, m.name) for sweep in shipped_sweeps() for m in load_sweep(sweep).models if not m.builtin]


def persona_for(sweep, model) -> tuple[dict, str]:
    """The scripted server's options for a model entry, from its model string and serve spec, and
    how its api_base is written (Anthropic's without ``/v1``)."""
    prefix = model.model.split("/", 1)[0]
    if model.serve is not None and model.serve.engine == "vllm":
        argv = vllm_command(model.model, sweep.serve_spec(model), host="127.0.0.1", port=8400)
        return {"persona": "vllm", "vllm_argv": argv}, "v1"
    if model.serve is not None:
        return {"persona": "llama-cpp"}, "v1"
    if prefix == "anthropic":
        return {}, "root"
    if prefix == "moonshot":
        return {"persona": "moonshot"}, "v1"
    if model.config.family.name.startswith("openai-reasoning"):
        return {"persona": "openai-reasoning"}, "v1"
    return {}, "v1"


@pytest.mark.parametrize("sweep_name, entry", ENTRIES, ids=[f"{s}-{e}" for s, e in ENTRIES])
def test_every_condition_of_a_shipped_entry_runs_against_its_provider(sweep_name, entry, monkeypatch):
    sweep = load_sweep(sweep_name, mazes=str(TINY))
    (maze,) = sweep.sources  # a sweep's twins (attribution's) are other mazes, not other requests
    model = next(m for m in sweep.models if m.name == entry)
    if model.config.api_key_env:
        monkeypatch.setenv(model.config.api_key_env, "sk-persona-test-key-0123456789")
    options, base = persona_for(sweep, model)
    with ScriptedServer(mode="oracle", maze=maze, model=model.config.request_name, **options) as srv:
        url = srv.url.removesuffix("/v1") if base == "root" else srv.url
        for cond in model_conditions(model, sweep.conditions):
            srv.requests.clear()
            config = model.config if model.serve is not None else replace(model.config, api_base=url)
            if config.tier == "batch":  # a batch's bodies are these requests; here they go one by one
                config = replace(config, tier="standard")
            agent = build_agent(config, cond.protocol, endpoint=url if model.serve is not None else None)
            identity = EpisodeIdentity(run="personas", episode_id=f"{entry}-{cond.name}", model_name=entry,
                                       model=model.model, condition=cond.name, repeat=0, maze_id=maze.id)

            async def play(agent=agent, cond=cond, identity=identity):
                try:
                    return await run_episode(maze, agent, cond.protocol, identity)
                finally:
                    await agent.aclose()

            result = asyncio.run(play())
            ep = result.episode
            assert ep.termination == "solved", (cond.name, ep.error_class, ep.error_message)
            answered = [r for r in srv.chat_requests if r.applied is not None]  # taken, not refused
            # a query is not a step: under subgoal or trajectory querying one call gives both steps
            asked = [s for s in result.steps if s.usage.calls]
            assert len(result.steps) == 2 and len(answered) == len(asked) == sum(s.usage.calls for s in asked), \
                cond.name
            for step, request in zip(asked, answered, strict=True):
                assert asdict(step.budget) == request.applied, (cond.name, step.step)
                if request.applied["thinking"] and model.model.startswith(("anthropic/", "moonshot/")):
                    assert step.reasoning, (cond.name, "thinking on, but no reasoning text came back")
                if model.model.startswith("anthropic/"):
                    check_anthropic_body(request.wire)
                if options.get("persona") == "openai-reasoning":  # as the study's OpenAI agent: no seed
                    assert "seed" not in request.body, (cond.name, step.step)
            # cached prompt tokens come back in each provider's own shape (Anthropic's cache reads,
            # Moonshot's top-level count, vLLM's details under --enable-prompt-tokens-details);
            # OpenAI caches prompts of 1,024 tokens or more only, and a tiny maze's are shorter
            if options.get("persona") != "llama-cpp" and not model.model.startswith("openai/") and len(asked) > 1:
                assert asked[-1].usage.tokens_cached > 0, cond.name
            if options.get("persona") == "moonshot" and cond.protocol.thinking:
                assert all(s.usage.reasoning_estimated and s.usage.tokens_reasoning for s in asked)


def check_anthropic_body(body: dict) -> None:
    """The body litellm sent is a valid ``MessageCreateParams`` of the anthropic SDK, with no key
    the SDK's request type does not have."""
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from pydantic import TypeAdapter

    known = set(typing.get_type_hints(MessageCreateParamsNonStreaming))
    assert set(body) <= known, set(body) - known
    TypeAdapter(MessageCreateParamsNonStreaming).validate_python(body)


def test_the_personas_refuse_what_the_providers_refuse():
    """Each layer the shipped entries pass can say no: what gridbench sent before it knew the
    providers' contracts is refused, as the real providers refuse it."""
    import httpx

    def post(srv, path, body):
        return httpx.post(srv.url.removesuffix("/v1") + path, json=body, timeout=10)

    hi = [{"role": "user", "content": "hi"}]
    with ScriptedServer(script=["ACTION: left"]) as srv:
        r = post(srv, "/v1/messages", {"model": "claude-opus-4-8", "max_tokens": 70000, "temperature": 1.0,
                                       "messages": hi})
        assert r.status_code == 400 and "`temperature` is deprecated for this model." in r.text
        r = post(srv, "/v1/messages", {"model": "claude-opus-4-8", "max_tokens": 70000, "messages": hi,
                                       "thinking": {"type": "enabled", "budget_tokens": 64000}})
        assert r.status_code == 400 and "thinking.type.enabled" in r.text
        r = post(srv, "/v1/messages", {"model": "claude-opus-4-8", "max_tokens": 9000, "messages": hi,
                                       "thinking": {"type": "adaptive"}})
        blocks = r.json()["content"]
        assert blocks[0]["type"] == "thinking" and blocks[0]["thinking"] == ""  # display omitted by default
        assert r.json()["usage"]["output_tokens_details"]["thinking_tokens"] > 0
    with ScriptedServer(script=["ACTION: left"], persona="moonshot") as srv:
        r = post(srv, "/v1/chat/completions", {"model": "kimi-k2.6", "messages": hi, "temperature": 1.0,
                                               "thinking": {"type": "disabled"}})
        assert r.status_code == 400 and "only 0.6 is allowed" in r.text
        r = post(srv, "/v1/chat/completions", {"model": "kimi-k2.6", "messages": hi, "reasoning_effort": "high"})
        assert r.json()["choices"][0]["message"]["reasoning_content"]  # it thinks unless disabled
    argv = ["vllm", "serve", "Q", "--limit-mm-per-prompt", '{"image": 4, "video": 0}', "--max-model-len", "1000"]
    with ScriptedServer(script=["ACTION: left"], persona="vllm", vllm_argv=argv) as srv:
        from agents.prompt import build_messages
        from agents.protocol import Protocol
        from agents.types import Turn
        from env import initial_state, resolve_maze

        maze = resolve_maze("example")
        messages = build_messages(Turn(maze, Protocol(), 1, initial_state(maze), (), 1))  # the final protocol
        r = post(srv, "/v1/chat/completions", {"model": "Q", "messages": messages, "max_tokens": 100})
        assert r.status_code == 400 and r.json()["error"]["message"] == "At most 4 image(s) may be provided in one prompt."
        r = post(srv, "/v1/chat/completions", {"model": "Q", "messages": hi, "max_tokens": 64000})
        assert r.status_code == 400 and "maximum context length is 1000 tokens" in r.text
        r = post(srv, "/v1/chat/completions", {"model": "Q", "messages": hi, "thinking_token_budget": 64})
        assert r.status_code == 400 and "reasoning_config is not configured" in r.text
        r = post(srv, "/v1/chat/completions", {"model": "Q", "messages": hi, "max_tokens": 10})
        answer = r.json()
        assert "<think>" in answer["choices"][0]["message"]["content"]  # no reasoning parser: inline
        assert "prompt_tokens_details" not in answer["usage"]  # no --enable-prompt-tokens-details
