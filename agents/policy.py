"""How an LLM agent turns a turn into model calls and a decision: one policy per protocol style.

A policy knows the protocol, the prompts and the parsing; it calls the model through ``Model``
(in practice ``agents.caller.Caller``) and never learns how a call travels: which transport sends
it, how it is retried or priced (BALROG's split of the agent from its client). What it asks of
the model is a call, the budget each request carried, whether requests carry prompt-cache
markers, and the model's token counter.

- ``GridbenchPolicy`` (``style: gridbench``): one call per step; a reply with no action is a
  no-op step, asked again with the reply and a reminder of the format (``reask``, at most
  ``agents.protocol.REASK_LIMIT`` times) or sent again unchanged (``requery``, ``requery_limit`` calls in a row
  ending the episode); a multi-turn conversation shows the model its own past replies.
- ``agents.study_agent.StudyPolicy`` (``style: study``): the study's querying modes, action
  lists and re-queries.

Both record a decision's calls the same way (``Policy.answered``): their replies and reasoning
joined by ``REASK_SEPARATOR``, their usage summed, the calls and the re-asks counted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from agents.parse import parse_action
from agents.prompt import build_messages, fingerprint, reask_messages, with_cache_markers
from agents.transport import Completion
from agents.types import REASK_SEPARATOR, Decision, Turn
from agents.usage import Budget, Usage


class Model(Protocol):
    """What a policy may ask of the model it plays."""

    @property
    def budget(self) -> Budget:
        """What every request allowed the model to spend, as sent."""
        ...

    @property
    def marks_cache(self) -> bool:
        """Whether requests carry prompt-cache markers (where a policy puts them)."""
        ...

    async def call(self, messages: list[dict[str, Any]]) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...


class Policy(ABC):
    """One episode's way of asking a model for actions (see the module's docstring)."""

    def __init__(self, model: Model):
        self.model = model

    @abstractmethod
    async def act(self, turn: Turn) -> Decision: ...

    @abstractmethod
    async def resume(self, turn: Turn, decision: Decision) -> None:
        """Take back a recorded turn (``agents.types.Agent.resume``)."""

    def answered(self, calls: Sequence[Completion], prompt_hash: str, image_hashes: Sequence[str]) -> Decision:
        """The record of one decision's calls (at least one), with no action yet."""
        reasonings = [c.reasoning for c in calls]
        return Decision(
            action=None,
            parse="invalid",
            reply=REASK_SEPARATOR.join(c.reply for c in calls),
            reasoning=REASK_SEPARATOR.join(reasonings) if any(reasonings) else "",
            finish_reason=calls[-1].finish_reason,
            usage=Usage.total(c.usage for c in calls) + Usage(calls=len(calls), reasks=len(calls) - 1),
            budget=self.model.budget,
            prompt_hash=prompt_hash,
            image_hashes=tuple(image_hashes),
        )


class GridbenchPolicy(Policy):
    """gridbench's own protocol (``style: gridbench``)."""

    def __init__(self, model: Model):
        super().__init__(model)
        self._replies: list[str] = []  # the last reply of each past turn (a multi-turn conversation)

    async def act(self, turn: Turn) -> Decision:
        p = turn.protocol
        messages = build_messages(turn, self._replies)
        prompt_hash, image_hashes = fingerprint(messages)
        if self.model.marks_cache:
            messages = with_cache_markers(messages, turn)
        calls: list[Completion] = []
        # calls after the first one that gave no action: a re-ask shows the reply and a reminder
        # of the format, a re-query sends the same request again
        while True:
            completion = await self.model.call(messages)
            calls.append(completion)
            action, status = parse_action(completion.reply)
            if action is not None or len(calls) >= p.calls_per_turn:
                break
            if p.invalid_output == "reask":
                messages = reask_messages(messages, completion.reply)
        self._replies.append(calls[-1].reply)
        return replace(self.answered(calls, prompt_hash, image_hashes), action=action, parse=status,
                       ending="parse_failed" if action is None and p.invalid_output == "requery" else None)

    async def resume(self, turn: Turn, decision: Decision) -> None:
        """A multi-turn conversation shows the model its own past replies: the last of each turn's."""
        self._replies.append(decision.reply.split(REASK_SEPARATOR)[-1])
