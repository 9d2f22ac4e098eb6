"""Provider families, declared once: what each real provider takes in a request and gives back.

A model's family (``family_for``) follows from its litellm model string, the engine that serves
it and the model entry's optional ``provider:``. The protocol says what is intended (``thinking``
on or off, an ``effort`` level, a ``thinking_budget``, ``max_output_tokens``, ``temperature``);
the family says how that reaches the provider (``ProviderFamily.request_fields``) and refuses
what the provider cannot honour (``ProviderFamily.refusal``), so a request is never sent, and
recorded, as if a setting had been applied that the provider drops, rewrites or rejects. Every
fact here is listed with its source in docs/providers.md; a test keeps the two in step.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from env.errors import BadInput
from env.study_facts import STUDY_USAGE

if TYPE_CHECKING:
    from agents.protocol import Protocol
    from agents.usage import Budget

# request fields the protocol and the family control: a model entry's params may not set them
CONTROLLED_PARAMS = {
    "max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens",
    "temperature": "temperature", "thinking": "thinking", "reasoning_effort": "effort",
    "output_config": "effort", "thinking_token_budget": "thinking_budget", "seed": "seed",
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
ANTHROPIC_TIERS = (STANDARD, Tier("batch", 0.5, max_requests=100_000, max_bytes=256 * 2**20,
                                   window="24 hours; results kept 29 days"))
OPENAI_TIERS = (STANDARD, Tier("flex", 0.5, request_fields=(("service_tier", "flex"),)),
                Tier("batch", 0.5, max_requests=50_000, max_bytes=200 * 2**20, window="24h"))
# (Moonshot's batch bodies must not carry temperature, top_p, n or the penalties: the family never sends them)
MOONSHOT_TIERS = (STANDARD, Tier("batch", 0.6, max_bytes=100 * 2**20, window="12 hours to 7 days"))


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
    marks_cache: bool = False  # it caches only prompt prefixes the request marks (Anthropic's cache_control)
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
    batch_api: str = ""  # how a ``batch`` tier is reached: "anthropic" (message batches) or "openai" (files + batches)

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


# ---- the table -------------------------------------------------------------------------------
CLAUDE_EFFORTS = ("low", "medium", "high", "xhigh", "max")
OPENAI_EFFORTS = ("minimal", "low", "medium", "high", "xhigh")
# GPT-6 (the study's gpt-6-astra): no minimal, and "none" is an HTTP 400
OPENAI_6_EFFORTS = ("low", "medium", "high", "xhigh", "max")
# OpenAI's image_url.detail; gridbench writes the entry's value into every image part
IMAGE_DETAILS = ("low", "high", "auto")
TEMPLATE_ON = {"chat_template_kwargs": {"enable_thinking": True}}
TEMPLATE_OFF = {"chat_template_kwargs": {"enable_thinking": False}}
# hosted providers constrain replies to JSON at most (structured outputs), not to the answer line
CONSTRAINS_JSON_ONLY = "constrains replies to JSON at most, not to the protocol's answer line"
VLLM_CACHED = "usage.prompt_tokens_details.cached_tokens, only when served with --enable-prompt-tokens-details"

# what every Claude family shares: Anthropic's API (no seed, cache marks, its tiers and batches)
ANTHROPIC_API: dict[str, Any] = dict(
    seed=False, marks_cache=True, tiers=ANTHROPIC_TIERS, batch_api="anthropic",
    unconstrained_why=CONSTRAINS_JSON_ONLY, cached_tokens="usage.cache_read_input_tokens",
)
ANTHROPIC_ADAPTIVE_ON = {"thinking": {"type": "adaptive", "display": "summarized"}}
ANTHROPIC_ADAPTIVE = ProviderFamily(
    name="anthropic-adaptive", title="Claude 4.7 and later (Anthropic)",
    switch=Switch(on=ANTHROPIC_ADAPTIVE_ON, off={}),
    effort=Control(("output_config", "effort"), levels=CLAUDE_EFFORTS),
    fixed_sampling=("temperature", "top_p", "top_k"),
    fixed_why="Anthropic removed the sampling parameters from Claude Opus 4.7 on",
    reasoning_text="thinking blocks, with text only under display: summarized",
    reasoning_tokens="usage.output_tokens_details.thinking_tokens",
    **ANTHROPIC_API,
)
OPENAI_REASONING = ProviderFamily(
    name="openai-reasoning", title="OpenAI reasoning models (o-series, GPT-5)",
    switch=Switch(on={}, off=None),
    effort=Control(("reasoning_effort",), levels=OPENAI_EFFORTS),
    output_cap="max_completion_tokens",
    fixed_sampling=("temperature", "top_p"),
    fixed_why="OpenAI's reasoning models take only the default sampling",
    # no seed either: the study's OpenAI agent sent max_completion_tokens, reasoning_effort and
    # service_tier only, to Astra and to the Terra calibration alike (docs/providers.md)
    seed=False, image_detail=True, tiers=OPENAI_TIERS, batch_api="openai",
    unconstrained_why=CONSTRAINS_JSON_ONLY,
    reasoning_text="not returned by the Chat Completions API (counted, billed as output)",
    reasoning_tokens="usage.completion_tokens_details.reasoning_tokens",
    cached_tokens="usage.prompt_tokens_details.cached_tokens",
)
FAMILIES: tuple[ProviderFamily, ...] = (
    # Claude 5 differs from 4.7+ in that thinking cannot be turned off and, with no effort sent,
    # it thinks at medium
    replace(ANTHROPIC_ADAPTIVE, name="anthropic-5", title="Claude 5 and later (Anthropic)",
            switch=Switch(on=ANTHROPIC_ADAPTIVE_ON, off=None), default_effort="medium"),
    ANTHROPIC_ADAPTIVE,
    ProviderFamily(
        name="anthropic-budget", title="Claude before 4.7 (Anthropic)",
        switch=Switch(on={"thinking": {"type": "enabled"}}, off={}),
        budget=Control(("thinking", "budget_tokens"), minimum=1024, with_thinking=True),
        budget_required=True, budget_below_cap=True,
        unsampled_with_thinking=("temperature", "top_k"),
        fixed_why="Anthropic's extended thinking does not take sampling changes",
        reasoning_text="thinking blocks",
        reasoning_tokens="usage.output_tokens_details.thinking_tokens where reported, else counted from the text",
        **ANTHROPIC_API,
    ),
    ProviderFamily(
        name="moonshot-kimi-k2", title="Kimi K2.5 / K2.6 (Moonshot)",
        switch=Switch(on={"thinking": {"type": "enabled"}}, off={"thinking": {"type": "disabled"}}),
        fixed_sampling=("temperature", "top_p", "n", "presence_penalty", "frequency_penalty"),
        fixed_why="Moonshot fixes them for kimi-k2.6: temperature 1.0 with thinking, 0.6 without",
        seed=False, litellm_extra_body=("thinking",), tiers=MOONSHOT_TIERS, batch_api="openai",
        unconstrained_why=CONSTRAINS_JSON_ONLY,
        reasoning_text="message.reasoning_content",
        reasoning_tokens="not reported: counted from the reasoning text",
        cached_tokens="usage.cached_tokens (top level), or usage.prompt_tokens_details.cached_tokens",
    ),
    OPENAI_REASONING,
    # GPT-6 differs from the other OpenAI reasoning models in its effort levels only
    replace(OPENAI_REASONING, name="openai-reasoning-6", title="OpenAI GPT-6 reasoning models",
            effort=Control(("reasoning_effort",), levels=OPENAI_6_EFFORTS)),
    ProviderFamily(
        name="vllm-reasoning", title="vLLM with a reasoning parser",
        switch=Switch(on=TEMPLATE_ON, off=TEMPLATE_OFF),
        budget=Control(("thinking_token_budget",), minimum=1, with_thinking=True),
        output_cap="max_completion_tokens", constrains_by="structured_outputs",
        litellm_extra_body=("chat_template_kwargs", "thinking_token_budget", "structured_outputs"),
        reasoning_text="message.reasoning (message.reasoning_content before vLLM 0.16)",
        reasoning_tokens="usage.completion_tokens_details.reasoning_tokens",
        cached_tokens=VLLM_CACHED,
    ),
    ProviderFamily(
        name="vllm", title="vLLM without a reasoning parser",
        switch=Switch(on=TEMPLATE_ON, off=TEMPLATE_OFF),
        output_cap="max_completion_tokens", constrains_by="structured_outputs", inline_reasoning=True,
        litellm_extra_body=("chat_template_kwargs", "structured_outputs"),
        reasoning_text="inline in message.content (<think> ... </think>); the reply parser skips it",
        reasoning_tokens="not reported: counted as output",
        cached_tokens=VLLM_CACHED,
    ),
    ProviderFamily(
        name="llama-cpp", title="llama.cpp (llama-cpp-python's server)",
        switch=None, constrains_by="grammar", litellm_extra_body=("grammar",),
        reasoning_text="none",
        reasoning_tokens="not reported",
        cached_tokens="not reported",
    ),
    ProviderFamily(
        name="generic", title="another provider (no thinking controls known)",
        switch=None, image_detail=True,
        unconstrained_why=("is not known to take a constraint on a plain reply (name provider: "
                           "llama-cpp or vllm when the endpoint is one of those servers)"),
        reasoning_text="message.reasoning_content or message.reasoning, where the provider sends one",
        reasoning_tokens="usage.completion_tokens_details.reasoning_tokens, where reported",
        cached_tokens="usage.prompt_tokens_details.cached_tokens, where reported",
    ),
)
BY_NAME: dict[str, ProviderFamily] = {f.name: f for f in FAMILIES}

_CLAUDE_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?!\d)")
_OPENAI_REASONING = re.compile(r"^(o\d+|gpt-5)")
_OPENAI_REASONING_6 = re.compile(r"^gpt-6")
_KIMI_K2 = re.compile(r"kimi-k2\.[56]\b")


def family_for(model: str, *, provider: str | None = None) -> ProviderFamily:
    """The family of a litellm model string. ``provider``: a family chosen by name (the model
    entry's own, or what the run's servers for it speak), which wins."""
    if provider is not None:
        return BY_NAME[provider]
    prefix, _, name = model.partition("/")
    if prefix == "hosted_vllm":
        return BY_NAME["vllm"]
    if prefix == "anthropic" or (prefix in ("bedrock", "vertex_ai") and "claude" in name):
        version = claude_version(name)
        return BY_NAME["anthropic-5" if version >= (5, 0) else
                       "anthropic-adaptive" if version >= (4, 7) else "anthropic-budget"]
    if prefix == "moonshot" and _KIMI_K2.search(name):
        return BY_NAME["moonshot-kimi-k2"]
    if prefix in ("openai", "azure") and _OPENAI_REASONING.match(name.rsplit("/", 1)[-1]):
        return BY_NAME["openai-reasoning"]
    if prefix in ("openai", "azure") and _OPENAI_REASONING_6.match(name.rsplit("/", 1)[-1]):
        return BY_NAME["openai-reasoning-6"]
    return BY_NAME["generic"]


def check_tier(source: str, where: str, value: Any, family: ProviderFamily) -> str:
    """A model entry's ``tier:``: ``standard`` (the default) or a tier its family sells."""
    if value is None:
        return "standard"
    if value not in TIERS:
        raise BadInput(source, where, f"must be one of {', '.join(TIERS)} (got {value!r})")
    try:
        family.tier(value)
    except KeyError:
        sold = ", ".join(t.name for t in family.tiers)
        raise BadInput(source, where, f"{family.title} has no {value} tier (it has: {sold})") from None
    return str(value)


def claude_version(name: str) -> tuple[int, int]:
    """(major, minor) of a Claude model name (``claude-opus-4-8`` is (4, 8)); (0, 0) when the name
    has the older ``claude-3-7-sonnet`` shape or none."""
    m = _CLAUDE_VERSION.search(name)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


def check_provider(source: str, where: str, value: Any) -> str | None:
    """A model entry's ``provider:``: one of the families' names, or left out."""
    if value is None:
        return None
    if value not in BY_NAME:
        raise BadInput(source, where, f"unknown provider family {value!r} (known: {', '.join(BY_NAME)})")
    return str(value)


@dataclass(frozen=True)
class StudyPrior:
    """What one model of the study's final run spent (docs/providers.md, *Realised usage*)."""

    model: str
    name: str  # the study's short name for the model (its sweeps' model entry names)
    queries: int
    episodes: int
    mean_output_tokens: int
    median_output_tokens: int

    @property
    def queries_per_episode(self) -> float:
        return self.queries / self.episodes


# the study's realised usage (env.study_facts), by the study's short name for the model
STUDY_PRIORS_BY_MODEL: dict[str, StudyPrior] = {
    name: StudyPrior(model, name, *numbers) for name, (model, *numbers) in STUDY_USAGE.items()}
# per family: the study's model of that family
STUDY_PRIORS: dict[str, StudyPrior] = {
    "anthropic-adaptive": STUDY_PRIORS_BY_MODEL["claude"],
    # no study figure for Claude 5: the study's own cost stress case took Opus 4.8's
    "anthropic-5": STUDY_PRIORS_BY_MODEL["claude"],
    "moonshot-kimi-k2": STUDY_PRIORS_BY_MODEL["kimi"],
    "vllm-reasoning": STUDY_PRIORS_BY_MODEL["qwen"],
    "vllm": STUDY_PRIORS_BY_MODEL["qwen"],
}


__all__ = [
    "BY_NAME", "CONTROLLED_PARAMS", "FAMILIES", "IMAGE_DETAILS", "STUDY_PRIORS",
    "STUDY_PRIORS_BY_MODEL",
    "TIERS", "Control", "ProviderFamily", "StudyPrior", "Switch", "Tier", "check_provider", "check_tier",
    "claude_version",
    "controlled_param", "family_for", "merge_fields",
]
