"""The dense state index of one maze and its transition function (the oracle's state space).

A state is ``mechanism * (4 * floors) + navigation`` (``env.oracle``'s docstring); turns and moves
are table look-ups, and the transitions that change the mechanism state (pickup, toggle) are
computed once per (mechanism state, key cell / door / switch) pair. An explicit maze (hold
switches, a mechanic whose rules the tables do not hold, multinet-pr57), and every maze searched
with DROP, steps through ``env.state.step`` instead.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from env.maze import DIR_VECTORS, MULTINET_PR57, Maze
from env.state import (
    DOOR_CLOSED,
    DOOR_LOCKED,
    DOOR_OPEN,
    DROP,
    FORWARD,
    LEFT,
    PICKUP,
    RIGHT,
    SIX_ACTIONS,
    TOGGLE,
    MazeState,
    initial_state,
    no_change,
    r1_landing,
    rules_of,
    step,
)

# the actions a search tries: `done` never changes the state; DROP only where it is offered
USEFUL_ACTIONS = tuple(i for i, a in enumerate(SIX_ACTIONS) if a != "done")
USEFUL_WITH_DROP = (*USEFUL_ACTIONS, DROP)
# the study's successor order (RULES: turn left, turn right, pickup, [drop], toggle, forward): it
# decides which states its BFS has generated when it first meets the goal
R1_ORDER = (LEFT, RIGHT, PICKUP, TOGGLE, FORWARD)
R1_ORDER_DROP = (LEFT, RIGHT, PICKUP, DROP, TOGGLE, FORWARD)
_UNKNOWN = -2  # a lazily filled transition table entry not computed yet
_NOOP = -1


class Unencodable(ValueError):
    """A ``MazeState`` the dense index cannot express (a key off every key cell)."""


# A mechanism configuration: (place of each key, door states, switch states, freeze countdown,
# phase, latch: env.state.MazeState's). A key's place is the index of the key cell it lies on, K (= number
# of key cells: of keys, or with DROP of floor cells) when carried, K + 1 when used up (the study's
# rulesets); the last two are multinet-pr57's.
Config = tuple[tuple[int, ...], tuple[int, ...], tuple[bool, ...], int, int, bool]


class StateSpace:
    """The dense state index of one maze and its vectorised transition function; with ``drop``
    the search also takes DROP (the protocol's ``actions: with_drop``), and never otherwise."""

    def __init__(self, maze: Maze, drop: bool = False):
        self.maze = maze
        self.r1 = maze.study_rules
        self.drop = drop
        self.useful = USEFUL_WITH_DROP if drop else USEFUL_ACTIONS
        self.order = R1_ORDER_DROP if drop else R1_ORDER
        # moves that change the mechanism state (hold switches, and a mechanic's rule beyond where a
        # move lands: env.state.rules_of; under multinet-pr57 every maze, whose steps count the
        # phase; DROP, which can put a key on any floor cell): no table
        self.explicit = drop or self.r1 and (any(sw.switch_type == "hold" for sw in maze.switches)
                                             or not rules_of(maze).tabled or maze.ruleset == MULTINET_PR57)
        ys, xs = np.nonzero(~maze.walls.T)  # row by row (y), each from the left (x)
        self.floors: list[tuple[int, int]] = list(zip(xs.tolist(), ys.tolist(), strict=True))
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
        # where a forward move into the cell in front ends: where a mechanic sends it (``lands``), or there
        self.land = self.front
        if rules_of(maze).lands:
            lands = [self.floor_of[r1_landing(maze, c)] for c in self.floors]
            self.land = np.where(self.front >= 0, np.array([*lands, -1], dtype=np.int64)[self.front], -1)
        self.goal_floor = self.floor_of[maze.goal]
        # floor cells nothing ever enters (the solid mechanics': multinet-r1's hazards and blocks)
        self.solid = np.zeros(F, dtype=bool)
        for c in maze.solid_cells:
            self.solid[self.floor_of[c]] = True

        def per_floor(objs) -> np.ndarray:
            a = np.full(F + 1, -1, dtype=np.int64)
            for i, o in enumerate(objs):
                a[self.floor_of[o.pos]] = i
            return a

        # the cells a key can lie on: where the keys lie at the start (pickup only ever swaps keys
        # between those), or with DROP every floor cell. K, their number, is a key's place while
        # carried (K + 1: used up).
        if drop:
            self.key_cells: list[tuple[int, int]] = list(self.floors)
            self.key_cell_of = np.array([*range(F), -1], dtype=np.int64)
        else:
            self.key_cells = [k.pos for k in maze.keys]
            self.key_cell_of = per_floor(maze.keys)  # initial key i lies on key cell i
        self.K = len(self.key_cells)
        self._py_key_cell = self.key_cell_of.tolist()
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
        # (an explicit search uses no table: keep them one column wide)
        self.pickup_to = np.zeros((0, 1 if self.explicit else max(self.K, 1)), dtype=np.int64)
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
        self.mech = on_switch | (self.pickup_cell >= 0) | (self.door_of[self.front] >= 0)
        self._py_mech = self.mech.tolist()
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
        self.configs.append(cfg)
        self.config_index[cfg] = m
        if self.explicit:  # its moves step through the rules: no passable row, no table
            return m
        if m == self._cap:
            self._grow(2 * self._cap)
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

    def adopt(self, configs: list[Config], passable: np.ndarray, tables: list[np.ndarray]) -> None:
        """Take over configurations interned, in order, after those known, by the compiled search
        (``env.oracle.compiled``: ``intern``'s rules there), with their passable rows and the
        pickup, switch and door tables of every configuration."""
        n0, n = len(self.configs), len(self.configs) + len(configs)
        cap = self._cap
        while cap < n:
            cap *= 2
        if cap > self._cap:  # the size the plain search's doublings would reach, in one step
            self._grow(cap)
        for m, cfg in enumerate(configs, n0):
            self.configs.append(cfg)
            self.config_index[cfg] = m
        self.passable[n0:n] = passable
        for table, got in zip((self.pickup_to, self.switch_to, self.door_to), tables, strict=True):
            table[:n] = got

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
                cell = self._py_key_cell[f] if f >= 0 else -1
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

    def moves(self, sid: int, order: Sequence[int] | None = None) -> list[tuple[int, int]]:
        """(successor id, action) of every action that changes state ``sid``, in ``order`` (by
        default the study's successor order, with DROP where it is offered)."""
        order = self.order if order is None else order
        if self.explicit:
            s = self.decode(sid)  # once for all the actions
            stepped = [(step(self.maze, s, a)[0], a) for a in order]
            return [(self.encode(n), a) for n, a in stepped if not no_change(s, n)]
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

    # ---- one state at a time (``moves`` and the search's thin layers) ---------------------
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


@lru_cache(maxsize=64)
def state_space(maze: Maze, drop: bool = False) -> StateSpace:
    return StateSpace(maze, drop)

