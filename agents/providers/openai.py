"""OpenAI's Chat Completions for its reasoning models, their flex tier and the Batch API.

Requests go through litellm (``openai/...``, ``azure/...``); batches through OpenAI's own SDK
(``OpenAIBatches``, which the adapters of providers that copy the files-and-batches
endpoints share). Every fact is in docs/providers.md with its source.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agents.providers.api import ProviderAPI
from agents.providers.batches import Outcome, ProviderBatches, errored
from agents.providers.family import CONSTRAINS_JSON_ONLY, STANDARD, Control, ProviderFamily, Switch, Tier

if TYPE_CHECKING:
    from agents.model import ModelConfig

EFFORTS = ("minimal", "low", "medium", "high", "xhigh")
# GPT-6 (the study's gpt-6-astra): no minimal, and "none" is an HTTP 400
EFFORTS_6 = ("low", "medium", "high", "xhigh", "max")
TIERS = (STANDARD, Tier("flex", 0.5, request_fields=(("service_tier", "flex"),)),
         Tier("batch", 0.5, max_requests=50_000, max_bytes=200 * 2**20, window="24h"))
REASONING = ProviderFamily(
    name="openai-reasoning", title="OpenAI reasoning models (o-series, GPT-5)",
    switch=Switch(on={}, off=None),
    effort=Control(("reasoning_effort",), levels=EFFORTS),
    output_cap="max_completion_tokens",
    fixed_sampling=("temperature", "top_p"),
    fixed_why="OpenAI's reasoning models take only the default sampling",
    # no seed either: the study's OpenAI agent sent max_completion_tokens, reasoning_effort and
    # service_tier only, to Astra and to the Terra calibration alike (docs/providers.md)
    seed=False, image_detail=True, tiers=TIERS,
    unconstrained_why=CONSTRAINS_JSON_ONLY,
    reasoning_text="not returned by the Chat Completions API (counted, billed as output)",
    reasoning_tokens="usage.completion_tokens_details.reasoning_tokens",
    cached_tokens="usage.prompt_tokens_details.cached_tokens",
)
# GPT-6 differs from the other reasoning models in its effort levels only
REASONING_6 = replace(REASONING, name="openai-reasoning-6", title="OpenAI GPT-6 reasoning models",
                      effort=Control(("reasoning_effort",), levels=EFFORTS_6))
_REASONING = re.compile(r"^(o\d+|gpt-5)")
_REASONING_6 = re.compile(r"^gpt-6")


class OpenAIAPI(ProviderAPI):
    name = "openai"
    families = (REASONING, REASONING_6)

    def family(self, prefix: str, name: str) -> ProviderFamily | None:
        if prefix not in ("openai", "azure"):
            return None
        bare = name.rsplit("/", 1)[-1]
        return REASONING if _REASONING.match(bare) else REASONING_6 if _REASONING_6.match(bare) else None

    def batches(self, config: ModelConfig) -> ProviderBatches:
        return OpenAIBatches(config)


class OpenAIBatches(ProviderBatches):
    """OpenAI's Batch API (and its copies): a JSONL file uploaded with purpose ``batch``, a batch
    over ``/v1/chat/completions`` with a 24 h window (OpenAI takes only that; a copy may take
    more), results in an output file and an error file. ``api_base``: where the provider is
    when the entry names no endpoint of its own (None: the SDK's default, OpenAI)."""

    ENDED = ("completed", "failed", "expired", "cancelled")

    def __init__(self, config: ModelConfig, api_base: str | None = None):
        import openai

        self.client = openai.AsyncOpenAI(api_key=config.api_key(), base_url=config.api_base or api_base,
                                         max_retries=config.retries, timeout=config.timeout_s)

    async def submit(self, requests: dict[str, dict[str, Any]]) -> str:
        lines = "".join(json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
                                    "body": body}, separators=(",", ":")) + "\n"
                        for cid, body in requests.items())
        upload = await self.client.files.create(file=("gridbench-round.jsonl", lines.encode()), purpose="batch")
        batch = await self.client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                                 completion_window="24h")
        return str(batch.id)

    async def ended(self, batch_id: str) -> bool:
        return (await self.client.batches.retrieve(batch_id)).status in self.ENDED

    async def outcomes(self, batch_id: str) -> dict[str, Outcome]:
        batch = await self.client.batches.retrieve(batch_id)
        out: dict[str, Outcome] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = (await self.client.files.content(file_id)).text
            for line in text.splitlines():
                if line.strip():
                    item = json.loads(line)
                    out[item["custom_id"]] = _outcome(item)
        if batch.status == "failed" and not out:  # the whole file was refused (validation)
            reason = "; ".join(e.message or "" for e in (batch.errors.data or [])) if batch.errors else ""
            return {"*": errored(400, f"the batch failed validation: {reason}")}
        return out

    async def cancel(self, batch_id: str) -> None:
        await self.client.batches.cancel(batch_id)

    async def aclose(self) -> None:
        await self.client.close()


def _outcome(item: dict[str, Any]) -> Outcome:
    error = item.get("error")
    if error:  # never processed: the batch expired (or was cancelled) first
        code = str(error.get("code") or "")
        return Outcome("expired" if code == "batch_expired" else "canceled" if "cancel" in code
                       else "errored", message=str(error.get("message") or code))
    response = item.get("response") or {}
    status = int(response.get("status_code") or 500)
    body = response.get("body") or {}
    if status == 200:
        return Outcome("succeeded", body=body)
    detail = body.get("error") if isinstance(body, dict) else None
    return errored(status, str(detail.get("message") if isinstance(detail, dict) else body))


API = OpenAIAPI()
