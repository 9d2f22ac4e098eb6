"""How an episode ends (docs/design.md §5), checked after every step in this order:

``solved``: the step entered the goal; ``step_cap``: the steps reached ``ceil(factor x optimal)``;
``stall``: ``stall_window`` consecutive steps none of which reached a never-seen (position,
carried key, mechanism state) combination, the start counting as seen. ``error`` is not decided
here: it is an infrastructure failure, never a model outcome.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from env.state import MazeState


def step_cap_for(optimal: int, factor: float) -> int:
    """The protocol's step budget: factor x optimal actions, rounded up, at least one step."""
    return max(1, math.ceil(factor * optimal - 1e-9))


@dataclass
class Termination:
    """The termination rules of one episode, fed each step's outcome in order."""

    step_cap: int
    stall_window: int
    seen: set[tuple] = field(default_factory=set)
    since_novel: int = 0
    reason: str | None = None  # set once the episode has ended

    @classmethod
    def start(cls, state: MazeState, step_cap: int, stall_window: int) -> Termination:
        return cls(step_cap, stall_window, seen={state.mechanism_key()})

    def observe(self, step: int, state: MazeState, event: str) -> bool:
        """Record the state after step ``step`` (1-based); returns whether it was novel and sets
        ``reason`` when this step ended the episode."""
        key = state.mechanism_key()
        novel = key not in self.seen
        if novel:
            self.seen.add(key)
            self.since_novel = 0
        else:
            self.since_novel += 1
        if event == "goal":
            self.reason = "solved"
        elif step >= self.step_cap:
            self.reason = "step_cap"
        elif self.since_novel >= self.stall_window:
            self.reason = "stall"
        return novel
