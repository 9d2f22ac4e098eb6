"""The study's policy (``style: study``): how an LLM agent queries under the study style, its
querying modes, action lists, cardinal expansion and re-queries, as the study's harness stepped
them (docs/protocol.md, "Querying"). Its sibling is ``agents.policy.GridbenchPolicy``.

- ``step``: one query per step; only the first action of a reply is taken.
- ``subgoal``: a reply names a sub-goal and a list of actions; they are taken one per step, and
  the model is asked again when the list runs out.
- ``trajectory``: one query for the whole episode; when its list runs out the episode ends
  ``exhausted``.
- A bump or a ``DONE`` off the goal throws the rest of a list away (a trajectory is then spent).
- Cardinal tokens become turns and a forward when they are taken, from the facing of that moment.
- A reply with no action: ``requery`` asks the same request again with no step between (the study
  counted these; ``requery_limit`` in a row end the episode ``parse_failed``), byte for byte as R1
  did or, with ``requery: corrective``, with one corrective line added as the revised harness did;
  ``noop`` makes it a step that changes nothing.

Replies of servers that leave the model's reasoning inline (``<think>...</think>``, as the study's
Qwen server did) are parsed whole, as the study's parser read them; the think block is recorded
as the step's reasoning and kept out of its reply.
"""

from __future__ import annotations

import re
from dataclasses import replace

from agents.actions import primitives
from agents.parse import SENTINEL, StudyReply, parse_study
from agents.policy import Model, Policy
from agents.prompt import fingerprint
from agents.study_prompt import build_study_messages, corrective_requery, study_cache_markers
from agents.transport import Completion
from agents.types import Decision, ParseStatus, PastQuery, PastStep, ResumeMismatch, Turn
from env.state import DONE

_INLINE_REASONING = re.compile(r"^\s*<think>(.*?)(?:</think>|$)", re.DOTALL)


def failed(past: PastStep) -> bool:
    """A step after which the study's harness threw the rest of an action list away."""
    return past.event == "bump" or past.action == DONE


def chat_reply(reply: StudyReply, querying: str) -> str:
    """A past reply as the multi-turn chat shows it: its parsed form (empty: no action)."""
    if not reply.tokens:
        return ""
    head = f"SUB_GOAL: {reply.subgoal}\n" if querying == "subgoal" and reply.subgoal else ""
    return f"{head}{SENTINEL}: {', '.join(reply.tokens)}"


def split_inline_reasoning(completion: Completion) -> Completion:
    """A reply that opens with a think block: the block as reasoning, the rest as the reply."""
    if completion.reasoning:
        return completion
    m = _INLINE_REASONING.match(completion.reply)
    if not m:
        return completion
    return replace(completion, reply=completion.reply[m.end():].lstrip(), reasoning=m.group(1).strip())


class StudyPolicy(Policy):
    """One episode's queries of an LLM agent under the study style."""

    def __init__(self, model: Model):
        super().__init__(model)
        self._queue: list[str] = []  # tokens of the last query not taken yet
        self._buffer: list[tuple[int, str]] = []  # primitives of the token being taken, with it
        self._status: ParseStatus = "exact"
        self._planned = False  # trajectory: its one list has been given
        self._chat: list[PastQuery] = []

    def _drop_plan_after_failure(self, turn: Turn) -> None:
        if turn.history and failed(turn.history[-1]):
            self._queue.clear()
            self._buffer.clear()

    def _take(self, turn: Turn) -> tuple[int, str] | None:
        if not self._buffer:
            if not self._queue:
                return None
            token = self._queue.pop(0)
            self._buffer = [(a, token) for a in primitives(token, turn.state.dir)]
        return self._buffer.pop(0)

    def _parse(self, turn: Turn, text: str) -> StudyReply:
        p = turn.protocol
        return parse_study(text, action_space=p.action_space, querying=p.querying,
                           actions_anywhere=p.actions_anywhere, drop=p.drop)

    def _remember(self, turn: Turn, reply: StudyReply) -> None:
        if turn.protocol.conversation == "multi":
            self._chat.append(PastQuery(turn.state, chat_reply(reply, turn.protocol.querying), turn.step))

    async def act(self, turn: Turn) -> Decision:
        p = turn.protocol
        self._drop_plan_after_failure(turn)
        taken = self._take(turn)
        if taken is not None:
            return Decision(action=taken[0], parse=self._status, token=taken[1])
        if p.querying == "trajectory" and self._planned:
            return Decision(action=None, parse="invalid", ending="exhausted")
        calls: list[Completion] = []
        prompt_hash, image_hashes = "", list[str]()
        reply = StudyReply((), "invalid")
        for attempt in range(p.calls_per_turn):
            messages = build_study_messages(turn, self._chat)
            if attempt and p.requery == "corrective":
                messages = corrective_requery(messages, p, turn.maze.skin)
            prompt_hash, image_hashes = fingerprint(messages)
            # the study's client marked the end of the system message and the request's last block
            completion = await self.model.call(study_cache_markers(messages) if self.model.marks_cache else messages)
            reply = self._parse(turn, completion.reply)
            calls.append(self._recorded(completion))
            self._remember(turn, reply)
            if reply.tokens:
                break
        answered = replace(self.answered(calls, prompt_hash, image_hashes), subgoal=reply.subgoal)
        if not reply.tokens:
            return replace(answered, ending="parse_failed" if p.invalid_output == "requery" else None)
        self._queue, self._status, self._planned = list(reply.tokens), reply.status, True
        taken = self._take(turn)
        assert taken is not None  # a parsed reply has at least one token, and a token one primitive
        return replace(answered, action=taken[0], parse=reply.status, token=taken[1], plan=reply.tokens)

    def _recorded(self, completion: Completion) -> Completion:
        """The completion as the trace records it: an inline think block becomes its reasoning (its
        tokens counted from the text when the server reported none). Parsing reads the whole reply."""
        split = split_inline_reasoning(completion)
        if split is completion or split.usage.tokens_reasoning:
            return split
        usage = replace(split.usage, tokens_reasoning=self.model.count_tokens(split.reasoning), reasoning_estimated=True)
        return replace(split, usage=usage)

    async def resume(self, turn: Turn, decision: Decision) -> None:
        """Take a recorded step back: its query's list and chat rebuilt from what the step records
        (the calls, the parsed list and sub-goal), then the same action taken from the list
        (``ResumeMismatch`` if it is not)."""
        self._drop_plan_after_failure(turn)
        if decision.usage.calls:
            failures = decision.usage.calls - (1 if decision.plan else 0)
            for _ in range(failures):
                self._remember(turn, StudyReply((), "invalid"))
            if decision.plan:
                self._remember(turn, StudyReply(decision.plan, decision.parse, decision.subgoal))
                self._queue, self._status, self._planned = list(decision.plan), decision.parse, True
                self._buffer.clear()
        taken = self._take(turn) if decision.action is not None else None
        recorded = (decision.action, decision.token) if decision.action is not None else None
        if taken != recorded:
            raise ResumeMismatch(f"step {turn.step}: the recorded action list gives {taken}, the step "
                                 f"records {recorded}")
