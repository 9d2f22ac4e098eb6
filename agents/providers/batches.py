"""What a provider's batch endpoints are to gridbench: ``ProviderBatches`` and a request's ``Outcome``.

An adapter whose families sell a ``batch`` tier implements ``ProviderBatches`` with its provider's
own SDK (``agents.providers.<api>``); the sweep driver's broker (``orchestrator.batching``) drives
it and never learns which provider it is. The model entry's ``api_base`` is honoured on every path,
so gateways, proxies and the scripted server's fakes are reached the same way as the providers.

A batch is submitted as ``{custom_id: body}``, where each body is what the same request, made
synchronously, puts on the wire (``agents.transport.Transport.wire``); its outcomes come back
as ``Outcome``: ``succeeded`` with the answer in the provider's own shape (read by the
transport that would have sent it, ``Transport.read``), ``errored`` with the error as the
synchronous path would class it, or ``expired``/``canceled`` (never processed: sent again by the
broker in a later round).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from agents.transport import classify_status


@dataclass(frozen=True)
class Outcome:
    """One request's fate in a batch (plain data: it travels between Ray actors)."""

    kind: str  # succeeded | errored | expired | canceled
    body: dict[str, Any] | None = None  # succeeded: the answer, in the provider's own shape
    error_class: str = ""
    message: str = ""
    retryable: bool = False


def errored(status: int, message: str) -> Outcome:
    """A request the provider answered with an error status: classified as the synchronous call's
    would be (``agents.transport.classify_status``), the one mapping of batch errors."""
    error_class, retryable = classify_status(status, message)
    return Outcome("errored", error_class=error_class, message=f"HTTP {status} in a batch: {message}",
                   retryable=retryable)


def failed(err: Exception) -> Outcome:
    """A batch the provider refused, or one that could not be read: each of its requests fails as
    the synchronous call would have (an outcome, not an exception: it crosses Ray as data)."""
    status = getattr(err, "status_code", None)
    if not isinstance(status, int):
        status = getattr(err, "code", None)  # the google-genai SDK's name for it
    if isinstance(status, int) and not isinstance(status, bool):
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
        """Each request's outcome, by custom id (an ended batch); ``"*"``: every request's, when
        the batch failed as a whole."""

    @abstractmethod
    async def cancel(self, batch_id: str) -> None: ...

    async def aclose(self) -> None:
        return None


__all__ = ["Outcome", "ProviderBatches", "errored", "failed"]
