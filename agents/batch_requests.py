"""A ``tier: batch`` model's requests and answers in its provider's batch shapes.

The LLM agent does not send a batch model's requests: it hands each one, as the provider's own
request body, to a ``BatchGateway`` (the sweep driver's lockstep rounds, ``orchestrator.batching``)
and gets back the answer as a ``Completion``, as if it had come synchronously: the same parse,
re-ask, budget, retry and trace rules follow. This module holds what that needs and no transport:

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
from typing import Any, Protocol

from agents.openai_compat import Completion, usage_of

# Anthropic's rule for a custom id; OpenAI's ids are free-form, so one rule serves both
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_DATA_URI = re.compile(r"^data:([^;,]+);base64,(.*)$", re.DOTALL)


class BatchGateway(Protocol):
    """Where a batch model's requests go: ``complete`` waits for the request's batch and returns
    its answer and the batch's id, or raises ``agents.openai_compat.EndpointError`` (an errored
    request: retryable or not, as the synchronous error would be)."""

    async def complete(self, request: dict[str, Any]) -> tuple[Completion, str]: ...


def custom_id(episode_id: str, step: int, call: int, attempt: int) -> str:
    """The id of one request: the episode's, the step, the call within the step and the attempt
    (a retried request is a new request). At most 64 characters of ``[a-zA-Z0-9_-]``."""
    digest = hashlib.sha256(episode_id.encode()).hexdigest()[:24]
    out = f"e{digest}-s{step}-c{call}-a{attempt}"
    assert CUSTOM_ID.match(out), out
    return out


def provider_model(model: str) -> str:
    """The name the provider knows a litellm model string by (``moonshot/kimi-k2.6``: ``kimi-k2.6``)."""
    return model.split("/", 1)[1] if "/" in model else model


def batch_body(chat_body: dict[str, Any], api: str, model: str) -> dict[str, Any]:
    """The body of one batch line, from the Chat Completions body the agent would have posted
    (``LLMAgent.request_body``): as it is for ``api == "openai"``, as Messages params for
    ``"anthropic"``."""
    body = {**chat_body, "model": provider_model(model)}
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


__all__ = ["CUSTOM_ID", "BatchGateway", "batch_body", "custom_id", "provider_model", "read_message"]
