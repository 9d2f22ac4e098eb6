"""The oracle's two searches compiled with numba: the same states, in the same order, as
``env.oracle.bfs.search`` and ``env.oracle.plans._study_search`` (docs/oracle.md#how-it-is-fast).

Both kernels work on a tabled ``StateSpace`` (never an explicit one: those step through
``env.state.step``). A transition that changes the mechanism state reads the space's lazily
filled tables; where an entry has never been computed, the kernel stops at that point and says
which, Python computes it through the space (which interns any new configuration, in the same
order the pure search would), and the kernel goes on from where it stopped. The loop's own
variables live in ``state``, an int64 array the kernel reads back on every call, so a stop is
exact: nothing of the interrupted state is half-done.

The layered search keeps the pure search's tie-breaking to the state: a frontier of at most
``_SCALAR_LAYER`` states that fits the dense index is expanded state by state (each state's
moves in the order left, right, forward, pickup, toggle), a wider one as a whole (new states by
ascending id, each with its first parent in action-major order), and the switch between the two
follows the pure search's own bookkeeping of its index (``_SeenIndex``: its size, its growth,
its fall to a sorted array past ``DENSE_LIMIT``), mirrored here without the memory.

``GRIDBENCH_ORACLE=python`` runs the pure searches; so does a machine without numba (``env.jit``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from env.jit import jit
from env.oracle.solution import Status
from env.state import FORWARD, LEFT, PICKUP, RIGHT, TOGGLE

if TYPE_CHECKING:
    from env.oracle.bfs import Search
    from env.oracle.space import StateSpace

# past this many dense entries (1 GiB of int32) the kernel gives the search back to the pure path
_MAX_DENSE = 1 << 28

# what a kernel call ends with
_DONE, _NEED_STATE, _NEED_TABLE, _NEED_ROOM = 0, 1, 2, 3
# the slots of the layered kernel's ``state``
(_LO, _HI, _POS, _COUNT, _GOAL, _MODE, _SIZE, _ROWS, _DENSE, _EDGES, _STATUS, _TABLE, _MISSING, _CONFIGS_SEEN,
 _NEED_IDS, _NEED_EDGES, _FILLED_FROM) = range(17)
# its layer modes
_BETWEEN, _SCALAR, _WIDE = 0, 1, 2
# statuses
_SOLVED, _UNSOLVABLE, _UNDECIDED = 0, 1, 2
STATUSES: tuple[Status, ...] = ("solved", "unsolvable", "undecided")
_UNKNOWN = -2


@jit
def ensure_rows(state, top):
    # _SeenIndex.ensure: how large the pure search's dense table would be
    if top >= state[_ROWS]:
        state[_ROWS] = max(top + 1, 2 * state[_ROWS], 1024)

@jit
def mech_unknown(m, nav, front, pickup_cell, switch_of, door_of, pickup_to, switch_to, door_to):
    k = pickup_cell[nav]
    if k >= 0 and pickup_to[m, k] == _UNKNOWN:
        return True
    s = switch_of[nav >> 2]
    if s >= 0:
        return switch_to[m, s] == _UNKNOWN
    f = front[nav]
    if f >= 0 and door_of[f] >= 0:
        return door_to[m, door_of[f]] == _UNKNOWN
    return False

@jit
def moves_of(sid, N, tl, tr, front, land, pickup_cell, switch_of, door_of, mech, passable, pickup_to,
             switch_to, door_to, out_n, out_a, r1_order):
    """The moves that change ``sid``, in the pure search's order (left, right, forward,
    pickup, toggle) or the study's (left, right, pickup, toggle, forward); their count."""
    m = sid // N
    nav = sid - m * N
    base = m * N
    out_n[0] = base + tl[nav]
    out_a[0] = LEFT
    out_n[1] = base + tr[nav]
    out_a[1] = RIGHT
    n = 2
    f = front[nav]
    fwd = -1
    if f >= 0 and passable[m, f]:
        fwd = base + 4 * land[nav] + (nav & 3)
    if fwd >= 0 and not r1_order:
        out_n[n] = fwd
        out_a[n] = FORWARD
        n += 1
    if mech[nav]:
        k = pickup_cell[nav]
        if k >= 0:
            t = pickup_to[m, k]
            if t >= 0:
                out_n[n] = t * N + nav
                out_a[n] = PICKUP
                n += 1
        s = switch_of[nav >> 2]
        if s >= 0:
            t = switch_to[m, s]
            if t >= 0:
                out_n[n] = t * N + nav
                out_a[n] = TOGGLE
                n += 1
        elif f >= 0 and door_of[f] >= 0:
            t = door_to[m, door_of[f]]
            if t >= 0:
                out_n[n] = t * N + nav
                out_a[n] = TOGGLE
                n += 1
    if fwd >= 0 and r1_order:
        out_n[n] = fwd
        out_a[n] = FORWARD
        n += 1
    return n

@jit
def layered(state, N, goal, cap, stop_at_goal, parents, edges, n_configs, scalar_layer, dense_limit,
            tl, tr, front, land, pickup_cell, switch_of, door_of, mech, passable, pickup_to, switch_to,
            door_to, seen, ids, parent, action, es, ed, ea, c_dst, c_src, c_act, missing, configs_at):
    mv_n = np.empty(5, np.int64)
    mv_a = np.empty(5, np.int8)
    while True:
        mode = state[_MODE]
        if mode == _BETWEEN:
            if state[_SIZE] == 0 or (stop_at_goal and state[_GOAL] >= 0):
                break
            size = state[_SIZE]
            top = (n_configs + 3 * size + 1) * N
            if size <= scalar_layer and state[_DENSE] == 1 and top < dense_limit:
                state[_MODE] = _SCALAR
                state[_POS] = state[_LO]
                ensure_rows(state, (n_configs + 1) * N)
                state[_CONFIGS_SEEN] = n_configs
                state[_FILLED_FROM] = -1
            else:
                state[_MODE] = _WIDE
                state[_TABLE] = 0
            continue
        lo = state[_LO]
        hi = state[_HI]
        count = state[_COUNT]
        ne = state[_EDGES]
        if mode == _SCALAR:
            pos = state[_POS]
            while pos < hi:
                sid = ids[pos]
                m = sid // N
                nav = sid - m * N
                if nav >> 2 == goal:
                    pos += 1
                    continue
                if mech[nav] and mech_unknown(m, nav, front, pickup_cell, switch_of, door_of, pickup_to,
                                              switch_to, door_to):
                    state[_POS] = pos
                    state[_COUNT] = count
                    state[_EDGES] = ne
                    return _NEED_STATE
                if count + 5 > ids.size or (edges and ne + 5 > es.size):
                    state[_POS] = pos
                    state[_COUNT] = count
                    state[_EDGES] = ne
                    state[_NEED_IDS] = count + 5
                    state[_NEED_EDGES] = ne + 5
                    return _NEED_ROOM
                # the configurations known once this state's moves are computed: where Python
                # filled the rest of the layer's entries, as many as it had then
                known = configs_at[pos] if 0 <= state[_FILLED_FROM] <= pos else state[_CONFIGS_SEEN]
                if known > state[_CONFIGS_SEEN]:  # a move met new configurations
                    ensure_rows(state, (known + 1) * N)
                    state[_CONFIGS_SEEN] = known
                k = moves_of(sid, N, tl, tr, front, land, pickup_cell, switch_of, door_of, mech, passable,
                             pickup_to, switch_to, door_to, mv_n, mv_a, False)
                for j in range(k):
                    n = mv_n[j]
                    a = mv_a[j]
                    i = seen[n]
                    if i < 0:
                        i = count
                        seen[n] = i
                        ids[count] = n
                        if parents:
                            parent[count] = pos
                            action[count] = a
                        count += 1
                        if a == FORWARD and ((n % N) >> 2) == goal and state[_GOAL] < 0:
                            state[_GOAL] = i
                    if edges:
                        es[ne] = pos
                        ed[ne] = i
                        ea[ne] = a
                        ne += 1
                pos += 1
            state[_SIZE] = count - hi  # the next frontier keeps its goal states (skipped in turn)
        else:
            live = 0
            for pos in range(lo, hi):
                if ((ids[pos] % N) >> 2) != goal:
                    live += 1
            if count + 5 * live > ids.size or (edges and ne + 5 * live > es.size) or 5 * live > c_dst.size:
                state[_NEED_IDS] = count + 5 * live
                state[_NEED_EDGES] = ne + 5 * live
                return _NEED_ROOM
            # a wide layer: first every table entry it needs, one table at a time in the pure
            # search's order (pickup, then a switch, then a door), each by ascending (m, j)
            while state[_TABLE] < 3:
                t = state[_TABLE]
                n_miss = 0
                for pos in range(lo, hi):
                    sid = ids[pos]
                    m = sid // N
                    nav = sid - m * N
                    if nav >> 2 == goal or not mech[nav]:
                        continue
                    s = switch_of[nav >> 2]
                    if t == 0:
                        j = pickup_cell[nav]
                        if j >= 0 and pickup_to[m, j] == _UNKNOWN:
                            missing[n_miss] = m * pickup_to.shape[1] + j
                            n_miss += 1
                    elif t == 1:
                        if s >= 0 and switch_to[m, s] == _UNKNOWN:
                            missing[n_miss] = m * switch_to.shape[1] + s
                            n_miss += 1
                    else:
                        f = front[nav]
                        if s < 0 and f >= 0 and door_of[f] >= 0 and door_to[m, door_of[f]] == _UNKNOWN:
                            missing[n_miss] = m * door_to.shape[1] + door_of[f]
                            n_miss += 1
                if n_miss:
                    state[_MISSING] = n_miss
                    return _NEED_TABLE
                state[_TABLE] = t + 1
            # every candidate edge, action-major; a fresh destination is marked -(2 + its first
            # candidate) until the layer's new states are numbered by ascending id
            nc = 0
            n_new = 0
            for a in range(5):
                for pos in range(lo, hi):
                    sid = ids[pos]
                    m = sid // N
                    nav = sid - m * N
                    if nav >> 2 == goal:
                        continue
                    n = -1
                    if a == LEFT:
                        n = m * N + tl[nav]
                    elif a == RIGHT:
                        n = m * N + tr[nav]
                    elif a == FORWARD:
                        f = front[nav]
                        if f >= 0 and passable[m, f]:
                            n = m * N + 4 * land[nav] + (nav & 3)
                    elif a == PICKUP:
                        j = pickup_cell[nav]
                        if j >= 0 and pickup_to[m, j] >= 0:
                            n = pickup_to[m, j] * N + nav
                    else:
                        s = switch_of[nav >> 2]
                        if s >= 0:
                            if switch_to[m, s] >= 0:
                                n = switch_to[m, s] * N + nav
                        else:
                            f = front[nav]
                            if f >= 0 and door_of[f] >= 0 and door_to[m, door_of[f]] >= 0:
                                n = door_to[m, door_of[f]] * N + nav
                    if n < 0:
                        continue
                    c_dst[nc] = n
                    c_src[nc] = pos
                    c_act[nc] = a
                    if seen[n] == -1:
                        seen[n] = -(2 + nc)
                        missing[n_new] = n
                        n_new += 1
                    nc += 1
            new_ids = np.sort(missing[:n_new])
            for r in range(n_new):
                n = new_ids[r]
                first = -(seen[n] + 2)
                seen[n] = count + r
                ids[count + r] = n
                if parents:
                    parent[count + r] = c_src[first]
                    action[count + r] = c_act[first]
            if n_new and state[_DENSE] == 1:
                top = new_ids[n_new - 1]
                if top >= state[_ROWS]:
                    if top >= dense_limit:
                        state[_DENSE] = 0
                    else:
                        ensure_rows(state, top)
            if edges:
                for c in range(nc):
                    es[ne] = c_src[c]
                    ed[ne] = seen[c_dst[c]]
                    ea[ne] = c_act[c]
                    ne += 1
            goals = 0
            for r in range(n_new):
                if ((new_ids[r] % N) >> 2) == goal:
                    if state[_GOAL] < 0:
                        state[_GOAL] = count + r
                    goals += 1
            count += n_new
            state[_SIZE] = n_new - goals
        state[_LO] = hi
        state[_HI] = count
        state[_COUNT] = count
        state[_EDGES] = ne
        state[_MODE] = _BETWEEN
        if count >= cap and not (stop_at_goal and state[_GOAL] >= 0):
            state[_STATUS] = _UNDECIDED
            return _DONE
    state[_STATUS] = _SOLVED if state[_GOAL] >= 0 else _UNSOLVABLE
    return _DONE

@jit
def study(state, N, goal, cap, tl, tr, front, land, pickup_cell, switch_of, door_of, mech, passable,
          pickup_to, switch_to, door_to, seen, ids, parent, action):
    # state: [queue position, count, expanded, status, goal index]
    mv_n = np.empty(5, np.int64)
    mv_a = np.empty(5, np.int8)
    qpos = state[0]
    count = state[1]
    expanded = state[2]
    while qpos < count:
        if expanded >= cap:
            state[3] = _UNDECIDED
            state[1] = count
            return _DONE
        sid = ids[qpos]
        m = sid // N
        nav = sid - m * N
        if mech[nav] and mech_unknown(m, nav, front, pickup_cell, switch_of, door_of, pickup_to, switch_to,
                                      door_to):
            state[0] = qpos
            state[1] = count
            state[2] = expanded
            return _NEED_STATE
        if count + 5 > ids.size:
            state[0] = qpos
            state[1] = count
            state[2] = expanded
            return _NEED_ROOM
        expanded += 1
        k = moves_of(sid, N, tl, tr, front, land, pickup_cell, switch_of, door_of, mech, passable, pickup_to,
                     switch_to, door_to, mv_n, mv_a, True)
        for j in range(k):
            n = mv_n[j]
            if seen[n] >= 0:
                continue
            seen[n] = count
            ids[count] = n
            parent[count] = qpos
            action[count] = mv_a[j]
            count += 1
            if ((n % N) >> 2) == goal:
                state[1] = count
                state[3] = _SOLVED
                state[4] = count - 1
                return _DONE
        qpos += 1
    state[1] = count
    state[3] = _UNSOLVABLE
    return _DONE



@jit
def group_by_source(n, src, order, indptr):
    """A counting sort of edges by source: ``order`` (stable, as ``np.argsort(kind="stable")``)
    and where each source's edges begin."""
    indptr[:] = 0
    for e in range(src.size):
        indptr[src[e] + 1] += 1
    for v in range(n):
        indptr[v + 1] += indptr[v]
    fill = indptr[:n].copy()
    for e in range(src.size):
        order[fill[src[e]]] = e
        fill[src[e]] += 1


@jit
def hops(indptr, succ, ok, use_ok, sources, dist):
    """Fewest edges from any of ``sources`` to each node (-1: none), over the edges grouped by
    source; with ``use_ok`` only those whose flag (in grouped order) is set."""
    dist[:] = -1
    queue = np.empty(dist.size, np.int64)
    tail = 0
    for s in sources:
        if dist[s] < 0:
            dist[s] = 0
            queue[tail] = s
            tail += 1
    head = 0
    while head < tail:
        v = queue[head]
        head += 1
        for e in range(indptr[v], indptr[v + 1]):
            if use_ok and not ok[e]:
                continue
            w = succ[e]
            if dist[w] < 0:
                dist[w] = dist[v] + 1
                queue[tail] = w
                tail += 1


class _Arrays:
    """The space's tables and the search's growing arrays, as the kernels take them."""

    def __init__(self, space: StateSpace, n: int, edges: bool = False):
        self.space = space
        self.seen = np.full(0, -1, dtype=np.int32)
        self.ids = np.empty(n, dtype=np.int64)
        self.parent = np.empty(n, dtype=np.int64)
        self.action = np.empty(n, dtype=np.int8)
        self.configs_at = np.empty(n, dtype=np.int64)  # see layered's _FILLED_FROM
        m = 4 * n if edges else 0
        self.es, self.ed, self.ea = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int8)
        # a wide layer's candidate edges, and the table entries or new ids it gathers
        self.c_dst, self.c_src, self.c_act = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int8)
        self.missing = np.empty(n, np.int64)

    def fit_seen(self) -> bool:
        """Grow the dense index to every configuration known; False when it would pass _MAX_DENSE."""
        space = self.space
        top = (len(space.configs) + 1) * space.N
        if top > _MAX_DENSE:
            return False
        if top > self.seen.size:
            grown = np.full(max(top, 2 * self.seen.size), -1, dtype=np.int32)
            grown[: self.seen.size] = self.seen
            self.seen = grown
        return True

    def tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                              np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        s = self.space
        return (s.turn_left, s.turn_right, s.front, s.land, s.pickup_cell, s.switch_of, s.door_of, s.mech,
                s.passable, s.pickup_to, s.switch_to, s.door_to)

    def grow(self, names: tuple[str, ...], need: int) -> None:
        for name in names:
            a = getattr(self, name)
            if need > a.size:
                b = np.empty(max(need, 2 * a.size), dtype=a.dtype)
                b[: a.size] = a
                setattr(self, name, b)


def search(space: StateSpace, starts: list[int], cap: int, stop_at_goal: bool, edges: bool) -> Search | None:
    """``env.oracle.bfs.search`` compiled; None where the pure search must run instead."""
    from env.oracle.bfs import _SCALAR_LAYER, Search, _SeenIndex

    if space.explicit:
        return None
    start_ids = np.unique(np.array(starts, dtype=np.int64))
    arrays = _Arrays(space, min(cap, 1 << 20) + 1024, edges)
    if not arrays.fit_seen():
        return None
    if int(start_ids.max()) >= arrays.seen.size:
        return None
    n0 = start_ids.size
    arrays.ids[:n0] = start_ids
    arrays.parent[:n0] = -1
    arrays.action[:n0] = -1
    arrays.seen[start_ids] = np.arange(n0, dtype=np.int32)
    goal_mask = space.is_goal(start_ids)
    state = np.zeros(17, dtype=np.int64)
    state[_LO], state[_HI], state[_COUNT] = 0, n0, n0
    state[_GOAL] = int(np.flatnonzero(goal_mask)[0]) if goal_mask.any() else -1
    state[_SIZE] = int((~goal_mask).sum())
    top = int(start_ids.max())  # _SeenIndex.add of the starts
    state[_DENSE] = int(top < _SeenIndex.DENSE_LIMIT)
    state[_ROWS] = max(top + 1, 1024) if state[_DENSE] else 0
    while True:
        code = layered(state, space.N, space.goal_floor, cap, stop_at_goal, stop_at_goal, edges,
                       len(space.configs), _SCALAR_LAYER, _SeenIndex.DENSE_LIMIT, *arrays.tables(), arrays.seen, arrays.ids,
                       arrays.parent, arrays.action, arrays.es, arrays.ed, arrays.ea, arrays.c_dst, arrays.c_src,
                       arrays.c_act, arrays.missing, arrays.configs_at)
        if code == _DONE:
            break
        if code == _NEED_STATE:
            # every entry the rest of the layer needs, in the order its states need them: one stop
            # a layer instead of one a state
            pos, hi = int(state[_POS]), int(state[_HI])
            arrays.configs_at[pos:hi] = _fill(space, arrays.ids[pos:hi])
            state[_FILLED_FROM] = pos
        elif code == _NEED_TABLE:
            table, compute = _TABLES[int(state[_TABLE])]
            width = getattr(space, table).shape[1]
            for code_ in np.unique(arrays.missing[: state[_MISSING]]).tolist():
                mi, ji = divmod(code_, width)
                getattr(space, table)[mi, ji] = getattr(space, compute)(mi, ji)
        else:
            arrays.grow(("ids", "parent", "action", "configs_at"), int(state[_NEED_IDS]))
            if edges:
                arrays.grow(("es", "ed", "ea"), int(state[_NEED_EDGES]))
            layer = int(state[_NEED_IDS] - state[_COUNT])
            arrays.grow(("c_dst", "c_src", "c_act", "missing"), layer)
        if not arrays.fit_seen():
            return None
    count = int(state[_COUNT])
    seen = _SeenIndex()
    seen.rows = arrays.seen
    result = Search(space, status=STATUSES[int(state[_STATUS])], goal_index=int(state[_GOAL]), seen=seen)
    result.ids = arrays.ids[:count].copy()
    kept = count if stop_at_goal else n0  # the pure search keeps parent links only to find the goal
    result.parent = arrays.parent[:kept].copy()
    result.action = arrays.action[:kept].copy()
    if edges:
        ne = int(state[_EDGES])
        result.edge_src = arrays.es[:ne].copy()
        result.edge_dst = arrays.ed[:ne].copy()
        result.edge_act = arrays.ea[:ne].copy()
    return result


def _fill(space: StateSpace, ids: np.ndarray) -> np.ndarray:
    """Compute the pickup and toggle entries the states ``ids`` read, in their order, as the plain
    search would; the number of configurations known after each state's."""
    nav = ids % space.N
    acting = np.flatnonzero(space.mech[nav] & ((nav >> 2) != space.goal_floor))
    known = np.zeros(ids.size, dtype=np.int64)
    known[0] = len(space.configs)
    for i in acting.tolist():
        m, n = divmod(int(ids[i]), space.N)
        space._mechanism_moves_scalar(m, n)
        known[i] = len(space.configs)
    return np.maximum.accumulate(known)


# the tables a wide layer fills, in the order it fills them, and how the space computes an entry
_TABLES = (("pickup_to", "_pickup_result"), ("switch_to", "_switch_result"), ("door_to", "_door_result"))


def study_search(space: StateSpace, sid: int, cap: int) -> tuple[Status, list[int], int] | None:
    """``env.oracle.plans._study_search`` compiled: (status, plan, states explored), or None where
    the pure search must run instead."""
    if space.explicit:
        return None
    arrays = _Arrays(space, min(cap, 1 << 20) + 1024)
    if not arrays.fit_seen():
        return None
    arrays.ids[0] = sid
    arrays.parent[0] = -1
    arrays.action[0] = -1
    arrays.seen[sid] = 0
    state = np.zeros(5, dtype=np.int64)
    state[1] = 1
    state[4] = -1
    while True:
        code = study(state, space.N, space.goal_floor, cap, *arrays.tables(), arrays.seen, arrays.ids,
                     arrays.parent, arrays.action)
        if code == _DONE:
            break
        if code == _NEED_STATE:
            _fill(space, arrays.ids[int(state[0]): int(state[1])])  # the queue, in its order
        else:
            arrays.grow(("ids", "parent", "action"), int(state[1]) + 5)
        if not arrays.fit_seen():
            return None
    status = STATUSES[int(state[3])]
    plan: list[int] = []
    if status == "solved":
        i = int(state[4])
        while arrays.parent[i] >= 0:
            plan.append(int(arrays.action[i]))
            i = int(arrays.parent[i])
        plan.reverse()
    return status, plan, int(state[1])
