"""A ``tier: batch`` model's transport: its requests and answers in its provider's batch shapes.

The LLM agent does not send a batch model's requests itself: its ``BatchTransport`` hands each
one, as the provider's own request body, to a ``BatchGateway`` (the sweep driver's lockstep
rounds, ``orchestrator.batching``) and gets back the answer as a ``Completion``, as if it had come
synchronously: the same parse, re-ask, budget, retry loop (``agents.caller``) and trace rules
follow. Gathering the rounds, submitting, polling and journaling are the driver's; this module
holds what the agent's side needs:

- ``BatchTransport``: the transport (``agents.transport``) whose ``send`` goes through the gateway.
- ``batch_body``: the body a batch line carries. OpenAI and Moonshot batch lines are Chat
  Completions bodies; Anthropic's are Messages API params (the system prompt apart, images as
  base64 sources, ``cache_control`` marks kept: prompt caching works inside batches).
- ``read_message``: an Anthropic Message (a ``succeeded`` batch result) as a ``Completion``.
- ``custom_id``: a request's id in its batch, the same every time the episode reaches the same
  request (after a kill, too): how a rerun finds the batch that already holds it.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any, Protocol

from agents.model import request_name
from agents.openai_compat import chat_body, usage_of
from agents.transport import Answer, Completion, PricedBy, Request, Transport, seeded

if TYPE_CHECKING:
    from agents.model import ModelConfig

# Anthropic's rule for a custom id; OpenAI's ids are free-form, so one rule serves both
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_DATA_URI = re.compile(r"^data:([^;,]+);base64,(.*)$", re.DOTALL)


class BatchGateway(Protocol):
    """Where a batch model's requests go: ``complete`` waits for the request's batch and returns
    its answer and the batch's id, or raises ``agents.transport.EndpointError`` (an errored
    request: retryable or not, as the synchronous error would be)."""

    async def complete(self, request: dict[str, Any]) -> tuple[Completion, str]: ...


def custom_id(episode_id: str, step: int, call: int, attempt: int) -> str:
    """The id of one request: the episode's, the step, the call within the step and the attempt
    (a retried request is a new request). At most 64 characters of ``[a-zA-Z0-9_-]``."""
    digest = hashlib.sha256(episode_id.encode()).hexdigest()[:24]
    out = f"e{digest}-s{step}-c{call}-a{attempt}"
    assert CUSTOM_ID.match(out), out
    return out


def batch_body(chat: dict[str, Any], api: str, model: str) -> dict[str, Any]:
    """The body of one batch line, from the Chat Completions body the OpenAI-compatible transport
    would have posted (``agents.openai_compat.chat_body``): as it is for ``api == "openai"``, as
    Messages params for ``"anthropic"``."""
    body = {**chat, "model": request_name(model)}
    if api == "openai":
        return body
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for m in body.pop("messages"):
        blocks = _anthropic_blocks(m.get("content"))
        if m.get("role") == "system":
            system.extend(blocks)
        else:
            messages.append({"role": m.get("role"), "content": blocks})
    if system:
        body["system"] = system
    body["messages"] = messages
    return body


def _anthropic_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for part in content or []:
        if part.get("type") == "image_url":
            url = part.get("image_url", {}).get("url", "")
            m = _DATA_URI.match(url)
            block: dict[str, Any] = ({"type": "image", "source": {"type": "base64", "media_type": m.group(1),
                                                                  "data": m.group(2)}}
                                     if m else {"type": "image", "source": {"type": "url", "url": url}})
        else:
            block = {"type": "text", "text": part.get("text", "")}
        if "cache_control" in part:
            block["cache_control"] = part["cache_control"]
        blocks.append(block)
    return blocks


# Anthropic's stop reasons in the words the reply parser and the traces use (OpenAI's)
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
         "refusal": "content_filter"}


def read_message(message: dict[str, Any]) -> Completion:
    """An Anthropic Message as a ``Completion``: text blocks are the reply, thinking blocks the
    reasoning, the usage read as the synchronous path reads it."""
    texts, thoughts = [], []
    for block in message.get("content") or []:
        if block.get("type") == "text":
            texts.append(block.get("text", ""))
        elif block.get("type") == "thinking":
            thoughts.append(block.get("thinking", ""))
    stop = str(message.get("stop_reason") or "")
    return Completion(reply="".join(texts), reasoning="\n\n".join(t for t in thoughts if t),
                      finish_reason=_STOP.get(stop, stop), usage=usage_of(message.get("usage")))


class BatchTransport(Transport):
    """``tier: batch``: each attempt one request of a provider batch, through ``gateway`` (a
    retried request is a new request, with its own custom id). Its bodies keep their prompt-cache
    markers (caching works inside batches); its answers are priced from litellm's price table.
    ``gateway`` None: a transport that only builds bodies (a cost estimate)."""

    priced_by: PricedBy = "table"

    def __init__(self, config: ModelConfig, fields: dict[str, Any], gateway: BatchGateway | None):
        self.config = config
        self.fields = fields
        self.gateway = gateway
        self.marks_cache = config.family.marks_cache

    def body(self, messages: list[dict[str, Any]], seed: int | None = None) -> dict[str, Any]:
        return batch_body(chat_body(self.config, seeded(self.fields, seed), messages), self.config.family.batch_api,
                          self.config.model)

    async def send(self, request: Request) -> Answer:
        assert self.gateway is not None, "a batch transport built without a gateway sends nothing"
        completion, batch_id = await self.gateway.complete(
            {"body": request.body, "key": (request.step, request.call, request.attempt)})
        return Answer(completion, batch_id=batch_id)


__all__ = ["CUSTOM_ID", "BatchGateway", "BatchTransport", "batch_body", "custom_id",
           "read_message"]
