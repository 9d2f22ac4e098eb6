"""The OpenAI-compatible transport: one aiohttp POST per attempt to an OpenAI-compatible server.

For self-hosted servers (vLLM, llama.cpp, the scripted server) that many episodes share,
litellm's per-call work (cost calculation, logging payloads, model-info lookups) costs several
times the CPU of the request itself, and litellm takes seconds to import. This module speaks
``POST {api_base}/chat/completions`` directly and maps the answers and failures onto what the
litellm transport produces (the same ``error_class`` names, ``agents.transport.classify_status``),
so traces stay uniform whichever transport ran. Retrying, scrubbing and pricing are the caller's
(``agents.caller``): this module only builds the body (``chat_body``, which a provider batch's
lines start from too), sends it once, reads the answer into a ``Completion``, and says what
went wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from typing import TYPE_CHECKING, Any

import aiohttp

from agents.providers import merge_fields
from agents.transport import (
    Answer,
    Completion,
    EndpointError,
    Request,
    Transport,
    classify_status,
    retry_after_seconds,
    seeded,
)
from agents.usage import Usage

if TYPE_CHECKING:
    from agents.model import ModelConfig

# the failure vocabulary and the answer type live in agents.transport; the orchestrator's batch
# code reads them here, beside the reply reader
__all__ = ["Completion", "EndpointError", "OpenAICompatClient", "OpenAICompatTransport", "chat_body",
           "classify_status", "read_completion", "usage_of"]


def read_completion(payload: Any) -> Completion:
    """The recorded fields of a parsed reply body; ``EndpointError`` if it has no usable choice."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not choices:
        raise EndpointError("EmptyChoices", "the server answered with an empty choices list", retryable=True)
    try:
        choice = choices[0]
        message = choice["message"]
        content = message.get("content")
        # newer vLLM names the field `reasoning`, older vLLM and DeepSeek `reasoning_content`
        reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
        return Completion(
            reply=content if isinstance(content, str) else "",
            reasoning=reasoning if isinstance(reasoning, str) else "",
            finish_reason=str(choice.get("finish_reason") or ""),
            usage=usage_of(payload.get("usage")),
        )
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        # litellm, too, reports a reply it cannot read as InternalServerError
        raise EndpointError("InternalServerError", f"a reply of an unexpected shape: {type(err).__name__}: {err}",
                            retryable=True) from None


def usage_of(usage: Any) -> Usage:
    """The token counts of an OpenAI-shaped ``usage`` (a dict from an OpenAI-compatible server,
    or litellm's object of the same shape, into which litellm reads every provider's own):
    ``prompt_tokens``, ``completion_tokens``, ``completion_tokens_details.reasoning_tokens`` and
    cached input from ``prompt_tokens_details.cached_tokens``, or a top-level ``cached_tokens``
    where a provider puts it there (docs/providers.md lists where each provider puts what)."""
    def get(obj: Any, name: str) -> Any:
        if obj is None:
            return None
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    if usage is None:
        return Usage()
    return Usage(
        tokens_in=int(get(usage, "prompt_tokens") or 0),
        tokens_out=int(get(usage, "completion_tokens") or 0),
        tokens_reasoning=int(get(get(usage, "completion_tokens_details"), "reasoning_tokens") or 0),
        tokens_cached=int(get(get(usage, "prompt_tokens_details"), "cached_tokens") or get(usage, "cached_tokens") or 0),
    )


class OpenAICompatClient:
    """One keep-alive HTTP session to ``api_base``, opened in the running event loop on first use."""

    def __init__(self, api_base: str, api_key: str | None, timeout_s: float):
        self.url = api_base.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is not None and not self._session.closed and self._loop is loop:
            return self._session
        if self._session is not None:
            await _abandon(self._session)
        self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout)
        self._loop = loop
        return self._session

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The parsed reply to one POST of ``body``; ``EndpointError`` for anything else."""
        session = await self._open()
        try:
            async with session.post(self.url, json=body) as response:
                raw = await response.read()
                status = response.status
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        except TimeoutError:
            raise EndpointError("Timeout", f"no complete reply within {self._timeout.total} s",
                                retryable=True) from None
        except aiohttp.InvalidURL as err:
            raise EndpointError("BadRequestError", f"invalid URL {err}", retryable=False) from None
        except (aiohttp.ClientError, OSError) as err:
            # litellm reports a refused or dropped connection as InternalServerError too
            raise EndpointError("InternalServerError", f"{type(err).__name__}: {err}", retryable=True) from None
        text = raw.decode("utf-8", errors="replace")
        if status != 200:
            message = _server_message(text)
            error_class, retryable = classify_status(status, message)
            raise EndpointError(error_class, f"HTTP {status}: {message}", retryable=retryable,
                                retry_after=retry_after if retryable else None)
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise EndpointError("InternalServerError", f"the reply is not JSON: {err}", retryable=True) from None

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is None or session.closed:
            return
        if self._loop is asyncio.get_running_loop():
            await session.close()
        else:
            await _abandon(session)


async def _abandon(session: aiohttp.ClientSession) -> None:
    """Let go of a session opened in another event loop (a caller running each turn in its own
    ``asyncio.run``): its connections belong to that loop, which has usually ended, so closing
    them from here fails; the sockets then close when collected. Marking session and connector
    closed first keeps aiohttp from reporting them as leaked."""
    connector = session.connector
    session.detach()
    if connector is not None:
        with contextlib.suppress(RuntimeError):
            await connector.close()


def _server_message(text: str, limit: int = 2000) -> str:
    """The message of an OpenAI-style error body (vLLM, llama.cpp), else the body's start."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        return text[:limit]
    error = payload.get("error") if isinstance(payload, dict) else None
    for holder in (error, payload):
        if isinstance(holder, dict) and isinstance(holder.get("message"), str):
            return holder["message"][:limit]
    if isinstance(error, str):
        return error[:limit]
    return text[:limit]


def chat_body(config: ModelConfig, fields: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The Chat Completions body for these messages: the provider family's ``fields``, then the
    entry's ``params`` and then ``params["extra_body"]`` (flattened, as the OpenAI SDK sends it)
    laid over them."""
    body: dict[str, Any] = {"model": config.request_name, "messages": messages, **copy.deepcopy(fields)}
    params = dict(config.request_params)
    extra = params.pop("extra_body", None)
    merge_fields(body, params)
    if isinstance(extra, dict):
        merge_fields(body, extra)
    elif extra is not None:
        body["extra_body"] = extra
    return body


class OpenAICompatTransport(Transport):
    """``client: openai``: the body of ``chat_body`` posted to ``api_base``. It marks no prompt
    caches (OpenAI-compatible servers cache identical prefixes by themselves) and has no price
    table: an entry without ``price`` records a cost of 0. ``api_base`` None: a transport that
    only builds bodies (a served model's endpoint comes at run time)."""

    def __init__(self, config: ModelConfig, fields: dict[str, Any], api_base: str | None, api_key: str | None):
        self.config = config
        self.fields = fields
        self.client = OpenAICompatClient(api_base, api_key, config.timeout_s) if api_base else None

    def body(self, messages: list[dict[str, Any]], seed: int | None = None) -> dict[str, Any]:
        return chat_body(self.config, seeded(self.fields, seed), messages)

    async def send(self, request: Request) -> Answer:
        assert self.client is not None, "a transport built without an endpoint sends nothing"
        return Answer(self.read(await self.client.complete(request.body)))

    def read(self, payload: dict[str, Any]) -> Completion:
        return read_completion(payload)

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()
