"""The LLM agent's second transport: one aiohttp POST per attempt to an OpenAI-compatible server.

For self-hosted servers (vLLM, llama.cpp, the scripted server) that many episodes share,
litellm's per-call work (cost calculation, logging payloads, model-info lookups) costs several
times the CPU of the request itself, and litellm takes seconds to import. This module speaks
``POST {api_base}/chat/completions`` directly and maps the answers and failures onto what the
litellm path produces (the same ``error_class`` names), so traces stay uniform whichever
transport ran. Retrying, scrubbing and pricing stay in ``agents.llm``: this module only
sends a body once, reads the answer into a ``Completion``, and says what went wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from agents.usage import Usage

# The phrasings vLLM, llama.cpp and OpenAI use for a prompt longer than the context window
# (a subset of the ones litellm recognises).
_CONTEXT_EXCEEDED = re.compile(
    r"maximum context length|context_length_exceeded|exceeds the available context size"
    r"|longer than the model's context length|context window|prompt is too long",
    re.IGNORECASE,
)

_BY_STATUS = {
    # status: (litellm's class for it, retried)
    401: ("AuthenticationError", False),
    403: ("PermissionDeniedError", False),
    404: ("NotFoundError", False),
    408: ("Timeout", True),
    429: ("RateLimitError", True),
    500: ("InternalServerError", True),
    502: ("BadGatewayError", True),
    503: ("ServiceUnavailableError", True),
    504: ("Timeout", True),
}


class EndpointError(Exception):
    """One failed attempt: its ``error_class`` as litellm names it, whether to retry, Retry-After.

    The message may hold whatever the server sent back (a key included): the agent scrubs it.
    """

    def __init__(self, error_class: str, message: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.error_class = error_class
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True)
class Completion:
    """One model answer, whichever transport brought it: the text and what it used."""

    reply: str = ""
    reasoning: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)


# a 429 that no wait cures: the account's quota is spent (OpenAI's insufficient_quota)
OUT_OF_QUOTA = re.compile(r"insufficient_quota|exceeded your current quota", re.IGNORECASE)


def classify_status(status: int, message: str) -> tuple[str, bool]:
    """litellm's error class for an HTTP error status, and whether the agent retries it."""
    if status == 429 and OUT_OF_QUOTA.search(message):
        return "RateLimitError", False
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return "APIError", True
    if 400 <= status < 500:
        return ("ContextWindowExceededError" if _CONTEXT_EXCEEDED.search(message) else "BadRequestError"), False
    return "APIError", False


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
    """The token counts of a reply's ``usage``, in any shape a provider gives it (a dict, or
    litellm's object of the same shape); docs/providers.md lists where each provider puts what.

    - input: ``prompt_tokens`` (OpenAI-style), or Anthropic's ``input_tokens`` plus its cache
      reads and writes (which Anthropic counts apart);
    - output: ``completion_tokens``, or Anthropic's ``output_tokens``;
    - reasoning: ``completion_tokens_details.reasoning_tokens`` (OpenAI, vLLM with a reasoning
      parser, and litellm for Anthropic), or Anthropic's ``output_tokens_details.thinking_tokens``;
    - cached input: ``prompt_tokens_details.cached_tokens`` (OpenAI; vLLM under
      ``--enable-prompt-tokens-details``; litellm for Anthropic), Anthropic's
      ``cache_read_input_tokens``, or Moonshot's top-level ``cached_tokens``.
    """
    def get(obj: Any, name: str) -> Any:
        if obj is None:
            return None
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    if usage is None:
        return Usage()
    cache_read = get(usage, "cache_read_input_tokens")
    cached = (get(get(usage, "prompt_tokens_details"), "cached_tokens") or cache_read
              or get(usage, "cached_tokens"))
    tokens_in = get(usage, "prompt_tokens")
    if tokens_in is None and get(usage, "input_tokens") is not None:
        tokens_in = (int(get(usage, "input_tokens")) + int(cache_read or 0)
                     + int(get(usage, "cache_creation_input_tokens") or 0))
    reasoning = (get(get(usage, "completion_tokens_details"), "reasoning_tokens")
                 or get(get(usage, "output_tokens_details"), "thinking_tokens"))
    return Usage(
        tokens_in=int(tokens_in or 0),
        tokens_out=int(get(usage, "completion_tokens") or get(usage, "output_tokens") or 0),
        tokens_reasoning=int(reasoning or 0),
        tokens_cached=int(cached or 0),
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
                retry_after = _seconds(response.headers.get("Retry-After"))
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


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the policy's own backoff applies
