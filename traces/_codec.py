"""The column codec: a step's state to its trace columns and back.

``mechanisms_json`` writes the ``mechanisms`` column (keys, doors, switches, gates, and what
each later tile keeps beside, ``Mechanic.info``, after a step, as compact JSON); ``recorded_state`` rebuilds the ``MazeState`` a step
row records from its ``x``, ``y``, ``dir``, ``carrying`` and ``mechanisms`` columns, for the
viewer, replay and the checks of a resumed episode. Both need the maze and its state only, not
the dynamics, the frames or the oracle. ``episode_timelines`` reads an episode's step rows as
``env.discovery`` timelines, for the report and the viewer alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from env.discovery import Move, Timeline, timelines
from env.maze import Maze
from env.state import ACTIONS, MazeState, initial_state, mechanism_info, state_of_info

# what a step row keeps in columns of their own (x, y, dir, carrying); the rest of
# ``env.state.mechanism_info`` is the ``mechanisms`` column
POSE = ("pos", "dir", "carrying")


def mechanisms_json(maze: Maze, state: MazeState) -> str:
    """Keys, doors, switches and gates after a step (and what each later tile of the maze keeps
    beside: ``env.state.mechanism_info``), as compact JSON (the ``mechanisms`` column)."""
    info = mechanism_info(maze, state)
    return json.dumps({k: v for k, v in info.items() if k not in POSE}, sort_keys=True, separators=(",", ":"))


def recorded_state(maze: Maze, x: int, y: int, direction: int, carrying: str | None,
                   mechanisms: dict[str, Any]) -> MazeState:
    """The state a step row records, from its ``x``, ``y``, ``dir``, ``carrying`` and parsed
    ``mechanisms`` columns: the inverse of ``mechanisms_json``. A record that does not fit the
    maze (an unknown key id, a door left out) raises ``KeyError`` or ``ValueError``."""
    return state_of_info(maze, {**mechanisms, "pos": (x, y), "dir": direction, "carrying": carrying})


def episode_timelines(maze: Maze, steps: Iterable[Mapping[str, Any]]) -> list[Timeline]:
    """Each key, door, switch and gate of ``maze`` with its discovery stages in one episode, from
    the episode's step rows (``step``, ``action``, ``x``, ``y``, ``dir``, ``carrying``,
    ``mechanisms``), in any order."""
    start = before = initial_state(maze)
    moves = []
    for row in sorted(steps, key=lambda r: int(r["step"])):
        after = recorded_state(maze, int(row["x"]), int(row["y"]), int(row["dir"]), row["carrying"],
                               json.loads(row["mechanisms"]))
        action = row["action"]
        moves.append(Move(int(row["step"]), None if action is None else ACTIONS.index(action), before, after))
        before = after
    return timelines(maze, start, moves)
