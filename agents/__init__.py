"""Who chooses actions: the prompt protocol, action parsing, the LLM agent, built-in agents.

Public API::

    from agents import ModelConfig, Protocol, resolve_protocol, build_agent, parse_action, build_messages

``build_agent`` turns a ``ModelConfig`` (validated when a sweep is loaded, see ``agents.model``)
into an ``Agent``: ``builtin/<name>`` for the scripted agents, anything else for the LLM agent,
whose transport is the config's ``client``: ``"litellm"`` (any provider; litellm is imported
when first needed, it is slow to import) or ``"openai"`` (a direct HTTP client for an
OpenAI-compatible endpoint such as vLLM or llama.cpp: much less CPU per call). No Ray here: an
agent works from a plain Python loop.

Names are imported on first use, so that the trace records can import ``agents.usage`` without
pulling in the prompt builder, the oracle or litellm.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.model import ModelConfig
    from agents.protocol import Protocol
    from agents.types import Agent

_HOMES = {
    "KNOWN_BUILTINS": "agents.model", "ModelConfig": "agents.model", "parse_model_config": "agents.model",
    "parse_action": "agents.parse", "build_messages": "agents.prompt",
    "PRESETS": "agents.protocol", "Protocol": "agents.protocol", "resolve_protocol": "agents.protocol",
    "Agent": "agents.types", "Decision": "agents.types", "InfraError": "agents.types", "PastStep": "agents.types",
    "Turn": "agents.types", "Budget": "agents.usage", "Usage": "agents.usage",
}


def build_agent(config: ModelConfig | str, protocol: Protocol, *, seed: int = 0,
                endpoint: str | None = None, on_rate_limit: Callable[[float | None], Any] | None = None,
                batch: Any = None) -> Agent:
    """The agent for one episode (``config`` may be a bare model string such as ``builtin/oracle``).
    ``seed`` varies the random agent and the model's sampling seed; ``endpoint`` is the URL of a
    server the sweep started for this model; ``on_rate_limit(retry_after)`` hears of each 429;
    ``batch``: a ``tier: batch`` model's ``agents.batch_requests.BatchGateway``."""
    if isinstance(config, str):
        from agents.model import ModelConfig

        config = ModelConfig.for_model(config)
    if config.builtin:
        from agents.builtin import make_builtin

        return make_builtin(config.model.removeprefix("builtin/"), seed=seed)
    if config.human:
        raise ValueError(
            f"{config.model}: a human agent is driven by `gridbench play`, which supplies its own agent; "
            "it cannot be built here"
        )
    from agents.llm import LLMAgent

    return LLMAgent(config, protocol, seed=seed, endpoint=endpoint, on_rate_limit=on_rate_limit, batch=batch)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'agents' has no attribute {name!r}")


__all__ = ["build_agent", *_HOMES]
