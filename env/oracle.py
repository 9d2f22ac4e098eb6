"""Exact BFS oracle over the full maze state (docs/design.md §4), under either ruleset.

The state space is searched through a dense integer index instead of ``MazeState`` objects:

* a state's *navigation* part (floor cell, facing) is ``floor_index * 4 + dir``;
* its *mechanism* part (where each key is, door states, switch states, and under multinet-r1 the
  freeze countdown) is interned to a small integer the first time it is seen. Keys can only ever
  lie on the cells that held keys at the start (pickup swaps the carried key into the cell the
  front key left, and there is no drop), so a key's place is one of ``K`` key cells, "carried"
  or (multinet-r1) "used up": a handful of values per key.

A state is then ``mechanism * (4 * floors) + navigation``. Breadth-first search runs one layer
at a time over numpy arrays of such ids: turns and moves are table look-ups, and the few
transitions that change the mechanism state (pickup, toggle) are computed once per
(mechanism state, key cell / door / switch) pair and then looked up too.

Under multinet-r1 keys are walkable and picked up from underfoot, a door opens for good, and a
move may land on a teleporter's other end: all still table look-ups. Hold switches (changed by
moving), kill cells (a move that resets everything) and frozen tiles (a countdown) are not: a maze
with any of them is searched state by state through ``env.state.step`` (``explicit``), over the
same dense ids. ``solve`` on a multinet-r1 maze runs the study's own search: a plain BFS in its
successor order (left, right, pickup, toggle, forward) that stops when the goal is first
generated, so ``states_explored`` is the study's count (docs/oracle.md).

``env.state.step`` stays the reference dynamics; the tests hold ``StateSpace.successor`` and
``reference_solve`` to it. The public names (``solve``, ``optimal_actions``,
``DistanceTable``, ``distance_table``, ``action_distance``, ``tile_distance``) are the contract
the rest of gridbench uses.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np

from env.maze import DIR_VECTORS, MULTINET_PR57, Maze
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
    no_change,
    r1_landing,
    step,
)

STATE_CAP = 500_000
_USEFUL = tuple(i for i, a in enumerate(ACTIONS) if a != "done")  # `done` never changes the state
# the study's successor order (RULES: turn left, turn right, pickup, toggle, forward): it decides
# which states its BFS has generated when it first meets the goal
R1_ORDER = (LEFT, RIGHT, PICKUP, TOGGLE, FORWARD)
_SCALAR_LAYER = 400  # frontiers up to this size are expanded state by state
_UNKNOWN = -2  # a lazily filled transition table entry not computed yet
_NOOP = -1


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


class Unencodable(ValueError):
    """A ``MazeState`` the dense index cannot express (a key off every key cell)."""


# A mechanism configuration: (place of each key, door states, switch states, freeze countdown,
# turntable phase, portal latch). A key's place is the index of the key cell it lies on, K (= number
# of keys) when carried, K + 1 when used up (the study's rulesets); the last two are multinet-pr57's.
Config = tuple[tuple[int, ...], tuple[int, ...], tuple[bool, ...], int, int, bool]


class StateSpace:
    """The dense state index of one maze and its vectorised transition function."""

    def __init__(self, maze: Maze):
        self.maze = maze
        self.r1 = maze.study_rules
        # moves that change the mechanism state (hold switches, kill cells, frozen tiles; under
        # multinet-pr57 every step, which turns the arrows): no table
        self.explicit = self.r1 and (any(sw.switch_type == "hold" for sw in maze.switches)
                                     or bool(maze.cells_of("kill") or maze.cells_of("frozen"))
                                     or maze.ruleset == MULTINET_PR57)
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
        floor_at = np.full((maze.width, maze.height), -1, dtype=np.int64)
        xy = np.array(self.floors, dtype=np.int64).reshape(-1, 2)
        floor_at[xy[:, 0], xy[:, 1]] = np.arange(F)
        # the outer ring is wall, so a floor cell's neighbours are always inside the grid
        self.front = np.stack([floor_at[xy[:, 0] + dx, xy[:, 1] + dy] for dx, dy in DIR_VECTORS], axis=1).reshape(-1)
        # where a forward move into the cell in front ends: the other end of a teleporter, or there
        self.land = self.front
        if maze.teleporters:
            lands = [self.floor_of[r1_landing(maze, c)] for c in self.floors]
            self.land = np.where(self.front >= 0, np.array([*lands, -1], dtype=np.int64)[self.front], -1)
        self.goal_floor = self.floor_of[maze.goal]
        # floor cells nothing ever enters (multinet-r1 hazards and blocks)
        self.solid = np.zeros(F, dtype=bool)
        for c in maze.cells_of("hazard") | maze.cells_of("block"):
            self.solid[self.floor_of[c]] = True

        def per_floor(objs) -> np.ndarray:
            a = np.full(F + 1, -1, dtype=np.int64)
            for i, o in enumerate(objs):
                a[self.floor_of[o.pos]] = i
            return a

        self.K = len(maze.keys)
        self.key_cells: list[tuple[int, int]] = [k.pos for k in maze.keys]
        self.key_cell_of = per_floor(maze.keys)  # initial key i lies on key cell i
        self.door_of = per_floor(maze.doors)
        self.switch_of = per_floor(maze.switches)
        self.door_floor = [self.floor_of[d.pos] for d in maze.doors]
        self.gate_floor = [self.floor_of[g.pos] for g in maze.gates]
        self.key_floor = [self.floor_of[c] for c in self.key_cells]
        self.unlocks = [[k.color == d.color for d in maze.doors] for k in maze.keys]
        self.consumes = self.r1 and maze.rulebook.key_consumption

        self.configs: list[Config] = []
        self.config_index: dict[Config, int] = {}
        self._cap = 0
        self.passable = np.zeros((0, F), dtype=bool)
        self.pickup_to = np.zeros((0, max(self.K, 1)), dtype=np.int64)
        self.switch_to = np.zeros((0, max(len(maze.switches), 1)), dtype=np.int64)
        self.door_to = np.zeros((0, max(len(maze.doors), 1)), dtype=np.int64)
        # plain-list copies for the state-by-state path (list indexing beats numpy scalars)
        self._py_left = self.turn_left.tolist()
        self._py_right = self.turn_right.tolist()
        self._py_front = self.front.tolist()
        self._py_door = self.door_of.tolist()
        self._py_switch = self.switch_of.tolist()
        self._py_forward: list[array] = []  # per configuration, see _forward_row
        # the key cell pickup acts on, per navigation state: in front (minigrid), underfoot (multinet-r1)
        self.pickup_cell = self.key_cell_of[nav >> 2] if self.r1 else self.key_cell_of[self.front]
        self._py_pickup = self.pickup_cell.tolist()
        # per navigation state: can pickup or toggle act here (a key cell to pick from, a door in
        # front, a switch underfoot)? Everywhere else only turns and forward need looking at.
        on_switch = self.switch_of[nav >> 2] >= 0
        self._py_mech = (on_switch | (self.pickup_cell >= 0) | (self.door_of[self.front] >= 0)).tolist()
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
        row = ~self.solid
        places, doors, switches = cfg[:3]
        if not self.r1:  # keys block movement under minigrid only
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
        places, doors, switches, *rest = self.configs[m]
        if cell not in places or (self.r1 and self.K in places):  # multinet-r1: no swap
            return _NOOP
        new = list(places)
        for k, p in enumerate(places):
            if p == self.K:
                new[k] = cell  # swap: the carried key goes where the front key was
        new[places.index(cell)] = self.K
        return self.intern((tuple(new), doors, switches, *rest))  # type: ignore[arg-type]

    def _switch_result(self, m: int, s: int) -> int:
        places, doors, switches, *rest = self.configs[m]
        kind = self.maze.switches[s].switch_type
        if kind == "hold" or (kind == "one_shot" and switches[s]):
            return _NOOP
        flipped = list(switches)
        flipped[s] = not flipped[s]
        return self.intern((places, doors, tuple(flipped), *rest))  # type: ignore[arg-type]

    def _door_result(self, m: int, d: int) -> int:
        places, doors, switches, *rest = self.configs[m]
        st = doors[d]
        if st == DOOR_LOCKED or (self.r1 and st != DOOR_OPEN):
            carried = places.index(self.K) if self.K in places else -1
            if carried < 0 or not self.unlocks[carried][d]:
                return _NOOP
            st = DOOR_OPEN
            if self.consumes:
                places = tuple(self.K + 1 if p == self.K else p for p in places)
        elif self.r1:
            return _NOOP  # multinet-r1: an open door stays open
        else:
            st = DOOR_CLOSED if st == DOOR_OPEN else DOOR_OPEN
        new = list(doors)
        new[d] = st
        return self.intern((places, tuple(new), switches, *rest))  # type: ignore[arg-type]

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
        for i, p in enumerate(s.keys):
            if p is None:
                places.append(self.K if s.carrying == i else self.K + 1)
            else:
                f = self.floor_of.get(p, -1)
                cell = int(self.key_cell_of[f]) if f >= 0 else -1
                if cell < 0:
                    raise Unencodable(f"a key lies on {p}, which held no key at the start")
                places.append(cell)
        return (tuple(places), tuple(s.doors), tuple(bool(x) for x in s.switches), s.frozen, s.phase, s.latched)

    def encode(self, s: MazeState) -> int:
        f = self.floor_of.get(s.pos, -1)
        if f < 0:
            raise Unencodable(f"{s.pos} is not a floor cell")
        return self.intern(self._config_of(s)) * self.N + 4 * f + s.dir

    def decode(self, sid: int) -> MazeState:
        m, nav = divmod(int(sid), self.N)
        places, doors, switches, frozen, phase, latched = self.configs[m]
        return MazeState(
            pos=self.floors[nav >> 2],
            dir=nav & 3,
            carrying=places.index(self.K) if self.K in places else -1,
            keys=tuple(None if p >= self.K else self.key_cells[p] for p in places),
            doors=doors,
            switches=switches,
            frozen=frozen,
            phase=phase,
            latched=latched,
        )

    # ---- transitions -----------------------------------------------------------------------
    def successors(self, ids: np.ndarray, action: int) -> np.ndarray:
        """Successor ids of ``ids`` under ``action``; -1 where the state does not change."""
        if self.explicit:
            return np.array([self._explicit_step(int(i), action) for i in ids], dtype=np.int64)
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
            out[ok] = m[ok] * self.N + 4 * self.land[nav[ok]] + (nav[ok] & 3)
            return out
        if action == PICKUP:
            self._mechanism_moves(out, m, nav, self.pickup_cell[nav], "pickup_to", self._pickup_result)
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

    def _explicit_step(self, sid: int, action: int) -> int:
        """The successor id through ``env.state.step`` (-1: nothing changed but the arrows, never
        a move of a plan: ``env.state.no_change``), for explicit mazes."""
        s = self.decode(sid)
        n, _ = step(self.maze, s, action)
        return -1 if no_change(s, n) else self.encode(n)

    def moves(self, sid: int, order: Sequence[int] = R1_ORDER) -> list[tuple[int, int]]:
        """(successor id, action) of every action that changes state ``sid``, in ``order``."""
        if self.explicit:
            out = [(self._explicit_step(sid, a), a) for a in order]
            return [(n, a) for n, a in out if n >= 0]
        m, nav = divmod(sid, self.N)
        base = m * self.N
        mech = dict((a, t) for t, a in self._mechanism_moves_scalar(m, nav)) if self._py_mech[nav] else {}
        fn = self._forward_row(m)[nav]
        out = []
        for a in order:
            if a == LEFT:
                out.append((base + self._py_left[nav], LEFT))
            elif a == RIGHT:
                out.append((base + self._py_right[nav], RIGHT))
            elif a == FORWARD:
                if fn >= 0:
                    out.append((base + fn, FORWARD))
            elif a in mech:
                out.append((mech[a], a))
        return out

    def successor(self, s: MazeState, action: int) -> MazeState:
        """One step through the dense tables (the tests hold this to ``env.state.step``)."""
        sid = self.encode(s)
        n = int(self.successors(np.array([sid], dtype=np.int64), action)[0])
        return s if n < 0 else self.decode(n)

    def start_id(self) -> int:
        return self.start_config * self.N + 4 * self.floor_of[self.maze.start.pos] + self.maze.start_dir

    def is_goal(self, ids: np.ndarray) -> np.ndarray:
        return ((ids % self.N) >> 2) == self.goal_floor

    # ---- search ----------------------------------------------------------------------------
    def _mechanism_scalar(self, table_name: str, compute, m: int, j: int) -> int:
        table = getattr(self, table_name)
        v = int(table[m, j])
        if v == _UNKNOWN:
            v = compute(m, j)
            getattr(self, table_name)[m, j] = v
        return v

    def _forward_row(self, m: int) -> array:
        """Per navigation state of configuration ``m``: the navigation state ``forward`` leads
        to, or -1 when blocked. Built on first use; 4 bytes per entry."""
        while len(self._py_forward) <= m:
            k = len(self._py_forward)
            nav = np.arange(self.N, dtype=np.int64)
            front = self.front
            ok = (front >= 0) & self.passable[k][front]
            row = np.where(ok, 4 * self.land + (nav & 3), -1).astype(np.int32)
            self._py_forward.append(array("i", row.tobytes()))
        return self._py_forward[m]

    def _mechanism_moves_scalar(self, m: int, nav: int) -> list[tuple[int, int]]:
        """(successor id, action) of pickup and toggle where they change something."""
        out = []
        f = self._py_front[nav]
        k = self._py_pickup[nav]
        if k >= 0:
            t = self._mechanism_scalar("pickup_to", self._pickup_result, m, k)
            if t >= 0:
                out.append((t * self.N + nav, PICKUP))
        s = self._py_switch[nav >> 2]
        if s >= 0:
            t = self._mechanism_scalar("switch_to", self._switch_result, m, s)
            if t >= 0:
                out.append((t * self.N + nav, TOGGLE))
        elif f >= 0 and self._py_door[f] >= 0:
            t = self._mechanism_scalar("door_to", self._door_result, m, self._py_door[f])
            if t >= 0:
                out.append((t * self.N + nav, TOGGLE))
        return out

    def _expand_scalar(self, f_ids: list[int], f_idx, seen: _SeenIndex, count: int,
                       out: _Found, edges: bool, parents: bool) -> tuple[list[int], range, int]:
        """One BFS layer state by state: for thin frontiers, where numpy's per-call cost dominates,
        and every layer of an explicit maze (its moves come from ``moves``, no table).

        Appends what it finds to ``out`` and returns the next frontier (ids, indices) and count.
        The next frontier is every state found here, goal states included: they are skipped
        when their turn to be expanded comes.
        """
        N, goal = self.N, self.goal_floor
        tl, tr, mech, fwd = self._py_left, self._py_right, self._py_mech, self._py_forward
        ids_out, par_out, act_out = out.ids, out.parent, out.action
        es, ed, ea = out.edge_src, out.edge_dst, out.edge_act
        first_new, first_count = len(ids_out), count
        seen.ensure((len(self.configs) + 1) * N)
        if not self.explicit:
            self._forward_row(len(self.configs) - 1)
        rows = seen.view()
        for sid, si in zip(f_ids, f_idx, strict=True):
            m, nav = divmod(sid, N)
            if nav >> 2 == goal:
                continue
            if self.explicit:
                moves = self.moves(sid, _USEFUL)
                seen.ensure((len(self.configs) + 1) * N)
                rows = seen.view()
            else:
                base = m * N
                fn = fwd[m][nav]
                moves = [(base + tl[nav], LEFT), (base + tr[nav], RIGHT)]
                if fn >= 0:
                    moves.append((base + fn, FORWARD))
                if mech[nav]:
                    moves += self._mechanism_moves_scalar(m, nav)
                    if len(fwd) < len(self.configs):  # the move met new configurations
                        seen.ensure((len(self.configs) + 1) * N)
                        self._forward_row(len(self.configs) - 1)
                        rows = seen.view()
            for n, a in moves:
                i = rows[n]
                if i < 0:
                    i = rows[n] = count
                    count += 1
                    ids_out.append(n)
                    if parents:
                        par_out.append(si)
                        act_out.append(a)
                    if a == FORWARD and (n % N) >> 2 == goal and out.goal_index < 0:
                        out.goal_index = i
                if edges:
                    es.append(si)
                    ed.append(i)
                    ea.append(a)
        return ids_out[first_new:], range(first_count, count), count

    def _expand_numpy(self, f_ids: np.ndarray, f_idx: np.ndarray, seen: _SeenIndex, count: int,
                      out: _Found, edges: bool, parents: bool) -> tuple[np.ndarray, np.ndarray, int]:
        """One BFS layer over arrays: for wide frontiers."""
        dst_parts, src_parts, act_parts = [], [], []
        for a in _USEFUL:
            dst = self.successors(f_ids, a)
            keep = dst >= 0
            dst_parts.append(dst[keep])
            src_parts.append(f_idx[keep])
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
        out.add_array("ids", new_ids)
        if parents:
            out.add_array("parent", src[fresh][first])
            out.add_array("action", act[fresh][first])
        if edges:
            dst_index[fresh] = seen.get(dst[fresh])
            out.add_array("edge_src", src)
            out.add_array("edge_dst", dst_index)
            out.add_array("edge_act", act)
        goal_mask = self.is_goal(new_ids)
        if goal_mask.any() and out.goal_index < 0:
            out.goal_index = int(new_idx[np.flatnonzero(goal_mask)[0]])
        return new_ids[~goal_mask], new_idx[~goal_mask], count

    def search(self, starts: list[int], cap: int, stop_at_goal: bool, edges: bool) -> Search:
        """Layered BFS from ``starts`` over ids. Goal states are found but not expanded.

        Thin layers go state by state into plain lists, wide ones through numpy; ``_Found``
        keeps both kinds of chunk in discovery order. Parent links (for the plan) are kept only
        when searching for the goal; edges only when ``edges`` is asked for (the full sweep).
        """
        seen = _SeenIndex()
        start_ids = np.unique(np.array(starts, dtype=np.int64))
        seen.add(start_ids, 0)
        found = _Found()
        found.add_array("ids", start_ids)
        found.add_array("parent", np.full(start_ids.size, -1, dtype=np.int64))
        found.add_array("action", np.full(start_ids.size, -1, dtype=np.int8))
        count = int(start_ids.size)
        goal_mask = self.is_goal(start_ids)
        if goal_mask.any():
            found.goal_index = int(np.flatnonzero(goal_mask)[0])
        f_ids: list[int] | np.ndarray = start_ids[~goal_mask]
        f_idx: Sequence[int] | np.ndarray = np.flatnonzero(~goal_mask).astype(np.int64)
        status: Status = "unsolvable"
        while len(f_ids) and not (stop_at_goal and found.goal_index >= 0):
            size = len(f_ids)
            if self.explicit and not seen.dense_room((len(self.configs) + 1) * self.N):
                status = "undecided"  # the explicit search keeps its index dense (docs/oracle.md)
                break
            if self.explicit or (size <= _SCALAR_LAYER
                                 and seen.dense_room((len(self.configs) + 3 * size + 1) * self.N)):
                ids: list[int] = f_ids.tolist() if isinstance(f_ids, np.ndarray) else f_ids
                idx = f_idx.tolist() if isinstance(f_idx, np.ndarray) else f_idx
                found.begin_lists()
                f_ids, f_idx, count = self._expand_scalar(ids, idx, seen, count, found, edges, stop_at_goal)
            else:
                f_ids = np.asarray(f_ids, dtype=np.int64)
                f_idx = np.asarray(f_idx, dtype=np.int64)
                live = ~self.is_goal(f_ids)  # a run of thin layers leaves goal states in
                f_ids, f_idx, count = self._expand_numpy(f_ids[live], f_idx[live], seen, count, found, edges,
                                                         stop_at_goal)
            if count >= cap and not (stop_at_goal and found.goal_index >= 0):
                status = "undecided"
                break
        if status != "undecided" and found.goal_index >= 0:
            status = "solved"
        result = Search(self, status=status, goal_index=found.goal_index, seen=seen)
        result.ids = found.array("ids", np.int64)
        result.parent = found.array("parent", np.int64)
        result.action = found.array("action", np.int8)
        if edges:
            result.edge_src = found.array("edge_src", np.int64)
            result.edge_dst = found.array("edge_dst", np.int64)
            result.edge_act = found.array("edge_act", np.int8)
        return result


class _Found:
    """What a search has found so far, in discovery order, as chunks: numpy arrays from wide
    layers, and plain lists that a run of thin layers appends single values to."""

    FIELDS = ("ids", "parent", "action", "edge_src", "edge_dst", "edge_act")

    def __init__(self) -> None:
        self.goal_index = -1
        self.chunks: dict[str, list] = {f: [] for f in self.FIELDS}
        self._lists = False
        # the list chunks of the current run of thin layers (valid while self._lists)
        self.ids: list[int] = []
        self.parent: list[int] = []
        self.action: list[int] = []
        self.edge_src: list[int] = []
        self.edge_dst: list[int] = []
        self.edge_act: list[int] = []

    def begin_lists(self) -> None:
        if not self._lists:
            for f in self.FIELDS:
                lst: list[int] = []
                self.chunks[f].append(lst)
                setattr(self, f, lst)
            self._lists = True

    def add_array(self, f: str, a: np.ndarray) -> None:
        self._lists = False
        self.chunks[f].append(a)

    def array(self, f: str, dtype) -> np.ndarray:
        parts = [np.asarray(c, dtype=dtype) for c in self.chunks[f]]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


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

    def dense_room(self, top: int) -> bool:
        """True when ids up to ``top`` fit the dense table (the state-by-state path needs it)."""
        return self.rows is not None and top < self.DENSE_LIMIT

    def ensure(self, top: int) -> None:
        assert self.rows is not None
        if top >= self.rows.size:
            grown = np.full(max(top + 1, 2 * self.rows.size, 1024), -1, dtype=np.int32)
            grown[: self.rows.size] = self.rows
            self.rows = grown

    def view(self) -> memoryview:
        """The dense table as a memoryview: plain-int indexing, several times faster than numpy's."""
        assert self.rows is not None
        return self.rows.data

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
                self.ensure(top)
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
    status: Status
    seen: _SeenIndex
    goal_index: int = -1
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    parent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    action: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
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

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(source, destination, action) of every edge: only a search asked for edges kept them."""
        if self.edge_src is None or self.edge_dst is None or self.edge_act is None:
            raise ValueError("this search did not keep its edges")
        return self.edge_src, self.edge_dst, self.edge_act


@lru_cache(maxsize=64)
def state_space(maze: Maze) -> StateSpace:
    return StateSpace(maze)


def solve(maze: Maze, start: MazeState | None = None, cap: int = STATE_CAP, *,
          cache: bool = True) -> Solution:
    """Shortest action sequence from ``start`` (default: the maze's start) into the goal.

    ``cache=False`` keeps a one-off maze (an edited copy, say) out of the per-maze cache.
    """
    t0 = time.perf_counter()
    space = state_space(maze) if cache else StateSpace(maze)
    try:
        sid = space.encode(start) if start is not None else space.start_id()
    except Unencodable:
        return reference_solve(maze, start, cap)
    if space.r1:
        return _study_search(space, sid, cap, t0)
    found = space.search([sid], cap, stop_at_goal=True, edges=False)
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
    parent: dict[int, tuple[int, int]] = {sid: (-1, -1)}
    if (sid % space.N) >> 2 == goal:
        return Solution("solved", 0, [], 1, time.perf_counter() - t0)
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


def reference_solve(maze: Maze, start: MazeState | None = None, cap: int = STATE_CAP) -> Solution:
    """The plain BFS over ``MazeState`` and ``env.state.step``: slow, obviously right."""
    t0 = time.perf_counter()
    s0 = start or initial_state(maze)
    goal = maze.goal
    if s0.pos == goal:
        return Solution("solved", 0, [], 1, time.perf_counter() - t0)
    parent: dict[MazeState, tuple[MazeState, int] | None] = {s0: None}
    frontier = deque([s0])
    while frontier:
        s = frontier.popleft()
        for a in _USEFUL:
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


def optimal_actions(maze: Maze) -> Solution:
    return solve(maze)


class EdgeIndex:
    """Edges ``src -> dst`` grouped by source, for repeated BFS with some edges left out."""

    def __init__(self, n: int, src: np.ndarray, dst: np.ndarray):
        self.n = n
        self.order = np.argsort(src, kind="stable")
        self.succ = dst[self.order]
        self.indptr = np.searchsorted(src[self.order], np.arange(n + 1))

    def hops(self, sources: np.ndarray, edge_ok: np.ndarray | None = None) -> np.ndarray:
        """Fewest edges from any of ``sources`` to each node (-1: unreachable).

        ``edge_ok`` (one flag per edge, in the order the edges were given) leaves edges out.
        """
        ok = None if edge_ok is None else edge_ok[self.order]
        dist = np.full(self.n, -1, dtype=np.int32)
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
    return EdgeIndex(n, src, dst).hops(sources)


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
        self.edge_src, self.edge_dst, self.edge_act = sweep.edges()
        n = int(sweep.ids.size)
        goals = np.flatnonzero(space.is_goal(sweep.ids))
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
    """Moves to the goal under multinet-r1, with every door and gate open and turns ignored:
    hazards and blocks are never entered, a move into a teleporter ends on its other end and one
    into a kill cell at the start (a move is then not reversible, so the search runs backwards
    over the moves out of each cell); under multinet-pr57 a move from a turntable may go any way
    (its arrow turns through all four), and with ``rules.death: fail`` a kill cell leads nowhere."""
    walls, solid, kills = maze.walls, maze.cells_of("hazard") | maze.cells_of("block"), maze.cells_of("kill")
    into: dict[tuple[int, int], list[tuple[int, int]]] = {}  # cell -> the cells one move leads here from
    for x in range(maze.width):
        for y in range(maze.height):
            if walls[x, y] or (x, y) in solid or (x, y) in kills:
                continue
            for dx, dy in DIR_VECTORS:
                n = (x + dx, y + dy)
                if walls[n] or n in solid:
                    continue
                if n in kills and maze.rulebook.death == "fail":
                    continue
                land = maze.start.pos if n in kills else r1_landing(maze, n)
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
    (under multinet-r1 also: hazards and blocks closed, teleporters and kill cells followed)."""
    return _tile_field(maze).get(pos)
