"""Scripted agents with one known defect each, for the attribution tests (the scripted server's
modes ``never-toggle``, ``colour-blind``, ``mirror-blind`` and ``text-blind``;
docs/variants.md#scripted-agents).

Each plans exactly, as the oracle does, but under a flaw, then acts in the real maze:

- ``never-toggle`` plans under dynamics where no action changes a switch. Where the goal needs a
  switch it walks to the state nearest the goal by the real oracle's action distance among those
  it can reach (fewest actions first on a tie) and answers ``done`` there (a no-op: the stall
  watchdog ends the episode).
- ``colour-blind`` plans in the maze with every key and door of one colour (any key opens any
  door), so it takes the nearest key whatever its colour; under ``multinet-r1`` a key is never
  dropped nor swapped, so a decoy in hand is the end of the episode.
- ``mirror-blind`` on a maze whose variant is a mirror plays the oracle's plan of the maze it is
  the twin of (action ``step`` of that plan at step ``step``, ``done`` after its end), and is the
  oracle everywhere else.
- ``text-blind`` reads frames only: shown a request with no image (the text map alone, as a
  ``projection-text`` twin shows it) it answers ``done`` (a no-op: the stall watchdog ends the
  episode); with a frame, 2D or 3D, it is the oracle.

A plan is a list of actions from the state shown; its first is the answer to a one-action turn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from env.maze import Maze
    from env.state import MazeState

DEFECTS = ("never-toggle", "colour-blind", "mirror-blind", "text-blind")
MOVES = range(5)  # every action but done (env.state.ACTIONS order)
ONE_COLOUR = "red"


def defect_plan(mode: str, maze: Maze, state: MazeState, step: int | None,
                known: Callable[[str], Maze | None], shown_image: bool = True) -> list[int]:
    """The plan of the agent ``mode`` from ``state``; ``step`` is the step the prompt asks about,
    ``known(checksum)`` a maze the server was given (a mirror's source), ``shown_image`` whether
    the request holds a frame."""
    from env.oracle import solve
    from env.state import DONE
    from env.variants import record_of

    if mode == "never-toggle":
        return never_toggle_plan(maze, state)
    if mode == "colour-blind":
        return solve(one_colour(maze), start=state).plan or [DONE]
    if mode == "text-blind":
        return (solve(maze, start=state).plan or [DONE]) if shown_image else [DONE]
    if mode != "mirror-blind":
        raise ValueError(f"no such defect {mode!r} (defects: {', '.join(DEFECTS)})")
    record = record_of(maze)
    source = known(record["twin_of_checksum"]) if record and record["kind"] == "mirror" else None
    if source is None:
        return solve(maze, start=state).plan or [DONE]
    if step is None:
        raise ValueError("mirror-blind plays its source's plan by step: the prompt must name the step")
    plan = solve(source).plan or []
    return [*plan[step - 1:], DONE]


def never_toggle_plan(maze: Maze, state: MazeState) -> list[int]:
    """Breadth first over ``env.state.step`` without the transitions that change a switch."""
    from env.oracle import action_distance
    from env.state import DONE, step

    parent: dict[MazeState, tuple[MazeState, int] | None] = {state: None}
    queue = deque([state])
    best, best_key = state, (_distance(action_distance(maze, state)), 0)
    depth = {state: 0}
    while queue:
        s = queue.popleft()
        if s.pos == maze.goal:
            return _path(parent, s)
        for a in MOVES:
            nxt, _ = step(maze, s, a)
            if nxt in parent or nxt.switches != s.switches:
                continue
            parent[nxt] = (s, a)
            depth[nxt] = depth[s] + 1
            key = (_distance(action_distance(maze, nxt)), depth[nxt])
            if key < best_key:
                best, best_key = nxt, key
            queue.append(nxt)
    return [*_path(parent, best), DONE]


def _distance(d: int | None) -> float:
    return float("inf") if d is None else d


def _path(parent: dict[MazeState, tuple[MazeState, int] | None], s: MazeState) -> list[int]:
    out = []
    link = parent[s]
    while link is not None:
        s, a = link
        out.append(a)
        link = parent[s]
    return out[::-1]


@lru_cache(maxsize=64)
def one_colour(maze: Maze) -> Maze:
    """The maze with every key and door of one colour: the world as the colour-blind agent plans it."""
    from env.maze import maze_from_dict

    doc = maze.to_dict()
    doc["objects"] = [{**o, "color": ONE_COLOUR} if o["kind"] in ("key", "door") else o for o in doc["objects"]]
    return maze_from_dict(doc, f"<{maze.id} in one colour>")
