"""What a provider family is: what one kind of model takes in a request and gives back.

A family is declared by its provider's adapter (``agents.providers.<api>``) and found by
``agents.providers.family_for``. The protocol says what is intended (``thinking``
on or off, an ``effort`` level, a ``thinking_budget``, ``max_output_tokens``, ``temperature``);
the family says how that reaches the provider (``ProviderFamily.request_fields``) and refuses
what the provider cannot honour (``ProviderFamily.refusal``), so a request is never sent, and
recorded, as if a setting had been applied that the provider drops, rewrites or rejects. Every
fact here is listed with its source in docs/providers.md; a test keeps the two in step.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.protocol import Protocol
    from agents.usage import Budget

# request fields the protocol and the family control: a model entry's params may not set them
CONTROLLED_PARAMS = {
    "max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens",
    "temperature": "temperature", "thinking": "thinking", "reasoning_effort": "effort",
    "output_config": "effort", "thinking_token_budget": "thinking_budget", "seed": "seed",
    "thinkingConfig": "effort", "thinking_config": "effort",
    # the engines' reply constraints (and vLLM's older names for them)
    "grammar": "constrain", "structured_outputs": "constrain", "guided_choice": "constrain",
    "guided_regex": "constrain", "guided_grammar": "constrain", "guided_json": "constrain",
}
# chat_template_kwargs may carry other switches of a template, but not the thinking switch
CONTROLLED_TEMPLATE_KWARGS = {"enable_thinking": "thinking"}


@dataclass(frozen=True)
class Switch:
    """How thinking is turned on and off: the request fields for each (``{}``: nothing to send).
    ``off`` is None when thinking cannot be turned off."""

    on: Mapping[str, Any]
    off: Mapping[str, Any] | None


@dataclass(frozen=True)
class Control:
    """A request field that takes a value: an effort level or a token budget.

    ``path``: where the value goes (``("output_config", "effort")``); ``levels``: the effort
    levels the provider takes; ``minimum``: the smallest token budget; ``with_thinking``: the
    field goes into the request only while thinking is on."""

    path: tuple[str, ...]
    levels: tuple[str, ...] = ()
    minimum: int = 0
    with_thinking: bool = False


TIERS = ("standard", "flex", "batch")


@dataclass(frozen=True)
class Tier:
    """One way of buying a family's answers (``standard``, ``flex``, ``batch``): its price as a
    share of the standard one (cache reads included), and for ``batch`` the provider's limits on
    one batch. docs/providers.md lists each with its source."""

    name: str
    price_factor: float = 1.0
    max_requests: int | None = None  # requests in one batch
    max_bytes: int | None = None  # size of one batch (its JSONL file, or its request body)
    window: str = ""  # how long the provider may take, as it documents it
    # what every request of the tier carries (flex is asked for per request, batch by its endpoint)
    request_fields: tuple[tuple[str, str], ...] = ()


STANDARD = Tier("standard")


@dataclass(frozen=True)
class Price:
    """USD per token; ``cached_input`` (prompt-cache reads) defaults to ``input``."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, tokens_in: int, tokens_out: int, tokens_cached: int = 0) -> float:
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return (tokens_in - tokens_cached) * self.input + tokens_cached * cached_rate + tokens_out * self.output


@dataclass(frozen=True)
class ProviderFamily:
    """The facts the request builder and the usage reader need for one family of providers."""

    name: str
    title: str
    switch: Switch | None  # None: no thinking switch at all: nothing is sent, the step records null
    effort: Control | None = None  # None: no effort control
    budget: Control | None = None  # None: no thinking-token budget
    budget_required: bool = False  # thinking on needs a budget (it thinks only within one)
    # the effort the provider applies when none is sent; set here when it is not the one a study
    # would mean, so an effort must be chosen explicitly (refused when left to the provider)
    default_effort: str = ""
    image_detail: bool = False  # an image part takes OpenAI's ``detail`` (a model entry's params.image_detail)
    budget_below_cap: bool = False  # the budget must stay below the output cap
    output_cap: str = "max_tokens"  # the request field that caps output tokens, thinking included
    # sampling parameters the provider rejects or fixes: never sent; a protocol or params value is
    # refused. ``unsampled_with_thinking``: the same, only while thinking is on.
    fixed_sampling: tuple[str, ...] = ()
    unsampled_with_thinking: tuple[str, ...] = ()
    fixed_why: str = ""
    seed: bool = True  # the provider takes a sampling seed
    marks_cache: bool = False  # it caches only prompt prefixes the request marks (cache_control)
    # how it constrains a reply (the protocol's ``constrain``): "grammar" (a GBNF grammar, llama.cpp),
    # "structured_outputs" (vLLM), or None with ``unconstrained_why``, the end of the refusal's sentence
    constrains_by: str | None = None
    unconstrained_why: str = "is not known to take a constraint on a plain reply"
    # thinking comes back inside the reply itself, where a constraint would leave it no room
    inline_reasoning: bool = False
    # top-level request fields litellm refuses for this provider unless they travel in extra_body
    litellm_extra_body: tuple[str, ...] = ()
    # where the answer's parts come back (for docs/providers.md and the usage reader)
    reasoning_text: str = ""
    reasoning_tokens: str = ""
    cached_tokens: str = ""
    # the tiers the provider sells (``STANDARD`` alone: no discounted tier known)
    tiers: tuple[Tier, ...] = (STANDARD,)
    # litellm's price reading misses the provider's cache reads: its answers are priced from the
    # usage gridbench read (agents.pricing)
    litellm_misses_cache_reads: bool = False
    prior: str = ""  # the study's model that stands for this family in a cost estimate (its short name)

    def tier(self, name: str) -> Tier:
        """The family's tier called ``name``; ``KeyError`` when it has none."""
        for t in self.tiers:
            if t.name == name:
                return t
        raise KeyError(name)

    # ---- intent -> request ------------------------------------------------------------------
    def refusal(self, protocol: Protocol, params: Mapping[str, Any] | None = None) -> tuple[str, str] | None:
        """(field, why) for the first setting this family cannot honour; None when it can honour all.

        ``field`` is a protocol field, or ``params.<key>`` for the model entry's own params."""
        p = protocol
        if not p.thinking and self.switch is not None and self.switch.off is None:
            return "thinking", f"{self.title} always thinks: thinking cannot be turned off"
        if p.effort is None and self.default_effort:
            return "effort", (f"{self.title} defaults to effort {self.default_effort!r} when none is sent: set "
                              f"effort explicitly ({', '.join(self.effort.levels if self.effort else ())})")
        if p.effort is not None:
            if self.effort is None:
                return "effort", f"{self.title} has no effort control (got {p.effort!r})"
            if p.effort not in self.effort.levels:
                return "effort", f"{self.title} takes the effort levels {', '.join(self.effort.levels)} (got {p.effort!r})"
        if p.thinking and self.budget_required and p.thinking_budget is None:
            return "thinking_budget", (f"{self.title} thinks only within a token budget: set thinking_budget "
                                       "(or thinking: false)")
        if p.thinking_budget is not None:
            if self.budget is None:
                return "thinking_budget", f"{self.title} takes no thinking-token budget (got {p.thinking_budget})"
            if p.thinking_budget < self.budget.minimum:
                return "thinking_budget", f"{self.title} takes a budget of at least {self.budget.minimum}"
            if p.thinking and self.budget_below_cap and p.thinking_budget >= p.max_output_tokens:
                return "thinking_budget", (f"{self.title} needs the budget ({p.thinking_budget}) below "
                                           f"max_output_tokens ({p.max_output_tokens})")
        if p.constrain != "none":
            if self.constrains_by is None:
                return "constrain", f"{self.title} {self.unconstrained_why}: leave constrain at none"
            if p.thinking and self.inline_reasoning:
                return "constrain", (f"{self.title} leaves thinking inside the reply, where the constraint would "
                                     "cut it: serve with a reasoning_parser, or set thinking: false")
        if p.temperature is not None and "temperature" in self.unsent(p.thinking):
            return "temperature", f"{self.title} takes no temperature{self._why()}: leave temperature unset"
        for key in sorted(set(params or {}) & self.unsent(p.thinking)):
            return f"params.{key}", f"{self.title} takes no {key}{self._why()}"
        return None

    def refusal_of_params(self, params: Mapping[str, Any]) -> tuple[str, str] | None:
        """(field, why) for a model entry's param that this family never takes, or that would set
        what the protocol controls; checked once per entry (with thinking either way: ``refusal``)."""
        for key in sorted(set(params) & set(self.fixed_sampling)):
            return f"params.{key}", f"{self.title} takes no {key}{self._why()}"
        if "image_detail" in params:
            if not self.image_detail:
                return "params.image_detail", f"{self.title} takes no image detail"
            if params["image_detail"] not in IMAGE_DETAILS:
                return "params.image_detail", (f"must be one of {', '.join(IMAGE_DETAILS)} "
                                               f"(got {params['image_detail']!r})")
        return controlled_param(params)

    def unsent(self, thinking: bool) -> set[str]:
        """Sampling parameters never sent to this family (with thinking on or off)."""
        return set(self.fixed_sampling) | (set(self.unsampled_with_thinking) if thinking else set())

    def _why(self) -> str:
        return f" ({self.fixed_why})" if self.fixed_why else ""

    def request_fields(self, protocol: Protocol, seed: int) -> tuple[dict[str, Any], Budget]:
        """The request fields (in the provider's own JSON shape) that carry the protocol's
        intent, and the ``Budget`` they amount to. The protocol must have passed ``refusal``."""
        from agents.usage import Budget

        p = protocol
        fields: dict[str, Any] = {self.output_cap: p.max_output_tokens}
        thinking: bool | None = None
        if self.switch is not None:
            switch = self.switch.on if p.thinking else self.switch.off
            merge_fields(fields, dict(switch or {}))
            thinking = p.thinking
        effort = budget = None
        if p.effort is not None and self.effort is not None and (p.thinking or not self.effort.with_thinking):
            merge_fields(fields, _nested(self.effort.path, p.effort))
            effort = p.effort
        if p.thinking_budget is not None and self.budget is not None and p.thinking:
            merge_fields(fields, _nested(self.budget.path, p.thinking_budget))
            budget = p.thinking_budget
        if p.temperature is not None:
            fields["temperature"] = p.temperature
        if self.seed:
            fields["seed"] = seed
        constraint = self._constraint(p, fields)
        return fields, Budget(thinking=thinking, thinking_budget=budget, reasoning_effort=effort,
                              max_output_tokens=p.max_output_tokens, constraint=constraint)

    def _constraint(self, p: Protocol, fields: dict[str, Any]) -> str | None:
        """Lay the protocol's reply constraint into ``fields``; what the step records of it."""
        from agents.constraint import answer_lines, gbnf, regex

        if p.constrain == "none" or self.constrains_by is None:
            return None
        if self.constrains_by == "grammar":
            fields["grammar"] = gbnf(p)
            return "grammar"
        # vLLM: the answer lines as a choice when the reply is one of them, else a regular expression
        kind, value = ("choice", list(answer_lines(p))) if p.constrain == "action" else ("regex", regex(p))
        fields["structured_outputs"] = {kind: value}
        return f"structured_outputs.{kind}"


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(path):
        out = {key: out}
    return out


def merge_fields(into: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``into`` with ``extra`` laid over it, mappings merged key by key (``into`` is changed)."""
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            merge_fields(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into


def controlled_param(params: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, why) for a model entry's param that would set what the protocol controls."""
    for where, mapping in (("params", params), ("params.extra_body", params.get("extra_body"))):
        if not isinstance(mapping, Mapping):
            continue
        for key, value in mapping.items():
            if key in CONTROLLED_PARAMS:
                return f"{where}.{key}", f"set through the protocol's {CONTROLLED_PARAMS[key]} instead"
            if key == "chat_template_kwargs" and isinstance(value, Mapping):
                for inner in set(value) & set(CONTROLLED_TEMPLATE_KWARGS):
                    return (f"{where}.chat_template_kwargs.{inner}",
                            f"set through the protocol's {CONTROLLED_TEMPLATE_KWARGS[inner]} instead")
    return None



# OpenAI's image_url.detail; gridbench writes the entry's value into every image part
IMAGE_DETAILS = ("low", "high", "auto")
# hosted providers constrain replies to JSON at most (structured outputs), not to the answer line
CONSTRAINS_JSON_ONLY = "constrains replies to JSON at most, not to the protocol's answer line"
