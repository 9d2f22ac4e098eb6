"""Exact BFS oracle over the full maze state (DESIGN section 4).

The state space is searched through a dense integer index instead of ``MazeState`` objects:

* a state's *navigation* part (floor cell, facing) is ``floor_index * 4 + dir``;
* its *mechanism* part (where each key is, door states, switch states) is interned to a small
  integer the first time it is seen. Keys can only ever lie on the cells that held keys at the
  start (pickup swaps the carried key into the cell the front key left, and there is no drop),
  so a key's place is one of ``K`` key cells or "carried": a handful of values per key.

A state is then ``mechanism * (4 * floors) + navigation``. Breadth-first search runs one layer
at a time over numpy arrays of such ids: turns and moves are table look-ups, and the few
transitions that change the mechanism state (pickup, toggle) are computed once per
(mechanism state, key cell / door / switch) pair and then looked up too.

``env.state.step`` stays the reference dynamics; the tests hold ``StateSpace.successor`` and
``reference_solve`` to it. The public names (``solve``, ``optimal_actions``,
``DistanceTable``, ``distance_table``, ``action_distance``, ``tile_distance``) are the contract
the rest of gridbench uses.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np

from env.maze import DIR_VECTORS, Maze
from env.state import (
    ACTIONS,
    DOOR_CLOSED,
    DOOR_LOCKED,
    DOOR_OPEN,
    FORWARD,
    LEFT,
    PICKUP,
    RIGHT,
    TOGGLE,
    MazeState,
    initial_state,
    step,
)

STATE_CAP = 500_000
_USEFUL = tuple(i for i, a in enumerate(ACTIONS) if a != "done")  # `done` never changes the state
_UNKNOWN = -2  # a lazily filled transition table entry not computed yet
_NOOP = -1


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


class Unencodable(ValueError):
    """A ``MazeState`` the dense index cannot express (a key off every key cell)."""


# A mechanism configuration: (place of each key, door states, switch states).
# A key's place is the index of the key cell it lies on, or K (= number of keys) when carried.
Config = tuple[tuple[int, ...], tuple[int, ...], tuple[bool, ...]]


class StateSpace:
    """The dense state index of one maze and its vectorised transition function."""

    def __init__(self, maze: Maze):
        self.maze = maze
        walls = maze.walls
        self.floors: list[tuple[int, int]] = [
            (x, y) for y in range(maze.height) for x in range(maze.width) if not walls[x, y]
        ]
        F = len(self.floors)
        self.F = F
        self.N = 4 * F  # navigation states per mechanism configuration
        self.floor_of: dict[tuple[int, int], int] = {c: i for i, c in enumerate(self.floors)}

        nav = np.arange(self.N, dtype=np.int64)
        self.turn_left = (nav & ~3) | ((nav - 1) & 3)
        self.turn_right = (nav & ~3) | ((nav + 1) & 3)
        # Per-floor tables have one extra trailing entry -1, so indexing them with a front
        # floor of -1 (a wall) reads "nothing there" without a mask.
        front = np.full(self.N, -1, dtype=np.int64)
        for f, (x, y) in enumerate(self.floors):
            for d, (dx, dy) in enumerate(DIR_VECTORS):
                front[4 * f + d] = self.floor_of.get((x + dx, y + dy), -1)
        self.front = front
        self.goal_floor = self.floor_of[tuple(maze.goal)]

        def per_floor(objs) -> np.ndarray:
            a = np.full(F + 1, -1, dtype=np.int64)
            for i, o in enumerate(objs):
                a[self.floor_of[tuple(o.pos)]] = i
            return a

        self.K = len(maze.keys)
        self.key_cells: list[tuple[int, int]] = [tuple(k.pos) for k in maze.keys]
        self.key_cell_of = per_floor(maze.keys)  # initial key i lies on key cell i
        self.door_of = per_floor(maze.doors)
        self.switch_of = per_floor(maze.switches)
        self.gate_of = per_floor(maze.gates)
        self.door_floor = [self.floor_of[tuple(d.pos)] for d in maze.doors]
        self.gate_floor = [self.floor_of[tuple(g.pos)] for g in maze.gates]
        self.key_floor = [self.floor_of[c] for c in self.key_cells]
        self.unlocks = [[k.color == d.color for d in maze.doors] for k in maze.keys]

        self.configs: list[Config] = []
        self.config_index: dict[Config, int] = {}
        self._cap = 0
        self.passable = np.zeros((0, F), dtype=bool)
        self.pickup_to = np.zeros((0, max(self.K, 1)), dtype=np.int64)
        self.switch_to = np.zeros((0, max(len(maze.switches), 1)), dtype=np.int64)
        self.door_to = np.zeros((0, max(len(maze.doors), 1)), dtype=np.int64)
        self._grow(16)
        self.start_config = self.intern(self._config_of(initial_state(maze)))

    # ---- mechanism configurations ---------------------------------------------------------
    def _grow(self, cap: int) -> None:
        def extend(a: np.ndarray, fill) -> np.ndarray:
            out = np.full((cap, a.shape[1]), fill, dtype=a.dtype)
            out[: a.shape[0]] = a
            return out

        self.passable = extend(self.passable, False)
        self.pickup_to = extend(self.pickup_to, _UNKNOWN)
        self.switch_to = extend(self.switch_to, _UNKNOWN)
        self.door_to = extend(self.door_to, _UNKNOWN)
        self._cap = cap

    def intern(self, cfg: Config) -> int:
        """The index of a mechanism configuration, registering it on first sight."""
        m = self.config_index.get(cfg)
        if m is not None:
            return m
        m = len(self.configs)
        if m == self._cap:
            self._grow(2 * self._cap)
        self.configs.append(cfg)
        self.config_index[cfg] = m
        row = np.ones(self.F, dtype=bool)
        places, doors, switches = cfg
        for p in places:
            if p < self.K:
                row[self.key_floor[p]] = False
        for i, st in enumerate(doors):
            if st != DOOR_OPEN:
                row[self.door_floor[i]] = False
        for i, is_open in enumerate(self.maze.gates_open(switches)):
            if not is_open:
                row[self.gate_floor[i]] = False
        self.passable[m] = row
        return m

    def _pickup_result(self, m: int, cell: int) -> int:
        places, doors, switches = self.configs[m]
        if cell not in places:
            return _NOOP
        new = list(places)
        for k, p in enumerate(places):
            if p == self.K:
                new[k] = cell  # swap: the carried key goes where the front key was
        new[places.index(cell)] = self.K
        return self.intern((tuple(new), doors, switches))

    def _switch_result(self, m: int, s: int) -> int:
        places, doors, switches = self.configs[m]
        flipped = list(switches)
        flipped[s] = not flipped[s]
        return self.intern((places, doors, tuple(flipped)))

    def _door_result(self, m: int, d: int) -> int:
        places, doors, switches = self.configs[m]
        st = doors[d]
        if st == DOOR_LOCKED:
            carried = places.index(self.K) if self.K in places else -1
            if carried < 0 or not self.unlocks[carried][d]:
                return _NOOP
            st = DOOR_OPEN
        else:
            st = DOOR_CLOSED if st == DOOR_OPEN else DOOR_OPEN
        new = list(doors)
        new[d] = st
        return self.intern((places, tuple(new), switches))

    def _lookup(self, table_name: str, compute, m: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Gather ``table[m, j]``, computing the entries not seen before."""
        table = getattr(self, table_name)
        out = table[m, j]
        missing = out == _UNKNOWN
        if missing.any():
            width = table.shape[1]
            for code in np.unique(m[missing] * width + j[missing]).tolist():
                mi, ji = divmod(code, width)
                result = compute(mi, ji)
                getattr(self, table_name)[mi, ji] = result  # the table may have grown meanwhile
            out = getattr(self, table_name)[m, j]
        return out

    # ---- encode / decode -------------------------------------------------------------------
    def _config_of(self, s: MazeState) -> Config:
        places = []
        for p in s.keys:
            if p is None:
                places.append(self.K)
            else:
                f = self.floor_of.get(tuple(p), -1)
                cell = int(self.key_cell_of[f]) if f >= 0 else -1
                if cell < 0:
                    raise Unencodable(f"a key lies on {p}, which held no key at the start")
                places.append(cell)
        return (tuple(places), tuple(s.doors), tuple(bool(x) for x in s.switches))

    def encode(self, s: MazeState) -> int:
        f = self.floor_of.get(tuple(s.pos), -1)
        if f < 0:
            raise Unencodable(f"{s.pos} is not a floor cell")
        return self.intern(self._config_of(s)) * self.N + 4 * f + s.dir

    def decode(self, sid: int) -> MazeState:
        m, nav = divmod(int(sid), self.N)
        places, doors, switches = self.configs[m]
        return MazeState(
            pos=self.floors[nav >> 2],
            dir=nav & 3,
            carrying=places.index(self.K) if self.K in places else -1,
            keys=tuple(None if p == self.K else self.key_cells[p] for p in places),
            doors=doors,
            switches=switches,
        )

    # ---- transitions -----------------------------------------------------------------------
    def successors(self, ids: np.ndarray, action: int) -> np.ndarray:
        """Successor ids of ``ids`` under ``action``; -1 where the state does not change."""
        m, nav = np.divmod(ids, self.N)
        out = np.full(ids.shape, -1, dtype=np.int64)
        if action == LEFT:
            return m * self.N + self.turn_left[nav]
        if action == RIGHT:
            return m * self.N + self.turn_right[nav]
        front = self.front[nav]
        if action == FORWARD:
            ok = front >= 0
            ok[ok] = self.passable[m[ok], front[ok]]
            out[ok] = m[ok] * self.N + 4 * front[ok] + (nav[ok] & 3)
            return out
        if action == PICKUP:
            self._mechanism_moves(out, m, nav, self.key_cell_of[front], "pickup_to", self._pickup_result)
            return out
        if action == TOGGLE:
            sw = self.switch_of[nav >> 2]
            self._mechanism_moves(out, m, nav, sw, "switch_to", self._switch_result)
            door = self.door_of[front]
            door[sw >= 0] = -1  # standing on a switch, toggle flips it and nothing else
            self._mechanism_moves(out, m, nav, door, "door_to", self._door_result)
            return out
        return out  # done

    def _mechanism_moves(self, out, m, nav, target, table_name, compute) -> None:
        """Fill ``out`` where ``target >= 0`` (a key cell, switch or door acted on)."""
        sel = np.flatnonzero(target >= 0)
        if sel.size:
            to = self._lookup(table_name, compute, m[sel], target[sel])
            hit = to >= 0
            out[sel[hit]] = to[hit] * self.N + nav[sel[hit]]

    def successor(self, s: MazeState, action: int) -> MazeState:
        """One step through the dense tables (the tests hold this to ``env.state.step``)."""
        sid = self.encode(s)
        n = int(self.successors(np.array([sid], dtype=np.int64), action)[0])
        return s if n < 0 else self.decode(n)

    def start_id(self) -> int:
        return self.start_config * self.N + 4 * self.floor_of[tuple(self.maze.start.pos)] + self.maze.start_dir

    def is_goal(self, ids: np.ndarray) -> np.ndarray:
        return ((ids % self.N) >> 2) == self.goal_floor

    # ---- search ----------------------------------------------------------------------------
    def search(self, starts: list[int], cap: int, stop_at_goal: bool, edges: bool) -> Search:
        """Layered BFS from ``starts`` over ids. Goal states are found but not expanded."""
        seen = _SeenIndex()
        start_ids = np.unique(np.array(starts, dtype=np.int64))
        seen.add(start_ids, 0)
        ids = [start_ids]
        parents = [np.full(start_ids.size, -1, dtype=np.int64)]
        acts = [np.full(start_ids.size, -1, dtype=np.int8)]
        depth = [np.zeros(start_ids.size, dtype=np.int32)]
        edge_src: list[np.ndarray] = []
        edge_dst: list[np.ndarray] = []
        edge_act: list[np.ndarray] = []
        count = start_ids.size
        goal_mask = self.is_goal(start_ids)
        result = Search(self, status="unsolvable")
        if goal_mask.any():
            result.goal_index = int(np.flatnonzero(goal_mask)[0])
            if stop_at_goal:
                result.status = "solved"
        frontier_ids = start_ids[~goal_mask]
        frontier_idx = np.flatnonzero(~goal_mask).astype(np.int64)
        level = 0
        while frontier_ids.size and not (stop_at_goal and result.status == "solved"):
            level += 1
            dst_parts, src_parts, act_parts = [], [], []
            for a in _USEFUL:
                dst = self.successors(frontier_ids, a)
                keep = dst >= 0
                dst_parts.append(dst[keep])
                src_parts.append(frontier_idx[keep])
                act_parts.append(np.full(int(keep.sum()), a, dtype=np.int8))
            dst = np.concatenate(dst_parts)
            src = np.concatenate(src_parts)
            act = np.concatenate(act_parts)
            dst_index = seen.get(dst)
            fresh = dst_index < 0
            new_ids, first = np.unique(dst[fresh], return_index=True)
            new_idx = np.arange(count, count + new_ids.size, dtype=np.int64)
            seen.add(new_ids, count)
            count += new_ids.size
            ids.append(new_ids)
            parents.append(src[fresh][first])
            acts.append(act[fresh][first])
            depth.append(np.full(new_ids.size, level, dtype=np.int32))
            if edges:
                dst_index[fresh] = seen.get(dst[fresh])
                edge_src.append(src)
                edge_dst.append(dst_index)
                edge_act.append(act)
            goal_mask = self.is_goal(new_ids)
            if goal_mask.any() and result.goal_index < 0:
                result.goal_index = int(new_idx[np.flatnonzero(goal_mask)[0]])
                if stop_at_goal:
                    result.status = "solved"
            if count >= cap and not (stop_at_goal and result.status == "solved"):
                result.status = "undecided"
                break
            frontier_ids = new_ids[~goal_mask]
            frontier_idx = new_idx[~goal_mask]
        if result.status != "undecided" and result.goal_index >= 0:
            result.status = "solved"
        result.ids = np.concatenate(ids)
        result.parent = np.concatenate(parents)
        result.action = np.concatenate(acts)
        result.depth = np.concatenate(depth)
        result.seen = seen
        if edges:
            result.edge_src = np.concatenate(edge_src) if edge_src else np.zeros(0, np.int64)
            result.edge_dst = np.concatenate(edge_dst) if edge_dst else np.zeros(0, np.int64)
            result.edge_act = np.concatenate(edge_act) if edge_act else np.zeros(0, np.int8)
        return result


class _SeenIndex:
    """id -> discovery index for the states found so far.

    Ids are ``mechanism * N + navigation``; the index keeps one dense int32 row of ``N`` per
    mechanism configuration, so membership is a single array gather. A maze with very many
    mechanism configurations each met at few places would make that table huge; past
    ``DENSE_LIMIT`` entries it switches to a sorted array (binary search) instead.
    """

    DENSE_LIMIT = 1 << 26

    def __init__(self) -> None:
        self.rows: np.ndarray | None = np.zeros(0, dtype=np.int32)
        self.keys = np.zeros(0, dtype=np.int64)  # sparse mode: sorted ids
        self.vals = np.zeros(0, dtype=np.int64)

    def _to_sparse(self) -> None:
        assert self.rows is not None
        self.keys = np.flatnonzero(self.rows >= 0).astype(np.int64)
        self.vals = self.rows[self.keys].astype(np.int64)
        self.rows = None

    def get(self, ids: np.ndarray) -> np.ndarray:
        out = np.full(ids.shape, -1, dtype=np.int64)
        if self.rows is not None:
            inside = ids < self.rows.size
            out[inside] = self.rows[ids[inside]]
            return out
        if self.keys.size:
            pos = np.minimum(np.searchsorted(self.keys, ids), self.keys.size - 1)
            hit = self.keys[pos] == ids
            out[hit] = self.vals[pos[hit]]
        return out

    def add(self, ids: np.ndarray, first: int) -> None:
        if not ids.size:
            return
        top = int(ids.max())
        if self.rows is not None and top >= self.rows.size:
            if top >= self.DENSE_LIMIT:
                self._to_sparse()
            else:
                grown = np.full(max(top + 1, 2 * self.rows.size, 1024), -1, dtype=np.int32)
                grown[: self.rows.size] = self.rows
                self.rows = grown
        idx = np.arange(first, first + ids.size, dtype=np.int64)
        if self.rows is not None:
            self.rows[ids] = idx
            return
        keys = np.concatenate([self.keys, ids])
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.vals = np.concatenate([self.vals, idx])[order]


@dataclass
class Search:
    """What one BFS found: states in discovery order with parent links (and edges if asked)."""

    space: StateSpace
    status: str
    goal_index: int = -1
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    parent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    action: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    depth: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    seen: _SeenIndex | None = None
    edge_src: np.ndarray | None = None
    edge_dst: np.ndarray | None = None
    edge_act: np.ndarray | None = None

    def plan_to(self, index: int) -> list[int]:
        plan = []
        while self.parent[index] >= 0:
            plan.append(int(self.action[index]))
            index = int(self.parent[index])
        plan.reverse()
        return plan


@lru_cache(maxsize=64)
def state_space(maze: Maze) -> StateSpace:
    return StateSpace(maze)


def solve(maze: Maze, start: MazeState | None = None, cap: int = STATE_CAP) -> Solution:
    """Shortest action sequence from ``start`` (default: the maze's start) into the goal."""
    t0 = time.perf_counter()
    space = state_space(maze)
    try:
        sid = space.encode(start) if start is not None else space.start_id()
    except Unencodable:
        return reference_solve(maze, start, cap)
    found = space.search([sid], cap, stop_at_goal=True, edges=False)
    explored = int(found.ids.size)
    if found.status == "solved":
        plan = found.plan_to(found.goal_index)
        return Solution("solved", len(plan), plan, explored, time.perf_counter() - t0)
    return Solution(found.status, None, [], explored, time.perf_counter() - t0)


def reference_solve(maze: Maze, start: MazeState | None = None, cap: int = STATE_CAP) -> Solution:
    """The plain BFS over ``MazeState`` and ``env.state.step``: slow, obviously right."""
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


def hops(n: int, src: np.ndarray, dst: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Fewest edges from any of ``sources`` to each of ``n`` nodes along ``src -> dst`` (-1: none)."""
    order = np.argsort(src, kind="stable")
    succ = dst[order]
    indptr = np.searchsorted(src[order], np.arange(n + 1))
    dist = np.full(n, -1, dtype=np.int32)
    dist[sources] = 0
    frontier = np.unique(sources)
    level = 0
    while frontier.size:
        level += 1
        starts = indptr[frontier]
        lens = indptr[frontier + 1] - starts
        total = int(lens.sum())
        if not total:
            break
        offsets = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
        nb = succ[offsets]
        nb = np.unique(nb[dist[nb] < 0])
        dist[nb] = level
        frontier = nb
    return dist


class DistanceTable:
    """Action distance to the goal for every state reachable from the start, computed once.

    A forward sweep finds the reachable graph (goal states are terminal); a backward BFS from
    all goal states over its edges gives each state's distance. ``action_distance`` is then
    one dictionary and one array look-up.
    """

    def __init__(self, maze: Maze, cap: int = STATE_CAP):
        self.maze = maze
        self.space = space = state_space(maze)
        sweep = space.search([space.start_id()], cap + 1, stop_at_goal=False, edges=True)
        if sweep.status == "undecided":
            raise OverflowError(f"{maze.id}: more than {cap} reachable states")
        self.sweep = sweep
        n = int(sweep.ids.size)
        goals = np.flatnonzero(space.is_goal(sweep.ids))
        self.dist = hops(n, sweep.edge_dst, sweep.edge_src, goals)  # backwards from the goals
        self.states = n

    @property
    def from_start(self) -> np.ndarray:
        """BFS depth of every swept state from the start (same order as ``dist``)."""
        return self.sweep.depth

    def index_of(self, state: MazeState) -> int:
        """The state's position in the sweep, or -1 if the sweep never reached it."""
        try:
            sid = self.space.encode(state)
        except Unencodable:
            return -1
        return int(self.sweep.seen.get(np.array([sid], dtype=np.int64))[0])

    def action_distance(self, state: MazeState) -> int | None:
        """Actions still needed from ``state``; None when the goal can no longer be reached."""
        if tuple(state.pos) == tuple(self.maze.goal):
            return 0
        i = self.index_of(state)
        if i < 0:
            # not reachable from the start: answer exactly, just not from the table
            return solve(self.maze, state).optimal_actions
        d = int(self.dist[i])
        return None if d < 0 else d


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
