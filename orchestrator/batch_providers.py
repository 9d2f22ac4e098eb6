"""Provider batches through the providers' own SDKs: Anthropic's Message Batches (``anthropic``;
litellm cannot create them, its issue 17265) and the files-and-batches endpoints of OpenAI and
Moonshot (``openai``). The model entry's ``api_base`` is honoured on every path, so gateways,
proxies and the scripted server's fakes are reached the same way as the providers.

A ``ProviderBatches`` submits one round's requests as one batch, says whether it has ended, and
reads each request's outcome (``Outcome``): ``succeeded`` with the answer's body, ``errored``
with the error as the synchronous path would class it, or ``expired``/``canceled`` (never
processed: sent again by the driver in a later round).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from agents.model import ModelConfig
from agents.openai_compat import classify_status

MOONSHOT_BASE = "https://api.moonshot.ai/v1"
# Anthropic's error types and the HTTP statuses they stand for (its errors documentation)
ANTHROPIC_ERROR_STATUS = {
    "invalid_request_error": 400, "authentication_error": 401, "billing_error": 402, "permission_error": 403,
    "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
    "overloaded_error": 529,
}


@dataclass(frozen=True)
class Outcome:
    """One request's fate in a batch (plain data: it travels between Ray actors)."""

    kind: str  # succeeded | errored | expired | canceled
    body: dict[str, Any] | None = None  # succeeded: the Message (Anthropic) or chat completion (OpenAI)
    error_class: str = ""
    message: str = ""
    retryable: bool = False


def errored(status: int, message: str) -> Outcome:
    """A request the provider answered with an error status: classified as the synchronous call's
    would be (``agents.openai_compat.classify_status``), the one mapping of batch errors."""
    error_class, retryable = classify_status(status, message)
    return Outcome("errored", error_class=error_class, message=f"HTTP {status} in a batch: {message}",
                   retryable=retryable)


def failed(err: Exception) -> Outcome:
    """A batch the provider refused, or one that could not be read: each of its requests fails as
    the synchronous call would have (an outcome, not an exception: it crosses Ray as data)."""
    status = getattr(err, "status_code", None)
    if isinstance(status, int):
        return errored(status, str(err))
    return Outcome("errored", error_class="APIConnectionError", message=f"batch: {type(err).__name__}: {err}",
                   retryable=True)


class ProviderBatches(ABC):
    """One provider's batch endpoints, for one model entry."""

    @abstractmethod
    async def submit(self, requests: dict[str, dict[str, Any]]) -> str:
        """Submit ``{custom_id: body}`` as one batch; its id."""

    @abstractmethod
    async def ended(self, batch_id: str) -> bool:
        """Whether the batch has finished processing (every request has its outcome)."""

    @abstractmethod
    async def outcomes(self, batch_id: str) -> dict[str, Outcome]:
        """Each request's outcome, by custom id (an ended batch)."""

    @abstractmethod
    async def cancel(self, batch_id: str) -> None: ...

    async def aclose(self) -> None:
        return None


class AnthropicBatches(ProviderBatches):
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
                out[item.custom_id] = errored(ANTHROPIC_ERROR_STATUS.get(error.type, 500), error.message)
            else:  # canceled, expired: never processed
                out[item.custom_id] = Outcome(result.type)
        return out

    async def cancel(self, batch_id: str) -> None:
        await self.client.messages.batches.cancel(batch_id)

    async def aclose(self) -> None:
        await self.client.close()


class OpenAIBatches(ProviderBatches):
    """OpenAI's Batch API, and Moonshot's copy of it: a JSONL file uploaded with purpose
    ``batch``, a batch over ``/v1/chat/completions`` with a 24 h window (OpenAI takes only that;
    Moonshot takes 12 h to 7 days), results in an output file and an error file."""

    ENDED = ("completed", "failed", "expired", "cancelled")

    def __init__(self, config: ModelConfig):
        import openai

        base = config.api_base or (MOONSHOT_BASE if config.family.name == "moonshot-kimi-k2" else None)
        self.client = openai.AsyncOpenAI(api_key=config.api_key(), base_url=base,
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
                    out[item["custom_id"]] = _openai_outcome(item)
        if batch.status == "failed" and not out:  # the whole file was refused (validation)
            reason = "; ".join(e.message or "" for e in (batch.errors.data or [])) if batch.errors else ""
            return {"*": errored(400, f"the batch failed validation: {reason}")}
        return out

    async def cancel(self, batch_id: str) -> None:
        await self.client.batches.cancel(batch_id)

    async def aclose(self) -> None:
        await self.client.close()


def _openai_outcome(item: dict[str, Any]) -> Outcome:
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


def provider_batches(config: ModelConfig) -> ProviderBatches:
    """The batch endpoints of ``config``'s provider (its family's ``batch_api``)."""
    return AnthropicBatches(config) if config.family.batch_api == "anthropic" else OpenAIBatches(config)
