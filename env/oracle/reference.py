"""The plain BFS over ``MazeState`` and ``env.state.step``: the reference the fast oracle is
held to (tests/oracle), and its answer for a start the dense index cannot express."""

from __future__ import annotations

import time
from collections import deque

from env.maze import Maze
from env.oracle.solution import STATE_CAP, Solution
from env.oracle.space import USEFUL_ACTIONS, USEFUL_WITH_DROP
from env.state import MazeState, initial_state, no_change, step


def reference_solve(maze: Maze, start: MazeState | None = None, cap: int = STATE_CAP, *,
                    drop: bool = False) -> Solution:
    """The plain BFS over ``MazeState`` and ``env.state.step``: slow, obviously right. ``drop``:
    DROP is offered (an edge of the search only then)."""
    t0 = time.perf_counter()
    s0 = start or initial_state(maze)
    goal = maze.goal
    if s0.pos == goal:
        return Solution("solved", 0, [], 1, time.perf_counter() - t0)
    parent: dict[MazeState, tuple[MazeState, int] | None] = {s0: None}
    frontier = deque([s0])
    while frontier:
        s = frontier.popleft()
        for a in USEFUL_WITH_DROP if drop else USEFUL_ACTIONS:
            n, event = step(maze, s, a)
            if n in parent or no_change(s, n):
                continue
            parent[n] = (s, a)
            if event == "goal":
                plan = []
                link = parent[n]
                while link is not None:
                    prev, act = link
                    plan.append(act)
                    link = parent[prev]
                plan.reverse()
                return Solution("solved", len(plan), plan, len(parent), time.perf_counter() - t0)
            if len(parent) >= cap:
                return Solution("undecided", None, [], len(parent), time.perf_counter() - t0)
            frontier.append(n)
    return Solution("unsolvable", None, [], len(parent), time.perf_counter() - t0)
