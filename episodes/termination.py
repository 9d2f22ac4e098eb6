"""How an episode ends (docs/design.md §5), checked after every step.

``solved``: the step entered the goal; ``died``: the step left a state a mechanic says is over
(``env.state.dead``: a dead agent can do nothing more, so every further turn would be paid for
nothing); ``step_cap``: the steps reached ``ceil(factor x optimal)``;
``stall``: ``stall_window`` consecutive steps none of which reached a never-seen state, the start
counting as seen. Under the gridbench style a state is its position, carried key and mechanism
state, and the step cap is checked before the stall; under the study style it is the study's
watchdog signature (position, the carried key's colour, the keys taken, open doors, switches on,
open gates; never the facing) and the stall is checked first, as the study's harness did. The
agent can also end an episode without a step (``parse_failed``, ``exhausted``), and ``error`` is
an infrastructure failure: neither is decided here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import partial

from agents.protocol import Protocol
from env.maze import Maze
from env.state import MazeState, dead
from traces import Ending

# the endings these rules decide (the agent's own endings and ``error`` are decided elsewhere)
RULE_ENDINGS: tuple[Ending, ...] = ("solved", "died", "stall", "step_cap")


def step_cap_for(optimal: int, factor: float) -> int:
    """The protocol's step budget: factor x optimal actions, rounded up, at least one step."""
    return max(1, math.ceil(factor * optimal - 1e-9))


def study_signature(maze: Maze, drop: bool = False) -> Callable[[MazeState], Hashable]:
    """The study's stall-watchdog signature of a state in ``maze``; with DROP offered it also holds
    where each key lies, as the study's DROP-era watchdog did (a key put down elsewhere is new)."""
    def signature(s: MazeState) -> Hashable:
        carried = maze.keys[s.carrying].color if s.carrying >= 0 else None
        taken = frozenset(k.id for k, p in zip(maze.keys, s.keys, strict=True) if p is None)
        r1 = (s.pos, carried, taken, s.doors, s.switches, maze.gates_open(s.switches))
        return (*r1, s.keys) if drop else r1
    return signature


def gridbench_signature(s: MazeState) -> Hashable:
    return s.mechanism_key()


@dataclass
class TerminationRules:
    """The termination rules of one episode, fed each step's outcome in order."""

    step_cap: int
    stall_window: int | None  # None: no stall watchdog
    signature: Callable[[MazeState], Hashable] = gridbench_signature
    stall_first: bool = False
    over: Callable[[MazeState], bool] = field(default=lambda state: False)  # env.state.dead on the maze
    seen: set[Hashable] = field(default_factory=set)
    since_novel: int = 0
    reason: Ending | None = None  # set once the episode has ended

    @classmethod
    def start(cls, state: MazeState, step_cap: int, stall_window: int | None, *,
              signature: Callable[[MazeState], Hashable] = gridbench_signature,
              stall_first: bool = False, over: Callable[[MazeState], bool] = lambda state: False) -> TerminationRules:
        return cls(step_cap, stall_window, signature, stall_first, over, seen={signature(state)})

    @classmethod
    def for_episode(cls, maze: Maze, protocol: Protocol, start: MazeState, optimal: int) -> TerminationRules:
        """The rules of an episode of ``protocol`` on ``maze`` from ``start``, ``optimal`` actions
        from the goal: the one place a protocol's style chooses its signature and order, so that
        the loop, a resumed episode and its replay judge every step alike."""
        study = protocol.style == "study"
        return cls.start(start, step_cap_for(optimal, protocol.step_cap_factor), protocol.stall_window,
                         signature=study_signature(maze, protocol.drop) if study else gridbench_signature,
                         stall_first=study, over=partial(dead, maze))

    def observe(self, step: int, state: MazeState, event: str) -> bool:
        """Record the state after step ``step`` (1-based); returns whether it was novel and sets
        ``reason`` when this step ended the episode."""
        key = self.signature(state)
        novel = key not in self.seen
        if novel:
            self.seen.add(key)
            self.since_novel = 0
        else:
            self.since_novel += 1
        stalled = self.stall_window is not None and self.since_novel >= self.stall_window
        capped = step >= self.step_cap
        if event == "goal":
            self.reason = "solved"
        elif self.over(state):
            self.reason = "died"
        elif stalled and (self.stall_first or not capped):
            self.reason = "stall"
        elif capped:
            self.reason = "step_cap"
        return novel
