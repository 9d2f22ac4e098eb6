"""A step's outcome columns, built and checked in one place.

The columns of a step row that the env and the episode's rules decide (event, position, facing,
carried key, mechanisms, novelty, both distances) are built here for the loop
(``Playthrough.apply``), checked here when an interrupted episode is resumed from its journal
(``Playthrough.replay``), and built and checked again by ``gridbench replay``. Each of the three
holds one ``StepRows`` per episode, made from the episode's own protocol, so novelty and the
ending are judged by the same ``TerminationRules`` (``TerminationRules.for_episode``) everywhere.

Only the dynamics differ on purpose: the loop and resume step ``MazeEnv``, replay the reference
``env.state.step``, so a passing replay also holds the two implementations to each other. Both
come in as ``move``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from agents.protocol import Protocol
from env import Maze
from env.oracle import DistanceTable, tile_distance
from env.state import MazeState
from episodes.termination import TerminationRules
from traces import mechanisms_json


def progress(d_start: int | None, d_end: int | None, solved: bool) -> float:
    """An episode row's ``progress_*`` column: clip(1 - d_end / d_start, 0, 1); a goal that can no longer be reached scores 0."""
    if solved:
        return 1.0
    if d_end is None or not d_start or d_start <= 0:
        return 0.0
    return min(1.0, max(0.0, 1.0 - d_end / d_start))


# the columns a step's outcome decides, checked in this order (the first that differs is reported)
CHECKED = ("event", "x", "y", "dir", "carrying", "mechanisms", "novel", "action_distance", "tile_distance")

# the dynamics of one step: an action in, the state after it and its event out
Move = Callable[[int], tuple[MazeState, str]]


@dataclass(frozen=True)
class StepOutcome:
    """The ``CHECKED`` columns of one step row."""

    event: str
    x: int
    y: int
    dir: int
    carrying: str | None
    mechanisms: str
    novel: bool
    action_distance: int | None
    tile_distance: int | None

    def columns(self) -> dict[str, Any]:
        return asdict(self)

    def check(self, step: int, recorded: Mapping[str, Any] | object) -> Mismatch | None:
        """The first ``CHECKED`` column where ``recorded`` (a ``StepRecord`` or a trace row) differs."""
        for column in CHECKED:
            was = plain(recorded[column] if isinstance(recorded, Mapping) else getattr(recorded, column))
            now = getattr(self, column)
            if was != now:
                return Mismatch(step, column, was, now)
        return None


@dataclass
class Mismatch:
    step: int
    column: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        return f"step {self.step}: {self.column} recorded {self.recorded!r}, replayed {self.replayed!r}"


class StepRows:
    """One episode's steps taken in order: the state, the termination rules that judge each step,
    and the outcome columns of each step's row."""

    def __init__(self, maze: Maze, protocol: Protocol, table: DistanceTable, start: MazeState, optimal: int):
        self.maze, self.table, self.state = maze, table, start
        self.termination = TerminationRules.for_episode(maze, protocol, start, optimal)
        self.taken = 0

    def take(self, action: int | None, move: Move) -> StepOutcome:
        """Take the next step (``action`` None: an invalid reply, a no-op step) and return its
        outcome; the termination rules observe it (``termination.reason`` once it ends the episode)."""
        self.taken += 1
        if action is None:
            event = "noop"
        else:
            self.state, event = move(action)
        state, maze = self.state, self.maze
        novel = self.termination.observe(self.taken, state, event)
        return StepOutcome(
            event=event, x=state.pos[0], y=state.pos[1], dir=state.dir,
            carrying=maze.keys[state.carrying].id if state.carrying >= 0 else None,
            mechanisms=mechanisms_json(maze, state), novel=novel,
            action_distance=self.table.action_distance(state), tile_distance=tile_distance(maze, state.pos),
        )


def plain(v: Any) -> Any:
    """A value read back from a trace as plain Python: numpy and pandas scalars unwrapped, a null
    (NaN, pandas' NA) as None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if hasattr(v, "item"):
        return plain(v.item())
    if type(v).__name__ == "NAType":  # pandas.NA, without importing pandas here
        return None
    return v
