"""The contract between whoever runs an episode and whoever chooses its actions.

An episode runner builds a ``Turn`` each step and awaits ``Agent.act(turn)``; the agent returns a
``Decision``. Built-in agents and the LLM agent implement the same ``Agent`` protocol, so the
runner (and Ray) never know which is which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from agents.usage import Budget, Usage
from env.maze import Maze
from env.state import MazeState

if TYPE_CHECKING:
    from agents.protocol import Protocol as EpisodeProtocol

ParseStatus = Literal["exact", "lenient", "invalid", "builtin"]
# how the replies of several calls for one decision (re-asks, re-queries) are joined in its record
REASK_SEPARATOR = "\n\n[re-asked]\n\n"
# how an agent ends an episode without a step: its replies gave no action `requery_limit` times in
# a row, or a trajectory it planned ran out
AgentEnding = Literal["parse_failed", "exhausted"]


@dataclass(frozen=True)
class PastStep:
    """One step already taken, as the agent may be shown it."""

    step: int  # 1-based index of the step
    action: int | None  # None: an invalid reply that became a no-op
    event: str
    state_before: MazeState
    state_after: MazeState
    token: str | None = None  # the study style's token the reply gave for it (MOVE_NORTH for its turns too)


@dataclass(frozen=True)
class PastQuery:
    """One model call of a multi-turn chat (study style): the state it was asked in and the
    reply in the parsed form the chat keeps (empty: it held no action)."""

    state: MazeState
    reply: str
    step: int | None = None  # the step it was asked for (its moves-remaining line); None: not known


@dataclass(frozen=True)
class Turn:
    """Everything an agent may use to choose the next action."""

    maze: Maze
    protocol: EpisodeProtocol
    step: int  # 1-based index of the step about to be taken
    state: MazeState
    history: tuple[PastStep, ...]
    step_cap: int

    @property
    def steps_remaining(self) -> int:
        return self.step_cap - self.step + 1


@dataclass(frozen=True)
class Decision:
    """An agent's answer for one turn, with everything the trace records about it."""

    action: int | None  # None: invalid reply; the runner steps nothing (a no-op step)
    parse: ParseStatus = "builtin"
    reply: str = ""
    reasoning: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    budget: Budget = field(default_factory=Budget)
    prompt_hash: str = ""
    image_hashes: tuple[str, ...] = ()
    # study style: the token behind this step, the actions its query returned (on the query's
    # first step only) and the sub-goal it named
    token: str | None = None
    plan: tuple[str, ...] = ()
    subgoal: str = ""
    # how the calls were bought (the model entry's tier; None for built-in agents) and the
    # provider batches they went through (comma-separated ids; None when none)
    tier: str | None = None
    batch_id: str | None = None
    # the failed attempts of this turn's calls that were retried (the caller's JSON list of
    # ``{"class", "at", "waited_s"}``); None when none
    failures: str | None = None
    # set when the agent ends the episode instead of acting (``action`` is then None); the calls
    # of this decision are the episode's, not a step's
    ending: AgentEnding | None = None


@runtime_checkable
class Agent(Protocol):
    async def act(self, turn: Turn) -> Decision: ...

    async def resume(self, turn: Turn, decision: Decision) -> None:
        """Take back a turn the agent played before an interruption (``decision`` is what it
        decided then, read from the durable trace), so that it remembers what it would have; called
        once per recorded turn, in order, before play goes on. ``ResumeMismatch`` when the agent
        cannot be what it was."""
        ...

    async def aclose(self) -> None: ...


class ResumeMismatch(ValueError):
    """A recorded step that cannot be taken back as it was: never resumed over silently."""


class InfraError(RuntimeError):
    """An infrastructure failure after retries: never a model action, recorded as `error`."""

    def __init__(self, error_class: str, message: str):
        self.error_class = error_class
        super().__init__(message)
