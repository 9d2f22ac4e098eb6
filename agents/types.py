"""The contract between whoever runs an episode and whoever chooses its actions.

An episode runner builds a ``Turn`` each step and awaits ``Agent.act(turn)``; the agent returns a
``Decision``. Built-in agents and the LLM agent implement the same ``Agent`` protocol, so the
runner (and Ray) never know which is which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from env import Maze, MazeState

ParseStatus = Literal["exact", "lenient", "invalid", "builtin"]


@dataclass(frozen=True)
class PastStep:
    """One step already taken, as the agent may be shown it."""

    step: int  # 1-based index of the step
    action: int | None  # None: an invalid reply that became a no-op
    event: str
    state_before: MazeState
    state_after: MazeState


@dataclass(frozen=True)
class Turn:
    """Everything an agent may use to choose the next action."""

    maze: Maze
    protocol: Any  # agents.protocol.Protocol
    step: int  # 1-based index of the step about to be taken
    state: MazeState
    history: tuple[PastStep, ...]
    step_cap: int

    @property
    def steps_remaining(self) -> int:
        return self.step_cap - self.step + 1


@dataclass
class Decision:
    """An agent's answer for one turn, with everything the trace records about it."""

    action: int | None  # None: invalid reply; the runner steps nothing (a no-op step)
    parse: ParseStatus = "builtin"
    reply: str = ""
    reasoning: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_reasoning: int = 0
    reasoning_estimated: bool = False
    cost_usd: float = 0.0
    latency_s: float = 0.0
    finish_reason: str = ""
    retries: int = 0
    reasks: int = 0
    prompt_hash: str = ""
    image_hashes: list[str] = field(default_factory=list)


@runtime_checkable
class Agent(Protocol):
    async def act(self, turn: Turn) -> Decision: ...

    async def aclose(self) -> None: ...


class InfraError(RuntimeError):
    """An infrastructure failure after retries: never a model action, recorded as `error`."""

    def __init__(self, error_class: str, message: str):
        self.error_class = error_class
        super().__init__(message)
