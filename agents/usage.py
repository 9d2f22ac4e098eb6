"""What model calls cost, declared once: the ``Usage`` of a call sums into the usage of a turn,
a step and an episode with ``+``; ``Budget`` is what one request allowed the model to spend.

Both are plain frozen dataclasses with no dependencies, so the trace records
(``traces._records``) flatten them into columns without importing any agent machinery.
Field metadata ``doc`` is each column's documentation (docs/traces.md is generated from it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields


def doc(text: str, **kwargs) -> dict:
    """Field metadata documenting a trace column."""
    return {"doc": text, **kwargs}


@dataclass(frozen=True)
class Usage:
    """Tokens, money, time and retries of model calls; ``a + b`` is their sum."""

    tokens_in: int = field(default=0, metadata=doc("input (prompt) tokens"))
    tokens_out: int = field(default=0, metadata=doc("output tokens, reasoning included"))
    tokens_reasoning: int = field(default=0, metadata=doc(
        "reasoning tokens (part of `tokens_out`); estimated from the reasoning text when the provider "
        "reports none"))
    tokens_cached: int = field(default=0, metadata=doc(
        "input tokens read from the provider's prompt cache (part of `tokens_in`)"))
    reasoning_estimated: bool = field(default=False, metadata=doc(
        "some `tokens_reasoning` was counted from the text (litellm's tokenizer), not reported by the provider"))
    cost_usd: float = field(default=0.0, metadata=doc(
        "USD: the model entry's `price`, else litellm's price table; 0 when neither knows the model"))
    latency_s: float = field(default=0.0, metadata=doc("seconds spent waiting for model answers, retries included"))
    retries: int = field(default=0, metadata=doc("requests retried after a transient failure (429, 5xx, timeout)"))
    calls: int = field(default=0, metadata=doc(
        "model calls answered (queries; a retried request counts once); 0 for a step taken from the action "
        "list an earlier query gave, and for built-in agents"))
    reasks: int = field(default=0, metadata=doc(
        "calls after an invalid reply (`invalid_output: reask` or `requery`): each one follows a reply that "
        "gave no action"))

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(**{
            f.name: (getattr(self, f.name) or getattr(other, f.name)) if f.type == "bool"
            else getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
        })

    @classmethod
    def total(cls, usages) -> Usage:
        out = cls()
        for u in usages:
            out = out + u
        return out


@dataclass(frozen=True)
class Budget:
    """What a request allowed the model to spend, as sent (not as the protocol asked): providers
    control thinking differently, and the study equalised only the output cap."""

    thinking: bool | None = field(default=None, metadata=doc(
        "thinking on (true) or off (false) by the provider's own switch as the request carried it "
        "(docs/providers.md); null when the provider has no switch (nothing was sent) and for built-in agents"))
    thinking_budget: int | None = field(default=None, metadata=doc(
        "thinking-token budget the request carried; null when it carried none (only the output cap limits "
        "thinking)"))
    reasoning_effort: str | None = field(default=None, metadata=doc(
        "effort level the request carried (`low` .. `max`, in the field its provider family names: "
        "docs/providers.md); null when none (the provider's default)"))
    max_output_tokens: int | None = field(default=None, metadata=doc(
        "output-token cap the request carried (`max_tokens` or `max_completion_tokens`, thinking included); "
        "null for built-in agents"))
    constraint: str | None = field(default=None, metadata=doc(
        "how the request constrained the reply (the protocol's `constrain`): `grammar` (llama.cpp's GBNF "
        "grammar), `structured_outputs.choice` or `structured_outputs.regex` (vLLM); null when it carried none"))
