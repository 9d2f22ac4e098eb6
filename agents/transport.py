"""How a model call reaches a model: the interface every way of sending implements.

- ``Transport``: one way of sending a chat request: litellm for hosted providers
  (``agents.litellm_transport``), the lean OpenAI-compatible client for self-hosted servers
  (``agents.openai_compat``), a provider batch through the sweep driver's lockstep rounds
  (``agents.batch_requests``). A transport builds the request for a conversation (``body``), sends
  one attempt of it (``send``) and says what a failed attempt means (``classify``): wait it out
  (a rate limit), retry it (a transient failure) or fail the turn. It never retries, prices,
  times or scrubs: ``agents.caller`` does, once for every transport (Inspect AI's split of a
  provider's ``should_retry`` from the one retry loop).
- The failure vocabulary is litellm's error class names (``classify_status`` maps an HTTP status
  onto them), whichever transport ran, so a trace's ``error_class`` does not depend on it.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.usage import Usage


@dataclass(frozen=True)
class Completion:
    """One model answer, whichever transport brought it: the text and what it used."""

    reply: str = ""
    reasoning: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class Request:
    """One attempt of a call: the transport's body, and its place in the episode (the step, the
    call within the step, the attempt of that call: a provider batch names each attempt apart)."""

    body: dict[str, Any]
    step: int = 0
    call: int = 0
    attempt: int = 0


@dataclass(frozen=True)
class Answer:
    """What one successful attempt brought: the completion, the provider's own response when a
    price table can read it (litellm's), and the provider batch it came through."""

    completion: Completion
    response: Any = None
    batch_id: str | None = None


Verdict = Literal["wait", "retry", "fail"]


@dataclass(frozen=True)
class Failure:
    """A failed attempt as its transport classed it: ``wait`` (a rate limit, waited out),
    ``retry`` (a transient failure, counted against the retries) or ``fail`` (no retry helps).
    ``message`` may hold whatever the server sent back; the caller scrubs it."""

    error_class: str
    message: str
    verdict: Verdict
    retry_after: float | None = None

    @classmethod
    def transient(cls, error_class: str, message: str, retry_after: float | None = None) -> Failure:
        """A failure worth another attempt: a rate limit (``RateLimitError``) is waited out, any
        other is retried."""
        return cls(error_class, message, "wait" if error_class == "RateLimitError" else "retry", retry_after)


class EndpointError(Exception):
    """One failed attempt, already classed: its ``error_class`` as litellm names it, whether to
    retry, Retry-After. Raised by the OpenAI-compatible client and a batch gateway.

    The message may hold whatever the server sent back (a key included): the caller scrubs it.
    """

    def __init__(self, error_class: str, message: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.error_class = error_class
        self.retryable = retryable
        self.retry_after = retry_after

    def failure(self) -> Failure:
        message = f"{self.error_class}: {self}"
        if self.retryable:
            return Failure.transient(self.error_class, message, self.retry_after)
        return Failure(self.error_class, message, "fail")


# ---- the failure vocabulary ----------------------------------------------------------------------
# The phrasings vLLM, llama.cpp and OpenAI use for a prompt longer than the context window
# (a subset of the ones litellm recognises).
_CONTEXT_EXCEEDED = re.compile(
    r"maximum context length|context_length_exceeded|exceeds the available context size"
    r"|longer than the model's context length|context window|prompt is too long",
    re.IGNORECASE,
)
# a 429 that no wait cures: the account's quota is spent (OpenAI's insufficient_quota)
OUT_OF_QUOTA = re.compile(r"insufficient_quota|exceeded your current quota", re.IGNORECASE)
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


def classify_status(status: int, message: str) -> tuple[str, bool]:
    """litellm's error class for an HTTP error status, and whether it is retried."""
    if status == 429 and OUT_OF_QUOTA.search(message):
        return "RateLimitError", False
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return "APIError", True
    if 400 <= status < 500:
        return ("ContextWindowExceededError" if _CONTEXT_EXCEEDED.search(message) else "BadRequestError"), False
    return "APIError", False


def retry_after_seconds(value: Any) -> float | None:
    """A Retry-After header's seconds; None when absent or an HTTP date (the backoff applies)."""
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


# ---- the interface -------------------------------------------------------------------------------
PricedBy = Literal["litellm", "table", "none"]


def seeded(fields: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """The family's request fields with this call's seed, where they carry one."""
    return fields if seed is None or "seed" not in fields else {**fields, "seed": seed}


class Transport(ABC):
    """One way of sending a model's chat requests (see the module's docstring)."""

    marks_cache: bool = False  # the request carries prompt-cache markers (ProviderFamily.marks_cache)
    # what prices an answer when the model entry has no price: litellm's reading of the response,
    # litellm's price table, or nothing (agents.pricing)
    priced_by: PricedBy = "none"

    @abstractmethod
    def body(self, messages: list[dict[str, Any]], seed: int | None = None) -> dict[str, Any]:
        """What this transport sends for these messages (no key in it); ``seed``: this call's
        sampling seed (``agents.caller.call_seed``) in place of the base seed, where the
        provider takes one."""

    @abstractmethod
    async def send(self, request: Request) -> Answer:
        """One attempt: one request sent, its answer read; a failure raises."""

    def wire(self, body: dict[str, Any]) -> dict[str, Any]:
        """What ``send`` puts on the wire for ``body``, in the provider's own shape (``body`` itself,
        where the transport posts it as it is): what a provider batch's line carries."""
        return body

    def read(self, payload: dict[str, Any]) -> Completion:
        """An answer in the provider's own shape (a provider batch's), read as ``send`` reads one."""
        raise NotImplementedError(f"{type(self).__name__} reads no answer apart from its call")

    def classify(self, err: Exception) -> Failure | None:
        """What a failed ``send`` means; None for an exception that is no transport failure (a
        bug), which then propagates as it is. By default a send classes its own failures, as
        ``EndpointError``."""
        return err.failure() if isinstance(err, EndpointError) else None

    async def aclose(self) -> None:
        return None
