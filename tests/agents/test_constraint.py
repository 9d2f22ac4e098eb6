"""Constrained decoding (the protocol's ``constrain``): the replies it admits are exact actions to
the parser, each engine's request carries its own mechanism (recorded per step), and a provider
with none refuses it when the sweep loads."""

import asyncio
import re

import pytest

import env
from agents import Protocol, Turn, resolve_protocol
from agents.caller import RetryPolicy
from agents.constraint import answer_lines, gbnf, regex
from agents.llm import LLMAgent
from agents.model import ModelConfig
from agents.parse import parse_action, parse_study
from env.errors import BadInput
from orchestrator.sweep import parse_sweep
from testing.scripted_server import ScriptedServer

STYLES = {"gridbench": {}, "study": {"preset": "study-baseline"},
          "study-cardinal": {"preset": "study-baseline", "action_space": "cardinal"}}


def parsed(protocol, reply):
    if protocol.style == "study":
        return parse_study(reply, action_space=protocol.action_space).status
    return parse_action(reply)[1]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("mode", ["action", "reasoning+action"])
def test_every_reply_the_constraint_admits_is_an_exact_action(style, mode):
    p = resolve_protocol({**STYLES[style], "constrain": mode})
    pattern = re.compile(regex(p))
    free = ("", "I face the wall.\n", "Left is blocked; right is open.\n\nI will turn right (or left?).\n",
            "ACTION: left\nFINAL_OUTPUT: PICKUP\nthen\n")
    for line in answer_lines(p):
        for before in free if mode == "reasoning+action" else ("",):
            reply = before + line
            assert pattern.fullmatch(reply), reply
            assert parsed(p, reply) == "exact", reply
    # and nothing else: the answer line alone, or with text after it, or a reasoning block before it
    assert not pattern.fullmatch(answer_lines(p)[0] + "\n")
    assert not pattern.fullmatch("ACTION: jump") and not pattern.fullmatch("<think>\n" + answer_lines(p)[0])
    assert bool(pattern.fullmatch("Thinking.\n" + answer_lines(p)[0])) == (mode == "reasoning+action")
    # the grammar holds the same answer lines and the same free text
    grammar = gbnf(p)
    assert all(f'"{line}"' in grammar for line in answer_lines(p))
    assert ("line*" in grammar) == (mode == "reasoning+action")


def test_llama_cpp_compiles_every_grammar():
    llama_cpp = pytest.importorskip("llama_cpp")
    for style in STYLES.values():
        for mode in ("action", "reasoning+action"):
            llama_cpp.LlamaGrammar.from_string(gbnf(resolve_protocol({**style, "constrain": mode})), verbose=False)


def test_the_field_keeps_old_protocols_and_takes_one_action_per_query():
    assert "constrain" not in Protocol().to_json()
    assert Protocol().to_json() == Protocol(constrain="none").to_json()
    constrained = resolve_protocol({"constrain": "action"})
    assert '"constrain":"action"' in constrained.to_json() and constrained.hash != Protocol().hash
    assert constrained.changed_fields(Protocol()) == ["constrain"]
    with pytest.raises(BadInput) as err:
        resolve_protocol({"preset": "study-baseline", "querying": "trajectory", "constrain": "action"})
    assert err.value.field == "constrain"
    with pytest.raises(BadInput, match="constrain"):
        resolve_protocol({"constrain": "json"})


def sweep(model, protocol, **entry):
    return {"name": "t", "mazes": ["example"], "protocol": {"observation": "text", **protocol},
            "models": [{"name": "m", "model": model, **entry}]}


@pytest.mark.parametrize("model, entry, protocol, why", [
    ("anthropic/claude-opus-4-8", {}, {}, "constrains replies to JSON at most"),
    ("openai/gpt-5", {}, {}, "constrains replies to JSON at most"),
    ("moonshot/kimi-k2.6", {}, {"thinking": False}, "constrains replies to JSON at most"),
    ("openai/gpt-4o", {}, {}, "name provider: llama-cpp or vllm"),
    ("openai/my-model", {"api_base": "http://127.0.0.1:9/v1"}, {}, "name provider: llama-cpp or vllm"),
    ("hosted_vllm/Qwen/Qwen3-8B", {"api_base": "http://127.0.0.1:9/v1"}, {}, "leaves thinking inside the reply"),
])
def test_a_provider_without_a_constraint_refuses_it_at_load(model, entry, protocol, why):
    with pytest.raises(BadInput) as err:
        parse_sweep(sweep(model, {**protocol, "constrain": "action"}, **entry), "s.yaml")
    assert err.value.field == "protocol.constrain" and why in str(err.value), err.value


def test_engines_that_constrain_are_taken_at_load():
    served = {"serve": {"engine": "vllm", "reasoning_parser": "qwen3"}}
    for model, entry, protocol in [
        ("openai/m", {"serve": {"engine": "llama_cpp", "model": "m.gguf"}}, {}),
        ("hosted_vllm/Qwen/Qwen3-8B", served, {}),
        ("hosted_vllm/Qwen/Qwen3-8B", {"api_base": "http://127.0.0.1:9/v1"}, {"thinking": False}),
        ("openai/m", {"api_base": "http://127.0.0.1:9/v1", "provider": "llama-cpp"}, {}),
    ]:
        s = parse_sweep(sweep(model, {**protocol, "constrain": "reasoning+action"}, **entry), "s.yaml")
        assert s.conditions[0].protocol.constrain == "reasoning+action"


def test_params_may_not_set_a_constraint_of_their_own():
    for params in ({"grammar": "root ::= \"x\""}, {"extra_body": {"structured_outputs": {"choice": ["x"]}}},
                   {"guided_choice": ["x"]}):
        with pytest.raises(BadInput, match="set through the protocol's constrain"):
            ModelConfig.for_model("openai/m", api_base="http://127.0.0.1:9/v1", params=params)


def one_step(srv, model, protocol, **entry):
    agent = LLMAgent(ModelConfig.for_model(model, api_base=srv.url, **entry), protocol,
                     retry=RetryPolicy(max_retries=0))
    maze = env.resolve_maze("example")

    async def go():
        try:
            return await agent.act(Turn(maze, protocol, 1, env.initial_state(maze), (), 19))
        finally:
            await agent.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("client", ["openai", "litellm"])
def test_llama_cpp_requests_carry_the_grammar_and_the_step_records_it(client):
    protocol = resolve_protocol({"observation": "text", "icl_example": False, "constrain": "action",
                                 "max_output_tokens": 16})
    with ScriptedServer(script=["ACTION: forward"], persona="llama-cpp", reasoning=None) as srv:
        d = one_step(srv, "openai/m", protocol, provider="llama-cpp", client=client)
        body, applied = srv.chat_requests[0].body, srv.chat_requests[0].applied
    assert body["grammar"] == gbnf(protocol) and "structured_outputs" not in body
    assert d.budget.constraint == applied["constraint"] == "grammar"
    assert (d.action, d.parse) == (env.ACTIONS.index("forward"), "exact")


@pytest.mark.parametrize("mode, kind", [("action", "choice"), ("reasoning+action", "regex")])
@pytest.mark.parametrize("client", ["openai", "litellm"])
def test_vllm_requests_carry_structured_outputs_and_the_step_records_them(mode, kind, client):
    protocol = resolve_protocol({"observation": "text", "icl_example": False, "constrain": mode, "thinking": False})
    argv = ["vllm", "serve", "Qwen/Qwen3-8B"]
    with ScriptedServer(script=["ACTION: left"], persona="vllm", vllm_argv=argv, reasoning=None) as srv:
        d = one_step(srv, "hosted_vllm/Qwen/Qwen3-8B", protocol, client=client)
        body, applied = srv.chat_requests[0].body, srv.chat_requests[0].applied
    expected = list(answer_lines(protocol)) if kind == "choice" else regex(protocol)
    assert body["structured_outputs"] == {kind: expected} and "grammar" not in body
    assert d.budget.constraint == applied["constraint"] == f"structured_outputs.{kind}"


def test_an_unconstrained_request_carries_nothing_and_records_null():
    protocol = resolve_protocol({"observation": "text", "icl_example": False})
    with ScriptedServer(script=["ACTION: left"], persona="llama-cpp", reasoning=None) as srv:
        d = one_step(srv, "openai/m", protocol, provider="llama-cpp", client="openai")
        body, applied = srv.chat_requests[0].body, srv.chat_requests[0].applied
    assert not {"grammar", "structured_outputs"} & set(body)
    assert d.budget.constraint is None and applied["constraint"] is None


def test_the_cli_refuses_it_in_one_line_before_anything_runs(tmp_path, capsys):
    import yaml

    from app.cli import main

    path = tmp_path / "hosted.yaml"
    path.write_text(yaml.safe_dump(sweep("anthropic/claude-opus-4-8", {"constrain": "reasoning+action"},
                                         api_key_env="GRIDBENCH_NO_SUCH_KEY")))
    with pytest.raises(SystemExit) as code:
        main(["run", str(path), "--out", str(tmp_path / "out"), "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code.value.code == 2 and not (tmp_path / "out").exists()
    assert len(err.splitlines()) == 1 and "protocol.constrain" in err and "hosted.yaml" in err, err
