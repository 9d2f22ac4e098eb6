"""The oracle's searches over an explicit ``multinet-pr57`` maze, compiled with numba: the same
states, in the same order, as ``env.oracle.bfs.python_search`` and ``env.oracle.plans._study_search``
find stepping through ``env.state.step`` (docs/oracle.md#how-it-is-fast).

An explicit maze has no transition tables: a move can change the mechanism state (every step may
tick the phase, a hook may hold the agent, reset the maze or end the episode). Here each state is
stepped by ``step``, ``env.state._step_study`` written over a configuration row (key places, door
states, switch states, the freeze countdown, the phase, the latch: ``StateSpace``'s ``Config``).
Its own rules (keys, doors, switches, gates) are env.state's; every mechanic's hook (``holds``,
``steers``, ``refuses``, ``lands``, ``fires``, ``enters``, ``ticks``, ``over``) is asked once, in
Python, on every floor cell at every facing, phase, freeze and latch it can read, and ``step``
reads the answers from tables (``_tabulate``): each rule keeps its one declaration, in its
mechanic's module. A maze with a mechanic whose hooks read more than that (one not
``Mechanic.tabulated``), a hook answer no table can hold, a search with DROP and a multinet-r1
maze go to the plain search.

The kernels intern every successor's configuration the moment ``StateSpace.moves`` would (all of a
state's moves before any is looked at), so each configuration gets the number the plain search
gives it; the space takes them over (``StateSpace.intern``, in order) when the search ends. Where
an array is full a kernel stops, Python grows it, and the kernel goes on from where it stopped
(its loop's variables live in ``state``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from env.jit import jit, jit_inline
from env.maze import MULTINET_PR57, Maze
from env.oracle.compiled import _HASH, STATUSES, _Arrays
from env.oracle.solution import Status
from env.state import (
    DOOR_OPEN,
    FORWARD,
    LEFT,
    PICKUP,
    RIGHT,
    TOGGLE,
    MazeState,
    _static_cells,
    _ticked,
    dead,
    initial_state,
    r1_landing,
    refused,
    rules_of,
)

if TYPE_CHECKING:
    from env.oracle.bfs import Search
    from env.oracle.space import StateSpace

_DONE, _NEED_ROOM = 0, 1
_SOLVED, _UNSOLVABLE, _UNDECIDED = 0, 1, 2
_NO_MOVE = -1
# what stands on a floor cell (env.state._static_cells)
_NOTHING, _DOOR, _SWITCH, _GATE = 0, 1, 2, 3
_TOGGLE_SWITCH, _ONE_SHOT, _HOLD = 0, 1, 2
# the slots of ``shape``: counts and switches of the rules, and where each list of ``flat`` begins
(_K, _D, _S, _G, _W, _FR, _CONSUMES, _TICKS, _START_NAV, _N, _KEY_FLOOR, _UNLOCKS, _SWITCH_KIND,
 _SWITCH_FLOOR, _GATE_OPEN, _GATE_SWITCHES, _START_ROW, _WEIGHTS, _HOLD_TO, _TICK, _RADIX) = range(21)
# the columns of ``cells``, one row per floor cell: the floor one step each way (-1: wall), what
# stands there (``_static_cells``) and its index, where a move into it lands, the ways a move into
# it is refused (bits), solid, the episode over there (``over``), what a move ending there does
# (``fires``), the way a forward from it goes at each phase (``steers``; -1: the facing), and what
# entering it does (``enters``): the freeze it sets, the quarter turns of the facing, the latch
# when the move ended where it went and when it was sent on (-1: kept)
(_FRONT, _KIND, _INDEX, _LAND, _REFUSED, _SOLID, _OVER, _FIRES, _STEER, _ENTER_FREEZE, _ENTER_TURN, _LATCH_ON,
 _LATCH_SENT) = (0, 4, 5, 6, 7, 8, 9, 10, 11, 15, 16, 17, 18)
_COLUMNS = 19
_FIRES_NOT, _FIRES_RESET, _FIRES_STAYS = 0, 1, 2
# the slots of the layered kernel's ``state``
(_LO, _HI, _POS, _COUNT, _GOAL, _EDGES, _STATUS, _NEED_IDS, _NEED_EDGES) = range(9)


# ---- one step (env.state._step_study over a configuration row) -----------------------------
# ``rules``: (shape, cells, flat), three arrays (see the slots above; ``_rules`` fills them):
# a kernel reads them per step, and every array a step takes out of a tuple costs it time.


@jit_inline
def _carried(row, K):
    for k in range(K):
        if row[k] == K:
            return k
    return -1


@jit_inline
def _barrier_open(shape, cells, flat, row, f):
    """env.state._barrier_open: no closed door or gate on floor ``f``."""
    K, D = shape[_K], shape[_D]
    what = cells[f, _KIND]
    if what == _DOOR:
        return row[K + cells[f, _INDEX]] == DOOR_OPEN
    if what == _GATE:
        g = cells[f, _INDEX]
        if flat[shape[_GATE_OPEN] + g]:
            return True
        controls = flat[shape[_GATE_SWITCHES] + g]
        for i in range(shape[_S]):
            if (controls >> i) & 1 and row[K + D + i] != 0:
                return True
        return False
    return True


@jit_inline
def step(shape, cells, flat, row, nav, action, out):
    """The navigation state after ``action`` from (``row``, ``nav``), ``out`` the configuration row
    after it; -1 when the step changed nothing but the phase (``env.state.no_change``: not a move)."""
    K, D, S = shape[_K], shape[_D], shape[_S]
    FZ = K + D + S
    PH, LT = FZ + 1, FZ + 2
    f = nav >> 2
    facing = nav & 3
    if cells[f, _OVER]:  # the episode is over: only what ticks turns
        return _NO_MOVE
    out[:] = row
    to = nav
    settled = False
    held = flat[shape[_HOLD_TO] + row[FZ]]
    if held >= 0:  # ``holds``: the action only counts the freeze down
        out[FZ] = held
    elif action == LEFT:
        to = (nav & ~3) | ((facing - 1) & 3)
    elif action == RIGHT:
        to = (nav & ~3) | ((facing + 1) & 3)
    elif action == FORWARD:
        way = cells[f, _STEER + row[PH]]  # ``steers``
        if way < 0:
            way = facing
        ahead = cells[f, _FRONT + way]
        if (ahead >= 0 and not cells[ahead, _SOLID] and _barrier_open(shape, cells, flat, row, ahead)
                and not (cells[ahead, _REFUSED] >> way) & 1):
            landing = cells[ahead, _LAND]  # ``lands``
            fires = cells[landing, _FIRES]
            if fires == _FIRES_STAYS:  # the agent stays where it landed, unlatched
                to = 4 * landing + facing
                out[LT] = 0
            elif fires == _FIRES_RESET:  # back to the start, exactly as it stood: nothing ticks after it
                start = shape[_START_ROW]
                for i in range(row.size):
                    out[i] = flat[start + i]
                to = shape[_START_NAV]
                settled = True
            else:
                for i in range(S):
                    if flat[shape[_SWITCH_KIND] + i] == _HOLD:  # on exactly while the agent stands on it
                        out[K + D + i] = 1 if flat[shape[_SWITCH_FLOOR] + i] == landing else 0
                out[FZ] = cells[landing, _ENTER_FREEZE]  # ``enters``, from a freeze of 0
                to = 4 * landing + ((facing + cells[landing, _ENTER_TURN]) & 3)
                latch = cells[landing, _LATCH_ON if landing == ahead else _LATCH_SENT]
                if latch >= 0:
                    out[LT] = latch
    elif action == PICKUP:  # the key underfoot, with empty hands only
        if _carried(row, K) < 0:
            for k in range(K):
                if row[k] < K and flat[shape[_KEY_FLOOR] + row[k]] == f:
                    out[k] = K
                    break
    elif action == TOGGLE:  # a switch underfoot takes it, whatever it does; otherwise a door in front
        if cells[f, _KIND] == _SWITCH:
            i = cells[f, _INDEX]
            on = row[K + D + i] != 0
            kind = flat[shape[_SWITCH_KIND] + i]
            if not (kind == _HOLD or (kind == _ONE_SHOT and on)):
                out[K + D + i] = 0 if on else 1
        else:
            ahead = cells[f, _FRONT + facing]
            if ahead >= 0 and cells[ahead, _KIND] == _DOOR:
                d = cells[ahead, _INDEX]
                carried = _carried(row, K)
                if row[K + d] != DOOR_OPEN and carried >= 0 and (flat[shape[_UNLOCKS] + carried] >> d) & 1:
                    out[K + d] = DOOR_OPEN
                    if shape[_CONSUMES]:
                        out[carried] = K + 1
    if not settled and shape[_TICKS]:  # ``ticks``
        out[PH] = flat[shape[_TICK] + out[PH]]
    if to != nav:
        return to
    for i in range(row.size):
        if i != PH and out[i] != row[i]:
            return to
    return _NO_MOVE


# ---- configurations, interned as StateSpace.intern numbers them -----------------------------
# ``store``: (rows, hash keys, hash values, meta [configurations, hash mask])


@jit_inline
def _slot(code, mask):
    """Where ``code`` starts its probe: its multiplied bits folded down (configurations differ
    mostly in the phase, the freeze and the latch, the code's highest digits)."""
    h = code * _HASH
    return (h ^ (h >> 32)) & mask


@jit_inline
def _code(row, weights):
    code = 0
    for i in range(row.size):
        code += row[i] * weights[i]
    return code


@jit_inline
def intern(rows, keys, vals, meta, weights, row):
    code = _code(row, weights)
    mask = meta[1]
    h = _slot(code, mask)
    while keys[h] != -1:
        if keys[h] == code:
            return vals[h]
        h = (h + 1) & mask
    m = meta[0]
    keys[h] = code
    vals[h] = m
    rows[m, :] = row
    meta[0] = m + 1
    return m


@jit
def rehash(store, weights):
    """Enter the store's configurations into its (empty) hash."""
    rows, keys, vals, meta = store
    mask = meta[1]
    for m in range(meta[0]):
        code = _code(rows[m], weights)
        h = _slot(code, mask)
        while keys[h] != -1:
            h = (h + 1) & mask
        keys[h] = code
        vals[h] = m


@jit_inline
def moves(shape, cells, flat, rows, keys, vals, meta, sid, order, out_n, out_a, after):
    """StateSpace.moves: (successor id, action) of every action in ``order`` that changes ``sid``,
    their configurations interned in that order; how many. ``after``: room for a row."""
    N = shape[_N]
    weights = flat[shape[_WEIGHTS]:shape[_WEIGHTS] + shape[_W]]
    m = sid // N
    nav = sid - m * N
    row = rows[m]  # interning only ever writes rows past this one
    n = 0
    for a in order:
        to = step(shape, cells, flat, row, nav, a, after)
        if to < 0:
            continue
        out_n[n] = intern(rows, keys, vals, meta, weights, after) * N + to
        out_a[n] = a
        n += 1
    return n


@jit_inline
def room_for(rows, keys, meta, more, seen_size, N):
    """Whether ``more`` configurations fit the rows, the hash (at most half full) and the index."""
    n = meta[0] + more
    return n < rows.shape[0] and 2 * n <= keys.size and (n + 1) * N <= seen_size


@jit
def layered(state, goal, cap, stop_at_goal, edges, dense_limit, order, rules, store, seen, ids, parent, action,
            es, ed, ea):
    """python_search over an explicit space: every layer state by state, the moves in ``order``."""
    mv_n = np.empty(order.size, np.int64)
    mv_a = np.empty(order.size, np.int8)
    shape, cells, flat = rules
    rows, keys, vals, meta = store
    after = np.empty(rows.shape[1], np.int64)
    N = shape[_N]
    while True:
        lo, hi = state[_LO], state[_HI]
        if state[_POS] < 0:  # a layer begins
            if hi == lo or (stop_at_goal and state[_GOAL] >= 0):
                break
            if (meta[0] + 1) * N >= dense_limit:  # the plain search keeps its index dense
                state[_STATUS] = _UNDECIDED
                return _DONE
            state[_POS] = lo
        pos = state[_POS]
        count = state[_COUNT]
        ne = state[_EDGES]
        while pos < hi:
            sid = ids[pos]
            nav = sid % N
            if nav >> 2 == goal:
                pos += 1
                continue
            if (count + order.size > ids.size or (edges and ne + order.size > es.size)
                    or not room_for(rows, keys, meta, order.size, seen.size, N)):
                state[_POS] = pos
                state[_COUNT] = count
                state[_EDGES] = ne
                state[_NEED_IDS] = count + order.size
                state[_NEED_EDGES] = ne + order.size
                return _NEED_ROOM
            k = moves(shape, cells, flat, rows, keys, vals, meta, sid, order, mv_n, mv_a, after)
            for j in range(k):
                n = mv_n[j]
                a = mv_a[j]
                i = seen[n]
                if i < 0:
                    i = count
                    seen[n] = i
                    ids[count] = n
                    if stop_at_goal:
                        parent[count] = pos
                        action[count] = a
                    count += 1
                    if a == FORWARD and (n % N) >> 2 == goal and state[_GOAL] < 0:
                        state[_GOAL] = i
                if edges:
                    es[ne] = pos
                    ed[ne] = i
                    ea[ne] = a
                    ne += 1
            pos += 1
        state[_LO] = hi
        state[_HI] = count
        state[_COUNT] = count
        state[_EDGES] = ne
        state[_POS] = -1
        if count >= cap and not (stop_at_goal and state[_GOAL] >= 0):
            state[_STATUS] = _UNDECIDED
            return _DONE
    state[_STATUS] = _SOLVED if state[_GOAL] >= 0 else _UNSOLVABLE
    return _DONE


@jit
def study(state, goal, cap, order, rules, store, seen, ids, parent, action):
    """plans._study_search over an explicit space. state: [queue position, count, expanded,
    status, goal index]."""
    mv_n = np.empty(order.size, np.int64)
    mv_a = np.empty(order.size, np.int8)
    shape, cells, flat = rules
    rows, keys, vals, meta = store
    after = np.empty(rows.shape[1], np.int64)
    N = shape[_N]
    qpos, count, expanded = state[0], state[1], state[2]
    while qpos < count:
        if expanded >= cap:
            state[1] = count
            state[3] = _UNDECIDED
            return _DONE
        if count + order.size > ids.size or not room_for(rows, keys, meta, order.size, seen.size, N):
            state[0], state[1], state[2] = qpos, count, expanded
            return _NEED_ROOM
        sid = ids[qpos]
        expanded += 1
        k = moves(shape, cells, flat, rows, keys, vals, meta, sid, order, mv_n, mv_a, after)
        for j in range(k):
            n = mv_n[j]
            if seen[n] >= 0:
                continue
            seen[n] = count
            ids[count] = n
            parent[count] = qpos
            action[count] = mv_a[j]
            count += 1
            if (n % N) >> 2 == goal:
                state[1] = count
                state[3] = _SOLVED
                state[4] = count - 1
                return _DONE
        qpos += 1
    state[1] = count
    state[3] = _UNSOLVABLE
    return _DONE


# ---- the Python side --------------------------------------------------------------------------


def _row(cfg: tuple) -> list[int]:
    places, doors, switches, frozen, phase, latched = cfg
    return [*places, *doors, *(int(x) for x in switches), frozen, phase, int(latched)]


def _config(row: list[int], K: int, D: int, S: int) -> tuple:
    return (tuple(row[:K]), tuple(row[K:K + D]), tuple(bool(x) for x in row[K + D:K + D + S]), row[-3], row[-2],
            bool(row[-1]))


def _rules(space: StateSpace) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The maze's rules as ``step`` reads them, (shape, cells, flat); None where the plain search
    must answer (see the module's docstring; or a configuration the code does not cover)."""
    if space.drop or space.maze.ruleset != MULTINET_PR57 or not rules_of(space.maze).tabulated:
        return None
    rules = _maze_rules(space.maze)
    if rules is None:
        return None
    shape, _, flat = rules
    radix = flat[shape[_RADIX]:shape[_RADIX] + shape[_W]]
    rows = np.array([_row(c) for c in space.configs], np.int64).reshape(len(space.configs), -1)
    return rules if rows.shape[1] == radix.size and bool(((rows >= 0) & (rows < radix)).all()) else None


@lru_cache(maxsize=64)
def _maze_rules(maze: Maze) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``_rules`` of a maze, the hooks asked once per cell (``_tabulate``) of a fresh space; None
    past 62 doors or switches, or where a configuration's code would not fit 62 bits."""
    from env.oracle.space import StateSpace

    space = StateSpace(maze)
    K, D, S, G, F = space.K, len(maze.doors), len(maze.switches), len(maze.gates), space.F
    cells = np.zeros((F, _COLUMNS), np.int64)
    tabulated = _tabulate(space, cells)
    if tabulated is None:
        return None
    hold_to, tick = tabulated
    radix = [K + 2] * K + [3] * D + [2] * S + [len(hold_to), 4, 2]
    if D > 62 or S > 62:
        return None
    weights, w = [], 1
    for r in radix:
        weights.append(w)
        w *= r
    if w >= 1 << 62:
        return None
    floor_of = space.floor_of
    cells[:, _FRONT:_FRONT + 4] = space.front.reshape(F, 4)
    cells[:, _INDEX] = -1
    for cell, (what, i) in _static_cells(maze).items():
        cells[floor_of[cell], _KIND] = {"door": _DOOR, "switch": _SWITCH, "gate": _GATE}[what]
        cells[floor_of[cell], _INDEX] = i
    cells[:, _SOLID] = space.solid
    kinds = {"toggle": _TOGGLE_SWITCH, "one_shot": _ONE_SHOT, "hold": _HOLD}
    start = space.start_id()
    lists = {
        _KEY_FLOOR: space.key_floor,
        _UNLOCKS: [sum(1 << d for d, opens in enumerate(row) if opens) for row in space.unlocks],
        _SWITCH_KIND: [kinds[sw.switch_type] for sw in maze.switches],
        _SWITCH_FLOOR: [floor_of[sw.pos] for sw in maze.switches],
        _GATE_OPEN: [int(g.open) for g in maze.gates],
        _GATE_SWITCHES: [sum(1 << i for i in sw) for sw in maze.gate_switches],
        _START_ROW: _row(space.configs[start // space.N]),
        _WEIGHTS: weights,
        _HOLD_TO: hold_to,
        _TICK: tick,
        _RADIX: radix,
    }
    shape = np.zeros(21, np.int64)
    flat: list[int] = []
    for slot, values in lists.items():
        shape[slot] = len(flat)
        flat += values
    shape[[_K, _D, _S, _G, _W, _FR, _N]] = K, D, S, G, len(radix), len(hold_to), space.N
    shape[_CONSUMES] = bool(space.consumes)
    shape[_TICKS] = bool(rules_of(maze).ticks)
    shape[_START_NAV] = start % space.N
    return shape, cells, np.array(flat, np.int64)


def _tabulate(space: StateSpace, cells: np.ndarray) -> tuple[list[int], list[int]] | None:
    """Ask every hook of the maze's mechanics (``env.state.rules_of``) what it does on each floor
    cell, at each facing, phase, freeze and latch it can read (``Mechanic.tabulated``), and fill
    ``cells``' columns with it; the freeze each freeze turns into while held (-1: not held) and the
    phase each phase ticks into. None where an answer is none ``step`` can play."""
    maze = space.maze
    rules = rules_of(maze)
    floor_of, floors, F = space.floor_of, space.floors, space.F
    start = initial_state(maze)
    # a state unlike the start in every part a hook may keep or change
    probe = replace(start, dir=1, phase=2, latched=True)
    cells[:, _LAND] = np.arange(F)
    if rules.lands:
        cells[:, _LAND] = [floor_of[r1_landing(maze, c)] for c in floors]
    for c in rules.refuses:
        cells[floor_of[c], _REFUSED] = sum(1 << way for way in range(4) if refused(maze, c, way))
    freezes = {0, maze.rulebook.freeze_steps}
    for f, c in enumerate(floors):
        cells[f, _OVER] = dead(maze, _probe(probe, c, probe.dir, probe.latched))
        for phase in range(4):
            way = -1
            for steers in rules.steers:
                got = steers(maze, _probe(probe, c, probe.dir, probe.latched, phase=phase))
                if got is not None:
                    way = int(got)
                    break
            cells[f, _STEER + phase] = way
        for fires in rules.fires:
            fired = fires(maze, probe, c)
            if fired is None:
                continue
            after, _, settled = fired
            if settled and after == start:
                cells[f, _FIRES] = _FIRES_RESET
            elif not settled and after == replace(probe, pos=c, latched=False):
                cells[f, _FIRES] = _FIRES_STAYS
            else:
                return None
            break
        if not rules.enters:
            cells[f, _LATCH_ON] = cells[f, _LATCH_SENT] = -1
            continue
        entered = {}  # each facing, and each latch with the move sent on or not
        for sent, facing, latched in {*((False, d, False) for d in range(4)),
                                      *((sent, 0, latched) for sent in (False, True) for latched in (False, True))}:
            before = _probe(probe, probe.pos, facing, latched)
            after = _probe(probe, c, facing, latched, frozen=0)
            for enters in rules.enters:
                after = enters(maze, before, after, (-1, -1) if sent else c)[0]
            if (after.pos, after.carrying, after.keys, after.doors, after.switches, after.phase) != (
                    c, probe.carrying, probe.keys, probe.doors, probe.switches, probe.phase):
                return None  # it changed what no table holds
            entered[sent, facing, latched] = (after.frozen, (after.dir - facing) % 4, after.latched)
        if len({(fz, turn) for fz, turn, _ in entered.values()}) != 1:
            return None
        cells[f, _ENTER_FREEZE], cells[f, _ENTER_TURN], _ = entered[False, 0, False]
        freezes.add(int(cells[f, _ENTER_FREEZE]))
        for column, sent in ((_LATCH_ON, False), (_LATCH_SENT, True)):
            got = [entered[sent, 0, latched][2] for latched in (False, True)]
            kept = got == [False, True]
            if not kept and got[0] != got[1]:
                return None
            cells[f, column] = -1 if kept else int(got[0])
    hold_to = []
    for frozen in range(max(freezes) + 1):
        held = next((h for holds in rules.holds if (h := holds(maze, replace(probe, frozen=frozen))) is not None), None)
        if held is not None and replace(held[0], frozen=frozen) != replace(probe, frozen=frozen):
            return None
        hold_to.append(-1 if held is None else held[0].frozen)
    tick = []
    for phase in range(4):
        ticked = _ticked(maze, replace(probe, phase=phase))
        if replace(ticked, phase=phase) != replace(probe, phase=phase):
            return None
        tick.append(ticked.phase)
    return hold_to, tick


def _probe(base: MazeState, pos: tuple[int, int], facing: int, latched: bool, frozen: int | None = None,
           phase: int | None = None) -> MazeState:
    """``base`` at ``pos``, facing ``facing``, latched or not (``dataclasses.replace``, a hundred
    times per cell, would cost the tables most of their time)."""
    return MazeState(pos=pos, dir=facing, carrying=base.carrying, keys=base.keys, doors=base.doors,
                     switches=base.switches, frozen=base.frozen if frozen is None else frozen,
                     phase=base.phase if phase is None else phase, latched=latched)


def _weights(rules: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    shape, _, flat = rules
    return flat[shape[_WEIGHTS]:shape[_WEIGHTS] + shape[_W]]


class _Store:
    """The configurations the kernels intern, from the space's own on; handed back in order."""

    def __init__(self, space: StateSpace, weights: np.ndarray):
        self.space = space
        self.weights = weights
        rows = [_row(c) for c in space.configs]
        self.rows = np.array(rows, np.int64).reshape(len(rows), weights.size)
        self.count = len(rows)
        self.keys = np.zeros(0, np.int64)
        self.vals = np.zeros(0, np.int64)
        self.meta = np.zeros(2, np.int64)
        self.reserve(64)

    def sync(self) -> None:
        """Read back how many configurations the kernel interned."""
        self.count = int(self.meta[0])

    def reserve(self, more: int) -> None:
        need = self.count + more + 1
        if need > self.rows.shape[0]:
            grown = np.zeros((max(need, 2 * self.rows.shape[0]), self.weights.size), np.int64)
            grown[: self.count] = self.rows[: self.count]
            self.rows = grown
        if 2 * need > self.keys.size:
            size = 1 << max(8, (4 * need - 1).bit_length())
            self.keys = np.full(size, -1, np.int64)
            self.vals = np.zeros(size, np.int64)
            self.meta[:] = self.count, size - 1
            rehash(self.store(), self.weights)
        self.meta[:] = self.count, self.keys.size - 1

    def store(self) -> tuple:
        return self.rows, self.keys, self.vals, self.meta

    def settle(self) -> None:
        """The new configurations to the space, numbered as the kernel numbered them."""
        space = self.space
        K, D, S = space.K, len(space.maze.doors), len(space.maze.switches)
        for row in self.rows[len(space.configs): int(self.meta[0])].tolist():
            space.intern(_config(row, K, D, S))


def search(space: StateSpace, starts: list[int], cap: int, stop_at_goal: bool, edges: bool) -> Search | None:
    """``env.oracle.bfs.python_search`` over an explicit space, compiled; None where the plain
    search must run instead."""
    from env.oracle.bfs import Search, _SeenIndex

    if (rules := _rules(space)) is None:
        return None
    configs = _Store(space, _weights(rules))
    start_ids = np.unique(np.array(starts, dtype=np.int64))
    arrays = _Arrays(space, min(cap, 64 * space.N) + 1024, edges)
    if not arrays.fit_seen(configs.count + 64) or int(start_ids.max()) >= arrays.seen.size:
        return None
    if int(start_ids.max()) >= _SeenIndex.DENSE_LIMIT:
        return None  # the plain search's index falls to a sorted array: left to it
    n0 = start_ids.size
    arrays.ids[:n0] = start_ids
    arrays.parent[:n0] = -1
    arrays.action[:n0] = -1
    arrays.seen[start_ids] = np.arange(n0, dtype=np.int32)
    goal_mask = space.is_goal(start_ids)
    state = np.zeros(9, dtype=np.int64)
    state[_GOAL] = int(np.flatnonzero(goal_mask)[0]) if goal_mask.any() else -1
    # the first frontier: the starts, goal states skipped in turn (none at all: no layer)
    state[_LO], state[_HI], state[_POS], state[_COUNT] = 0, n0 if (~goal_mask).any() else 0, -1, n0
    order = np.array(space.useful, np.int64)
    while True:
        code = layered(state, space.goal_floor, cap, stop_at_goal, edges, _SeenIndex.DENSE_LIMIT, order, rules,
                       configs.store(), arrays.seen, arrays.ids, arrays.parent, arrays.action, arrays.es, arrays.ed,
                       arrays.ea)
        configs.sync()
        if code == _DONE:
            break
        configs.reserve(order.size + 1)
        arrays.grow(("ids", "parent", "action"), int(state[_NEED_IDS]))
        if edges:
            arrays.grow(("es", "ed", "ea"), int(state[_NEED_EDGES]))
        if not arrays.fit_seen(configs.count + order.size + 1):
            return None
    configs.settle()
    count = int(state[_COUNT])
    seen = _SeenIndex()
    seen.rows = arrays.seen
    result = Search(space, status=STATUSES[int(state[_STATUS])], goal_index=int(state[_GOAL]), seen=seen)
    result.ids = arrays.ids[:count].copy()
    kept = count if stop_at_goal else n0  # the plain search keeps parent links only to find the goal
    result.parent = arrays.parent[:kept].copy()
    result.action = arrays.action[:kept].copy()
    if edges:
        ne = int(state[_EDGES])
        result.edge_src = arrays.es[:ne].copy()
        result.edge_dst = arrays.ed[:ne].copy()
        result.edge_act = arrays.ea[:ne].copy()
    return result


def study_search(space: StateSpace, sid: int, cap: int) -> tuple[Status, list[int], int] | None:
    """``env.oracle.plans._study_search`` over an explicit space, compiled: (status, plan, states
    explored), or None where the plain search must run instead."""
    if (rules := _rules(space)) is None:
        return None
    configs = _Store(space, _weights(rules))
    arrays = _Arrays(space, min(cap, 64 * space.N) + 1024)
    if not arrays.fit_seen(configs.count + 64) or sid >= arrays.seen.size:
        return None
    arrays.ids[0] = sid
    arrays.parent[0] = -1
    arrays.action[0] = -1
    arrays.seen[sid] = 0
    state = np.zeros(5, dtype=np.int64)
    state[1] = 1
    state[4] = -1
    order = np.array(space.order, np.int64)
    while True:
        code = study(state, space.goal_floor, cap, order, rules, configs.store(), arrays.seen, arrays.ids,
                     arrays.parent, arrays.action)
        configs.sync()
        if code == _DONE:
            break
        configs.reserve(order.size + 1)
        arrays.grow(("ids", "parent", "action"), int(state[1]) + order.size)
        if not arrays.fit_seen(configs.count + order.size + 1):
            return None
    configs.settle()
    status = STATUSES[int(state[3])]
    plan: list[int] = []
    if status == "solved":
        i = int(state[4])
        while arrays.parent[i] >= 0:
            plan.append(int(arrays.action[i]))
            i = int(arrays.parent[i])
        plan.reverse()
    return status, plan, int(state[1])
