"""Exact BFS oracle over the full maze state (DESIGN section 4).

Reference implementation: correct and simple. The public names here are the contract the rest
of gridbench uses; faster internals may replace the bodies, never the answers.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from env.maze import DIR_VECTORS, Maze
from env.state import ACTIONS, MazeState, initial_state, step

STATE_CAP = 500_000
_USEFUL = tuple(i for i, a in enumerate(ACTIONS) if a != "done")  # `done` never changes the state


@dataclass
class Solution:
    status: Literal["solved", "unsolvable", "undecided"]
    optimal_actions: int | None
    plan: list[int] = field(default_factory=list)
    states_explored: int = 0
    seconds: float = 0.0

    @property
    def plan_names(self) -> list[str]:
        return [ACTIONS[a] for a in self.plan]


def solve(maze: Maze, start: MazeState | None = None, cap: int = STATE_CAP) -> Solution:
    """Shortest action sequence from ``start`` (default: the maze's start) into the goal."""
    t0 = time.perf_counter()
    s0 = start or initial_state(maze)
    goal = tuple(maze.goal)
    if s0.pos == goal:
        return Solution("solved", 0, [], 1, time.perf_counter() - t0)
    parent: dict[MazeState, tuple[MazeState, int] | None] = {s0: None}
    frontier = deque([s0])
    while frontier:
        s = frontier.popleft()
        for a in _USEFUL:
            n, event = step(maze, s, a)
            if n in parent:
                continue
            parent[n] = (s, a)
            if event == "goal":
                plan = []
                cur = n
                while parent[cur] is not None:
                    prev, act = parent[cur]
                    plan.append(act)
                    cur = prev
                plan.reverse()
                return Solution("solved", len(plan), plan, len(parent), time.perf_counter() - t0)
            if len(parent) >= cap:
                return Solution("undecided", None, [], len(parent), time.perf_counter() - t0)
            frontier.append(n)
    return Solution("unsolvable", None, [], len(parent), time.perf_counter() - t0)


def optimal_actions(maze: Maze) -> Solution:
    return solve(maze)


class DistanceTable:
    """Action distance to the goal for every state reachable from the start, computed once."""

    def __init__(self, maze: Maze, cap: int = STATE_CAP):
        self.maze = maze
        goal = tuple(maze.goal)
        s0 = initial_state(maze)
        succ: dict[MazeState, list[MazeState]] = {}
        frontier = deque([s0])
        seen = {s0}
        goals = []
        while frontier:
            s = frontier.popleft()
            if s.pos == goal:
                goals.append(s)
                succ[s] = []
                continue
            nexts = []
            for a in _USEFUL:
                n, _ = step(maze, s, a)
                nexts.append(n)
                if n not in seen:
                    seen.add(n)
                    if len(seen) > cap:
                        raise OverflowError(f"{maze.id}: more than {cap} reachable states")
                    frontier.append(n)
            succ[s] = nexts
        pred: dict[MazeState, list[MazeState]] = {s: [] for s in succ}
        for s, ns in succ.items():
            for n in ns:
                pred[n].append(s)
        dist = {g: 0 for g in goals}
        q = deque(goals)
        while q:
            s = q.popleft()
            for p in pred[s]:
                if p not in dist:
                    dist[p] = dist[s] + 1
                    q.append(p)
        self._dist = dist
        self.states = len(succ)

    def action_distance(self, state: MazeState) -> int | None:
        """Actions still needed from ``state``; None when the goal can no longer be reached."""
        if state.pos == tuple(self.maze.goal):
            return 0
        return self._dist.get(state)


@lru_cache(maxsize=64)
def distance_table(maze: Maze) -> DistanceTable:
    return DistanceTable(maze)


def action_distance(maze: Maze, state: MazeState) -> int | None:
    return distance_table(maze).action_distance(state)


@lru_cache(maxsize=256)
def _tile_field(maze: Maze) -> dict[tuple[int, int], int]:
    goal = tuple(maze.goal)
    dist = {goal: 0}
    q = deque([goal])
    walls = maze.walls
    while q:
        x, y = q.popleft()
        for dx, dy in DIR_VECTORS:
            n = (x + dx, y + dy)
            if n not in dist and 0 <= n[0] < maze.width and 0 <= n[1] < maze.height and not walls[n]:
                dist[n] = dist[(x, y)] + 1
                q.append(n)
    return dist


def tile_distance(maze: Maze, pos: tuple[int, int]) -> int | None:
    """Moves from ``pos`` to the goal over non-wall cells; doors, gates and keys count as open."""
    return _tile_field(maze).get(tuple(pos))
