"""Infrastructure is not the model (docs/cluster.md): a transport failure is retried, never read
as the model's reply. Against the scripted server over real HTTP, through the real agent; the
retries sleep nothing.
"""

from __future__ import annotations

import asyncio

import pytest

import env
from agents import InfraError, ModelConfig, Protocol, Turn, resolve_protocol
from agents.caller import RetryPolicy
from agents.litellm_transport import litellm_module
from agents.llm import LLMAgent
from testing.scripted_server import ScriptedServer

KEY_ENV = "GRIDBENCH_INFRA_TEST_KEY"
# the study's rule (study-baseline): a reply with no action is sent again, three in a row end the episode
STUDY = {"preset": "study-baseline", "icl_example": False, "tile_size": 8, "observation": "text"}
# each answer's parseable reply and an unparseable one, per protocol style
REPLIES = {"study": ("FINAL_OUTPUT: TURN_LEFT", "Let me look at the maze again."),
           "gridbench": ("ACTION: left", "Let me look at the maze again.")}


async def no_sleep(seconds: float) -> None:
    await asyncio.sleep(0)


def fast(max_retries: int) -> RetryPolicy:
    """The agent's retry policy at test speed: backoffs of milliseconds (slept as nothing), rate
    limits waited out for half a second of requested waits."""
    return RetryPolicy(max_retries=max_retries, base_s=0.01, cap_s=0.02, rate_limited_s=0.5)


def scripted_agent(srv: ScriptedServer, model: str, client: str, protocol: Protocol, retries: int,
                   **params) -> LLMAgent:
    base = srv.gemini_url if model.startswith("gemini/") else srv.url
    config = ModelConfig.for_model(model, api_base=base, api_key_env=KEY_ENV, client=client,
                                   params={"timeout": 0.5, **params})
    return LLMAgent(config, protocol, retry=fast(retries), sleep=no_sleep)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-gridbench-infra-FAKE-0123456789")


@pytest.fixture(scope="module", autouse=True)
def _litellm_loaded():
    litellm_module()  # imported once, outside any test's own time


@pytest.fixture(scope="module")
def maze():
    return env.resolve_maze("example")


def test_a_gemini_answer_litellm_cannot_read_is_retried_not_a_bad_request(maze):
    """litellm reports a Gemini body cut short as a 422 ``BadRequestError`` ("Error converting to
    valid response block"); it is a malformed answer, retried like the others (it failed the
    episode at once before)."""
    protocol = resolve_protocol(STUDY)
    with ScriptedServer(script=["malformed", "malformed", REPLIES["study"][0]]) as srv:
        agent = scripted_agent(srv, "gemini/gemini-3.8-flash", "litellm", protocol, retries=2)

        async def turn():
            try:
                agent.caller.begin_turn(1)
                return await agent.act(Turn(maze, protocol, 1, env.initial_state(maze), (), 57))
            finally:
                await agent.aclose()

        d = asyncio.run(turn())
    assert (d.action, d.usage.calls, d.usage.retries) == (0, 1, 2)
    with ScriptedServer(script=["malformed"]) as srv:
        agent = scripted_agent(srv, "gemini/gemini-3.8-flash", "litellm", protocol, retries=1)
        with pytest.raises(InfraError) as err:
            asyncio.run(turn())
    assert err.value.error_class == "InternalServerError" and "2 attempts" in str(err.value)
