"""Anthropic's Messages API: the Claude families, their tiers and Message Batches.

Claude is reached through litellm (``anthropic/...``, and Claude on ``bedrock/`` and
``vertex_ai/``); Message Batches through Anthropic's own SDK, which litellm cannot create (its
issue 17265). Every fact is in docs/providers.md with its source.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agents.providers.api import ProviderAPI
from agents.providers.batches import Outcome, ProviderBatches, errored
from agents.providers.family import CONSTRAINS_JSON_ONLY, STANDARD, Control, ProviderFamily, Switch, Tier

if TYPE_CHECKING:
    from agents.model import ModelConfig

CLAUDE_EFFORTS = ("low", "medium", "high", "xhigh", "max")
TIERS = (STANDARD, Tier("batch", 0.5, max_requests=100_000, max_bytes=256 * 2**20,
                        window="24 hours; results kept 29 days"))
# what every Claude family shares: no seed, cache marks, the tiers and batches
SHARED: dict[str, Any] = dict(
    seed=False, marks_cache=True, tiers=TIERS, unconstrained_why=CONSTRAINS_JSON_ONLY,
    cached_tokens="usage.cache_read_input_tokens",
)
ADAPTIVE_ON = {"thinking": {"type": "adaptive", "display": "summarized"}}
ADAPTIVE = ProviderFamily(
    name="anthropic-adaptive", title="Claude 4.7 and later (Anthropic)",
    switch=Switch(on=ADAPTIVE_ON, off={}),
    effort=Control(("output_config", "effort"), levels=CLAUDE_EFFORTS),
    fixed_sampling=("temperature", "top_p", "top_k"),
    fixed_why="Anthropic removed the sampling parameters from Claude Opus 4.7 on",
    reasoning_text="thinking blocks, with text only under display: summarized",
    reasoning_tokens="usage.output_tokens_details.thinking_tokens",
    prior="claude", **SHARED,
)
FAMILIES = (
    # Claude 5 differs from 4.7+ in that thinking cannot be turned off and, with no effort sent,
    # it thinks at medium; no study figure for Claude 5: the study's own cost stress case took Opus 4.8's
    replace(ADAPTIVE, name="anthropic-5", title="Claude 5 and later (Anthropic)",
            switch=Switch(on=ADAPTIVE_ON, off=None), default_effort="medium"),
    ADAPTIVE,
    ProviderFamily(
        name="anthropic-budget", title="Claude before 4.7 (Anthropic)",
        switch=Switch(on={"thinking": {"type": "enabled"}}, off={}),
        budget=Control(("thinking", "budget_tokens"), minimum=1024, with_thinking=True),
        budget_required=True, budget_below_cap=True,
        unsampled_with_thinking=("temperature", "top_k"),
        fixed_why="Anthropic's extended thinking does not take sampling changes",
        reasoning_text="thinking blocks",
        reasoning_tokens="usage.output_tokens_details.thinking_tokens where reported, else counted from the text",
        **SHARED,
    ),
)
_CLAUDE_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?!\d)")
# Anthropic's error types and the HTTP statuses they stand for (its errors documentation)
ERROR_STATUS = {
    "invalid_request_error": 400, "authentication_error": 401, "billing_error": 402, "permission_error": 403,
    "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
    "overloaded_error": 529,
}


def claude_version(name: str) -> tuple[int, int]:
    """(major, minor) of a Claude model name (``claude-opus-4-8`` is (4, 8)); (0, 0) when the name
    has the older ``claude-3-7-sonnet`` shape or none."""
    m = _CLAUDE_VERSION.search(name)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


class AnthropicAPI(ProviderAPI):
    name = "anthropic"
    families = FAMILIES

    def family(self, prefix: str, name: str) -> ProviderFamily | None:
        if prefix == "anthropic" or (prefix in ("bedrock", "vertex_ai") and "claude" in name):
            version = claude_version(name)
            return FAMILIES[0] if version >= (5, 0) else ADAPTIVE if version >= (4, 7) else FAMILIES[2]
        return None

    def batches(self, config: ModelConfig) -> ProviderBatches:
        return MessageBatches(config)


class MessageBatches(ProviderBatches):
    """Message Batches: ``{custom_id, params}`` per request, where ``params`` is the Messages body
    the synchronous call posts (``model`` included)."""

    def __init__(self, config: ModelConfig):
        import anthropic

        base = config.api_base.rstrip("/").removesuffix("/v1") if config.api_base else None
        self.client = anthropic.AsyncAnthropic(api_key=config.api_key(), base_url=base,
                                               max_retries=config.retries, timeout=config.timeout_s)

    async def submit(self, requests: dict[str, dict[str, Any]]) -> str:
        batch = await self.client.messages.batches.create(
            requests=[{"custom_id": cid, "params": body} for cid, body in requests.items()])  # type: ignore[typeddict-item]
        return str(batch.id)

    async def ended(self, batch_id: str) -> bool:
        batch = await self.client.messages.batches.retrieve(batch_id)
        return batch.processing_status == "ended"

    async def outcomes(self, batch_id: str) -> dict[str, Outcome]:
        out: dict[str, Outcome] = {}
        async for item in await self.client.messages.batches.results(batch_id):
            result = item.result
            if result.type == "succeeded":
                out[item.custom_id] = Outcome("succeeded", body=result.message.model_dump(mode="json"))
            elif result.type == "errored":
                error = result.error.error
                out[item.custom_id] = errored(ERROR_STATUS.get(error.type, 500), error.message)
            else:  # canceled, expired: never processed
                out[item.custom_id] = Outcome(result.type)
        return out

    async def cancel(self, batch_id: str) -> None:
        await self.client.messages.batches.cancel(batch_id)

    async def aclose(self) -> None:
        await self.client.close()


API = AnthropicAPI()
