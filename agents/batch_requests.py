"""A ``tier: batch`` model's transport: its requests go into its provider's batches.

The LLM agent does not send a batch model's requests itself: its ``BatchTransport`` hands each
one to a ``BatchGateway`` (the sweep driver's lockstep rounds, ``orchestrator.batching``) and
gets back the answer as if it had come synchronously: the same parse, re-ask, budget, retry loop
(``agents.caller``) and trace rules follow. Gathering the rounds, submitting, polling and
journaling are the driver's; this module holds what the agent's side needs:

- ``BatchTransport``: the transport (``agents.transport``) whose ``send`` goes through the gateway.
  It wraps the transport the model's client would use synchronously: a batch line carries what
  that transport puts on the wire (``Transport.wire``: litellm's translation into the provider's
  own request, or the OpenAI-compatible client's body), and an answer is read as that transport
  reads one (``Transport.read``). One request, one translation, whether sent alone or in a batch.
- ``custom_id``: a request's id in its batch, the same every time the episode reaches the same
  request (after a kill, too): how a rerun finds the batch that already holds it.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Protocol

from agents.transport import Answer, Completion, PricedBy, Request, Transport

# the strictest provider's rule for a custom id; the others take free-form ids
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class BatchGateway(Protocol):
    """Where a batch model's requests go: ``complete`` waits for the request's batch and returns
    the answer in the provider's own shape and the batch's id, or raises
    ``agents.transport.EndpointError`` (an errored request: retryable or not, as the synchronous
    error would be)."""

    async def complete(self, request: dict[str, Any]) -> tuple[dict[str, Any], str]: ...


def custom_id(episode_id: str, step: int, call: int, attempt: int) -> str:
    """The id of one request: the episode's, the step, the call within the step and the attempt
    (a retried request is a new request). At most 64 characters of ``[a-zA-Z0-9_-]``."""
    digest = hashlib.sha256(episode_id.encode()).hexdigest()[:24]
    out = f"e{digest}-s{step}-c{call}-a{attempt}"
    assert CUSTOM_ID.match(out), out
    return out


class BatchTransport(Transport):
    """``tier: batch``: each attempt one request of a provider batch, through ``gateway`` (a
    retried request is a new request, with its own custom id); ``synchronous``: the transport the
    model's client would send it with, which builds its body and reads its answer. Its answers
    are priced from litellm's price table. ``gateway`` None: a transport that only builds bodies
    (a cost estimate)."""

    priced_by: PricedBy = "table"

    def __init__(self, synchronous: Transport, gateway: BatchGateway | None):
        self.synchronous = synchronous
        self.gateway = gateway
        self.marks_cache = synchronous.marks_cache

    def body(self, messages: list[dict[str, Any]], seed: int | None = None) -> dict[str, Any]:
        return self.synchronous.wire(self.synchronous.body(messages, seed))

    def read(self, payload: dict[str, Any]) -> Completion:
        return self.synchronous.read(payload)

    async def send(self, request: Request) -> Answer:
        assert self.gateway is not None, "a batch transport built without a gateway sends nothing"
        payload, batch_id = await self.gateway.complete(
            {"body": request.body, "key": (request.step, request.call, request.attempt)})
        return Answer(self.read(payload), batch_id=batch_id)


__all__ = ["CUSTOM_ID", "BatchGateway", "BatchTransport", "custom_id"]
