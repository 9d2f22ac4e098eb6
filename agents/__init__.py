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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from env.lazy import lazy_face

_FACE = {
    "agents.model": ("KNOWN_BUILTINS", "ModelConfig", "parse_model_config"),
    "agents.parse": ("parse_action",),
    "agents.prompt": ("build_messages",),
    "agents.protocol": ("PRESETS", "Protocol", "resolve_protocol"),
    "agents.types": ("Agent", "Decision", "InfraError", "PastStep", "Turn"),
    "agents.usage": ("Budget", "Usage"),
}
if TYPE_CHECKING:  # the table as imports, for the type checker (env.lazy says why)
    from agents.model import KNOWN_BUILTINS, ModelConfig, parse_model_config  # noqa: F401
    from agents.parse import parse_action  # noqa: F401
    from agents.prompt import build_messages  # noqa: F401
    from agents.protocol import PRESETS, Protocol, resolve_protocol  # noqa: F401
    from agents.types import Agent, Decision, InfraError, PastStep, Turn  # noqa: F401
    from agents.usage import Budget, Usage  # noqa: F401
else:
    __getattr__, __dir__, __all__ = lazy_face(__name__, _FACE, defined_here=("build_agent",))


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
