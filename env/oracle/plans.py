"""Shortest plans: ``solve`` over the dense state space, in the study's own search order under
the study's rulesets (docs/oracle.md)."""

from __future__ import annotations

import time
from collections import deque

from env import jit
from env.maze import Maze
from env.oracle import compiled, explicit
from env.oracle.bfs import search
from env.oracle.reference import reference_solve
from env.oracle.solution import STATE_CAP, Solution
from env.oracle.space import StateSpace, Unencodable, state_space
from env.state import MazeState


def solve(maze: Maze, start: MazeState | None = None, cap: int = STATE_CAP, *,
          cache: bool = True, drop: bool = False) -> Solution:
    """Shortest action sequence from ``start`` (default: the maze's start) into the goal.

    ``cache=False`` keeps a one-off maze (an edited copy, say) out of the per-maze cache.
    ``drop``: DROP is offered (the protocol's ``actions: with_drop``), so the search has a DROP
    edge; without it, never.
    """
    t0 = time.perf_counter()
    space = state_space(maze, drop) if cache else StateSpace(maze, drop)
    try:
        sid = space.encode(start) if start is not None else space.start_id()
    except Unencodable:
        return reference_solve(maze, start, cap, drop=drop)
    if space.r1:
        return _study_search(space, sid, cap, t0)
    found = search(space, [sid], cap, stop_at_goal=True, edges=False)
    explored = int(found.ids.size)
    if found.status == "solved":
        plan = found.plan_to(found.goal_index)
        return Solution("solved", len(plan), plan, explored, time.perf_counter() - t0)
    return Solution(found.status, None, [], explored, time.perf_counter() - t0)


def _study_search(space: StateSpace, sid: int, cap: int, t0: float) -> Solution:
    """The study's BFS (docs/oracle.md): successors in the study's order, the goal tested when a
    state is generated, ``states_explored`` the distinct states generated so far (the start
    included). Like the study's validator it gives up as ``undecided`` once ``cap`` states have
    been expanded."""
    goal = space.goal_floor
    if (sid % space.N) >> 2 == goal:
        return Solution("solved", 0, [], 1, time.perf_counter() - t0)
    if jit.enabled():
        found = (explicit.study_search if space.explicit else compiled.study_search)(space, sid, cap)
        if found is not None:
            status, plan, explored = found
            return Solution(status, len(plan) if status == "solved" else None, plan, explored,
                            time.perf_counter() - t0)
    parent: dict[int, tuple[int, int]] = {sid: (-1, -1)}
    queue = deque([sid])
    expanded = 0
    while queue:
        if expanded >= cap:
            return Solution("undecided", None, [], len(parent), time.perf_counter() - t0)
        cur = queue.popleft()
        expanded += 1
        for n, a in space.moves(cur):
            if n in parent:
                continue
            parent[n] = (cur, a)
            if (n % space.N) >> 2 == goal:
                plan = []
                while n != sid:
                    n, a = parent[n]
                    plan.append(a)
                plan.reverse()
                return Solution("solved", len(plan), plan, len(parent), time.perf_counter() - t0)
            queue.append(n)
    return Solution("unsolvable", None, [], len(parent), time.perf_counter() - t0)


def optimal_actions(maze: Maze) -> Solution:
    return solve(maze)
