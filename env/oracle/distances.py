"""Distances to the goal: in actions, for every state the start reaches (``DistanceTable``, one
full sweep and one backward BFS over its edges), and in tiles (``tile_distance``)."""

from __future__ import annotations

from collections import deque
from functools import lru_cache

import numpy as np

from env import jit
from env.maze import DIR_VECTORS, Maze
from env.oracle import compiled
from env.oracle.bfs import search
from env.oracle.plans import solve
from env.oracle.solution import STATE_CAP
from env.oracle.space import Unencodable, state_space
from env.state import MazeState, fired_at, r1_landing, refused


class EdgeIndex:
    """Edges ``src -> dst`` grouped by source, for repeated BFS with some edges left out."""

    def __init__(self, n: int, src: np.ndarray, dst: np.ndarray):
        self.n = n
        if jit.enabled():
            self.order = np.empty(src.size, dtype=np.int64)
            self.indptr = np.empty(n + 1, dtype=np.int64)
            compiled.group_by_source(n, src, self.order, self.indptr)
        else:
            self.order = np.argsort(src, kind="stable")
            self.indptr = np.searchsorted(src[self.order], np.arange(n + 1))
        self.succ = dst[self.order]

    def hops(self, sources: np.ndarray, edge_ok: np.ndarray | None = None) -> np.ndarray:
        """Fewest edges from any of ``sources`` to each node (-1: unreachable).

        ``edge_ok`` (one flag per edge, in the order the edges were given) leaves edges out.
        """
        ok = None if edge_ok is None else edge_ok[self.order]
        dist = np.full(self.n, -1, dtype=np.int32)
        if jit.enabled():
            flags = np.zeros(0, dtype=np.bool_) if ok is None else ok
            compiled.hops(self.indptr, self.succ, flags, ok is not None, np.asarray(sources, dtype=np.int64), dist)
            return dist
        frontier = np.unique(np.asarray(sources, dtype=np.int64))
        dist[frontier] = 0
        level = 0
        while frontier.size:
            level += 1
            starts = self.indptr[frontier]
            lens = self.indptr[frontier + 1] - starts
            total = int(lens.sum())
            if not total:
                break
            offsets = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
            if ok is not None:
                offsets = offsets[ok[offsets]]
            nb = self.succ[offsets]
            nb = np.unique(nb[dist[nb] < 0])
            dist[nb] = level
            frontier = nb
        return dist


def hops(n: int, src: np.ndarray, dst: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Fewest edges from any of ``sources`` to each of ``n`` nodes along ``src -> dst`` (-1: none)."""
    if jit.enabled():
        dist = np.empty(n, dtype=np.int32)
        compiled.hops_along(n, src, dst, np.asarray(sources, dtype=np.int64), dist)
        return dist
    return EdgeIndex(n, src, dst).hops(sources)


class DistanceTable:
    """Action distance to the goal for every state reachable from the start, computed once.

    A forward sweep finds the reachable graph (goal states are terminal); a backward BFS from
    all goal states over its edges gives each state's distance. ``action_distance`` is then
    one dictionary and one array look-up.
    """

    def __init__(self, maze: Maze, cap: int = STATE_CAP, drop: bool = False):
        self.maze = maze
        self.drop = drop  # distances of a search with a DROP edge (the protocol offers DROP)
        self.space = space = state_space(maze, drop)
        sweep = search(space, [space.start_id()], cap + 1, stop_at_goal=False, edges=True)
        if sweep.status == "undecided":
            raise OverflowError(f"{maze.id}: more than {cap} reachable states")
        self.sweep = sweep
        self.edge_src, self.edge_dst, self.edge_act = sweep.edges()
        n = int(sweep.ids.size)
        # the goal's four facings under each configuration, looked up in the sweep's index: a few
        # look-ups where testing every state divides each id
        facings = 4 * space.goal_floor + np.arange(4, dtype=np.int64)
        at = sweep.seen.get((np.arange(len(space.configs), dtype=np.int64)[:, None] * space.N + facings).ravel())
        goals = np.sort(at[at >= 0])
        self.dist = hops(n, self.edge_dst, self.edge_src, goals)  # backwards from the goals
        self.states = n
        self._forward: EdgeIndex | None = None

    @property
    def forward_edges(self) -> EdgeIndex:
        """The sweep's edges grouped by source (built on first use; the checks reuse it)."""
        if self._forward is None:
            self._forward = EdgeIndex(self.states, self.edge_src, self.edge_dst)
        return self._forward

    def index_of(self, state: MazeState) -> int:
        """The state's position in the sweep, or -1 if the sweep never reached it."""
        try:
            sid = self.space.encode(state)
        except Unencodable:
            return -1
        rows = self.sweep.seen.rows
        if rows is not None:  # the common, dense case without building an array
            return int(rows[sid]) if sid < rows.size else -1
        return int(self.sweep.seen.get(np.array([sid], dtype=np.int64))[0])

    def action_distance(self, state: MazeState) -> int | None:
        """Actions still needed from ``state``; None when the goal can no longer be reached."""
        if state.pos == self.maze.goal:
            return 0
        i = self.index_of(state)
        if i < 0:
            # not reachable from the start: answer exactly, just not from the table
            return solve(self.maze, state, drop=self.drop).optimal_actions
        d = int(self.dist[i])
        return None if d < 0 else d


@lru_cache(maxsize=64)
def distance_table(maze: Maze, drop: bool = False) -> DistanceTable:
    return DistanceTable(maze, drop=drop)


def action_distance(maze: Maze, state: MazeState, drop: bool = False) -> int | None:
    return distance_table(maze, drop).action_distance(state)


@lru_cache(maxsize=256)
def _tile_field(maze: Maze) -> dict[tuple[int, int], int]:
    if maze.study_rules:
        return _tile_field_r1(maze)
    goal = maze.goal
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


def _tile_field_r1(maze: Maze) -> dict[tuple[int, int], int]:
    """Moves to the goal under the study's rulesets, with every door and gate open and turns
    ignored (a move from a cell may go any way: a tile that steers it turns through all four):
    the solid mechanics' cells are never entered, a mechanic that refuses a move one way is
    entered only the other ways, a move ends where a mechanic sends it (``lands``) or, where one
    takes the move over, where that leaves the agent (the start after a reset; nowhere once the
    episode is over: ``env.state.fired_at``). A move is then not reversible, so the search runs
    backwards over the moves out of each cell."""
    walls, solid = maze.walls, maze.solid_cells
    into: dict[tuple[int, int], list[tuple[int, int]]] = {}  # cell -> the cells one move leads here from
    for x in range(maze.width):
        for y in range(maze.height):
            if walls[x, y] or (x, y) in solid or fired_at(maze, (x, y)) != (x, y):
                continue
            for way, (dx, dy) in enumerate(DIR_VECTORS):
                n = (x + dx, y + dy)
                if walls[n] or n in solid or refused(maze, n, way):
                    continue
                land = fired_at(maze, r1_landing(maze, n))
                if land is not None:
                    into.setdefault(land, []).append((x, y))
    dist = {maze.goal: 0}
    q = deque([maze.goal])
    while q:
        c = q.popleft()
        for p in into.get(c, ()):
            if p not in dist:
                dist[p] = dist[c] + 1
                q.append(p)
    return dist


def tile_distance(maze: Maze, pos: tuple[int, int]) -> int | None:
    """Moves from ``pos`` to the goal over non-wall cells; doors, gates and keys count as open
    (under the study's rulesets the tiles' rules count too: ``_tile_field_r1``)."""
    return _tile_field(maze).get(pos)
