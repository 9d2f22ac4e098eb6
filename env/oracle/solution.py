"""What every solver answers: a ``Solution`` (status, optimum, plan, states explored), and the cap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from env.state import ACTIONS

STATE_CAP = 500_000

Status = Literal["solved", "unsolvable", "undecided"]


@dataclass
class Solution:
    status: Status
    optimal_actions: int | None
    plan: list[int] = field(default_factory=list)
    states_explored: int = 0
    seconds: float = 0.0

    @property
    def plan_names(self) -> list[str]:
        return [ACTIONS[a] for a in self.plan]
