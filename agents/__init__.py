"""Who chooses actions: the prompt protocol, action parsing, the LLM agent, built-in agents.

Public API::

    from agents import Protocol, resolve_protocol, build_agent, parse_action, build_messages

``build_agent`` turns a model string into an ``Agent``: ``builtin/<name>`` for the scripted
agents, anything else for the LLM agent. Its ``client`` picks the LLM agent's transport:
``"litellm"`` (the default: any provider, litellm imported when first needed, it is slow to
import) or ``"openai"`` (a direct HTTP client for an OpenAI-compatible ``api_base`` such as
vLLM or llama.cpp: much less CPU per call, and no litellm import). No Ray here: an agent works
from a plain Python loop.
"""

from __future__ import annotations

from agents.builtin import KNOWN_BUILTINS
from agents.parse import parse_action
from agents.prompt import build_messages
from agents.protocol import PRESETS, Protocol, resolve_protocol
from agents.types import Agent, Decision, InfraError, PastStep, Turn


def build_agent(
    model: str,
    protocol: Protocol,
    *,
    seed: int = 0,
    name: str | None = None,
    api_base: str | None = None,
    api_key_env: str | None = None,
    params: dict | None = None,
    price: dict | None = None,
    client: str = "litellm",
) -> Agent:
    """The agent for one episode. ``seed`` varies the random agent and the model's sampling seed;
    ``client`` is the LLM agent's transport, ``"litellm"`` or ``"openai"``."""
    if model.startswith("builtin/"):
        from agents.builtin import make_builtin

        return make_builtin(model.removeprefix("builtin/"), seed=seed)
    if model.startswith("human/"):
        raise ValueError(
            f"{model}: a human agent is driven by `gridbench play`, which supplies its own agent; "
            "it cannot be built here"
        )
    from agents.llm import LLMAgent

    return LLMAgent(
        model, protocol, seed=seed, name=name, api_base=api_base, api_key_env=api_key_env,
        params=params, price=price, client=client,
    )


__all__ = [
    "KNOWN_BUILTINS", "PRESETS", "Agent", "Decision", "InfraError", "PastStep", "Protocol", "Turn",
    "build_agent", "build_messages", "parse_action", "resolve_protocol",
]
