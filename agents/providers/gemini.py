"""Google's Gemini API (Google AI Studio): the Gemini 3 and 4 families, Batch Mode, the listing
and the list prices litellm's table is behind on.

Requests go through litellm (``gemini/...``: the native ``generateContent`` body, the effort as
``thinkingConfig.thinkingLevel`` with thought summaries asked for, an image's ``detail`` as its
part's ``media_resolution``); Batch Mode and the model listing through Google's own SDK
(``google-genai``). An entry's ``api_base`` names the API's root with its version
(``https://generativelanguage.googleapis.com/v1beta``), as litellm takes it. Every fact is in
docs/providers.md with its source.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agents.providers.api import ListingError, ProviderAPI
from agents.providers.batches import Outcome, ProviderBatches, errored
from agents.providers.family import (
    CONSTRAINS_JSON_ONLY,
    STANDARD,
    Control,
    Price,
    ProviderFamily,
    Switch,
    Tier,
)

if TYPE_CHECKING:
    from agents.model import ModelConfig

# a batch's input file may hold up to 2 GB; Google's target turnaround is 24 hours
TIERS = (STANDARD, Tier("batch", 0.5, max_bytes=2 * 2**30, window="24 hours (target)"))
LEVELS = Control(("reasoning_effort",), levels=("low", "medium", "high"))
GEMINI_3 = ProviderFamily(
    name="gemini-3", title="Gemini 4, Gemini 3 Pro and Gemini 3.7/3.8 Flash (Google)",
    # thinking cannot be turned off: the lowest level still thinks where a prompt needs it
    switch=Switch(on={}, off=None),
    effort=LEVELS,
    # the default level differs by model (medium on 4 Argon and 3.8 Flash, high on 3.1 Pro)
    default_effort="medium (high on 3.1 Pro)",
    fixed_sampling=("temperature", "top_p", "top_k"),
    fixed_why="Google advises keeping Gemini 3's default sampling, and litellm refuses temperature for some models",
    image_detail=True, tiers=TIERS, unconstrained_why=CONSTRAINS_JSON_ONLY,
    reasoning_text="parts marked thought: true (summaries, asked for with thinkingConfig.includeThoughts)",
    reasoning_tokens="usageMetadata.thoughtsTokenCount",
    cached_tokens="usageMetadata.cachedContentTokenCount (implicit caching)",
)
# the Flash and Flash-Lite models before 3.7 also take minimal, their lowest level
GEMINI_3_MINIMAL = replace(
    GEMINI_3, name="gemini-3-minimal", title="Gemini 3 to 3.6 Flash and Flash-Lite (Google)",
    effort=Control(("reasoning_effort",), levels=("minimal", "low", "medium", "high")),
    default_effort="medium (minimal on Flash-Lite, high on 3 Flash)",
)
# Gemini 3 Pro, the first (3.1 Pro added medium), takes low and high alone
GEMINI_3_PRO = replace(GEMINI_3, name="gemini-3-pro", title="Gemini 3 Pro (Google)",
                       effort=Control(("reasoning_effort",), levels=("low", "high")), default_effort="high")
_FIRST_PRO = re.compile(r"^gemini-3-pro")
_LEVELS_ONLY = re.compile(r"^gemini-(?:[4-9][.\d]*-|3\.\d+-pro|3\.[7-9]-flash)")
_GEMINI_3 = re.compile(r"^gemini-3")
# Google's list prices from 1 December 2026 (docs/providers.md): litellm 1.110's table still has
# Gemini 4 Argon's launch price and Gemini 3.6 Flash's preview price, half of what is billed
PRICES = {
    "gemini-4-argon": Price(4e-6, 2e-5, 2e-7),
    "gemini-3.6-flash": Price(1.5e-6, 7.5e-6, 1.5e-7),
}
ROOT = re.compile(r"/v1(?:alpha|beta)?/?$")
ENDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")  # the SDK's names
# google.rpc.Code, which a result line's status carries, as the HTTP status it stands for
RPC_STATUS = {1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409, 11: 400,
              12: 501, 13: 500, 14: 503, 15: 500, 16: 401}


class GeminiAPI(ProviderAPI):
    name = "gemini"
    families = (GEMINI_3, GEMINI_3_MINIMAL, GEMINI_3_PRO)
    reads_listing = True  # litellm's listing reads the first page alone (50 models)
    prices = PRICES

    def family(self, prefix: str, name: str) -> ProviderFamily | None:
        if prefix != "gemini":
            return None
        if _FIRST_PRO.match(name):
            return GEMINI_3_PRO
        if _LEVELS_ONLY.match(name):
            return GEMINI_3
        return GEMINI_3_MINIMAL if _GEMINI_3.match(name) else None  # 2.5 and before: the generic family

    def batches(self, config: ModelConfig) -> ProviderBatches:
        return GeminiBatches(config)

    def listing(self, config: ModelConfig, key: str | None) -> list[str]:
        from google.genai import errors

        sdk = client(config, key)  # held while the pager fetches its pages
        try:
            return [str(m.name) for m in sdk.models.list(config={"page_size": 1000})]
        except errors.APIError as err:
            refused = err.code in (401, 403) or (err.code == 400 and "API key" in str(err.message))
            raise ListingError("refused" if refused else "status", f"HTTP {err.code}", err.code) from None
        except Exception as err:  # noqa: BLE001 - httpx's connection errors, whose text names no key
            raise ListingError("unreachable", type(err).__name__) from None
        finally:
            sdk.close()


def client(config: ModelConfig, key: str | None) -> Any:
    """Google's SDK client at the entry's endpoint (``api_base`` less its version), with the
    entry's timeout and retries."""
    from google import genai
    from google.genai import types

    base = ROOT.sub("", config.api_base.rstrip("/")) if config.api_base else None
    options = types.HttpOptions(base_url=base, api_version="v1beta", timeout=int(config.timeout_s * 1000),
                                retry_options=types.HttpRetryOptions(attempts=config.retries + 1))
    return genai.Client(api_key=key, http_options=options)


class GeminiBatches(ProviderBatches):
    """Batch Mode through an input file: each line ``{"key": custom id, "request": the
    generateContent body the synchronous call posts}``, uploaded with the Files API; results in
    a file of ``{"key", "response"}`` or ``{"key", "status"}`` lines."""

    def __init__(self, config: ModelConfig):
        from agents.model import request_name

        self.client = client(config, config.api_key())
        self.model = request_name(config.model)

    async def submit(self, requests: dict[str, dict[str, Any]]) -> str:
        from google.genai import types

        lines = "".join(json.dumps({"key": cid, "request": body}, separators=(",", ":")) + "\n"
                        for cid, body in requests.items())
        upload = await self.client.aio.files.upload(
            file=io.BytesIO(lines.encode()), config=types.UploadFileConfig(mime_type="jsonl",
                                                                          display_name="gridbench-round"))
        job = await self.client.aio.batches.create(model=self.model, src=upload.name,
                                                   config={"display_name": "gridbench-round"})
        return str(job.name)

    async def ended(self, batch_id: str) -> bool:
        return _state(await self.client.aio.batches.get(name=batch_id)) in ENDED

    async def outcomes(self, batch_id: str) -> dict[str, Outcome]:
        job = await self.client.aio.batches.get(name=batch_id)
        out: dict[str, Outcome] = {}
        if job.dest is not None and job.dest.file_name:
            text = (await self.client.aio.files.download(file=job.dest.file_name)).decode()
            for line in text.splitlines():
                if line.strip():
                    item = json.loads(line)
                    out[str(item.get("key"))] = _outcome(item)
        if _state(job) == "JOB_STATE_FAILED" and not out:  # the batch failed as a whole
            return {"*": errored(400, f"the batch failed: {job.error.message if job.error else ''}")}
        return out  # an expired or cancelled batch's unanswered requests are missing: unprocessed

    async def cancel(self, batch_id: str) -> None:
        await self.client.aio.batches.cancel(name=batch_id)

    async def aclose(self) -> None:
        await self.client.aio.aclose()


def _state(job: Any) -> str:
    return str(getattr(job.state, "value", job.state))


def _outcome(item: dict[str, Any]) -> Outcome:
    if "response" in item:
        return Outcome("succeeded", body=item["response"])
    status = item.get("status") or item.get("error") or {}
    code = int(status.get("code") or 13)
    return errored(code if code >= 100 else RPC_STATUS.get(code, 500), str(status.get("message") or ""))


API = GeminiAPI()
