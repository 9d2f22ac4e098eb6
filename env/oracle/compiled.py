"""The oracle's two searches compiled with numba: the same states, in the same order, as
``env.oracle.bfs.search`` and ``env.oracle.plans._study_search`` (docs/oracle.md#how-it-is-fast).

Both kernels work on a tabled ``StateSpace`` (never an explicit one: ``env.oracle.explicit``'s
kernels search those, or ``env.state.step``). A transition that changes the mechanism state reads the lazily filled
pickup, switch and door tables; the kernels compute a missing entry themselves and intern any
new configuration (``entry``, ``intern``: the StateSpace's rules, which the tests hold them to),
at the moment and in the order the pure search would, so the configurations get the same
numbers; the space takes them over when the search ends. Where an array is full the kernel
stops, Python grows it, and the kernel goes on: the loop's own variables live in ``state``, an
int64 array the kernel reads back on every call, so a stop is exact.

The layered search keeps the pure search's tie-breaking to the state: a frontier of at most
``_SCALAR_LAYER`` states that fits the dense index is expanded state by state (each state's
moves in the order left, right, forward, pickup, toggle), a wider one as a whole (new states by
ascending id, each with its first parent in action-major order), and the switch between the two
follows the pure search's own bookkeeping of its index (``_SeenIndex``: its size, its growth,
its fall to a sorted array past ``DENSE_LIMIT``), mirrored here without the memory.

Which searches run is ``env.jit.enabled``'s to say: the kernels where numba's cache holds them or
``GRIDBENCH_ORACLE=compiled`` asks, the pure ones with ``GRIDBENCH_ORACLE=python`` or without numba.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from env.jit import jit, jit_inline
from env.oracle.solution import Status
from env.state import DOOR_CLOSED, DOOR_LOCKED, DOOR_OPEN, FORWARD, LEFT, PICKUP, RIGHT, TOGGLE

if TYPE_CHECKING:
    from env.oracle.bfs import Search
    from env.oracle.space import StateSpace

# past this many dense entries (1 GiB of int32) the kernel gives the search back to the pure path
_MAX_DENSE = 1 << 28
# configurations made room for before the first kernel call (the pool's mazes reach 154): a kernel
# that meets more stops, and Python grows the store
_FIRST_CONFIGS = 256

# what a kernel call ends with
_DONE, _NEED_ROOM = 0, 1
# the slots of the layered kernel's ``state``
(_LO, _HI, _POS, _COUNT, _GOAL, _MODE, _SIZE, _ROWS, _DENSE, _EDGES, _STATUS, _TABLE, _MISSING, _CONFIGS_SEEN,
 _NEED_IDS, _NEED_EDGES) = range(16)
# its layer modes
_BETWEEN, _SCALAR, _WIDE = 0, 1, 2
# statuses
_SOLVED, _UNSOLVABLE, _UNDECIDED = 0, 1, 2
STATUSES: tuple[Status, ...] = ("solved", "unsolvable", "undecided")
_UNKNOWN = -2
_NOOP = -1


@jit
def ensure_rows(state, top):
    # _SeenIndex.ensure: how large the pure search's dense table would be
    if top >= state[_ROWS]:
        state[_ROWS] = max(top + 1, 2 * state[_ROWS], 1024)


# ---- mechanism configurations, interned inside the kernels ----------------------------------
# ``store``: (rows, keys, vals, passable, pickup_to, switch_to, door_to, meta), where a row is a
# configuration's key places, door states and switch states, and meta holds [configurations,
# hash mask]. ``rules``: (shape [K, D, S, r1, consumes], weights of a row's code, key floors,
# door floors, gate floors, solid floors, unlocks K x D, switch kinds, gates open at the start,
# gate controls G x S). Each function mirrors its StateSpace twin, which the tests hold it to.
_TOGGLE_SWITCH, _ONE_SHOT, _HOLD = 0, 1, 2
_HASH = 0x9E3779B97F4A7C15 - (1 << 64)  # Fibonacci hashing, as a signed 64-bit constant


@jit
def _code(row, weights):
    c = 0
    for i in range(row.size):
        c += row[i] * weights[i]
    return c


@jit
def intern(store, rules, row):
    """StateSpace.intern: the index of a configuration, registering it (and its passable row)."""
    rows, keys, vals, passable = store[0], store[1], store[2], store[3]
    meta = store[7]
    shape, weights, key_floor, door_floor, gate_floor, solid, _, _, gate_open0, gate_ctrl = rules
    K, D, S, r1 = shape[0], shape[1], shape[2], shape[3]
    code = _code(row, weights)
    mask = meta[1]
    h = (code * _HASH) & mask
    while keys[h] != -1:
        if keys[h] == code:
            return vals[h]
        h = (h + 1) & mask
    m = meta[0]
    keys[h] = code
    vals[h] = m
    rows[m, :] = row
    meta[0] = m + 1
    for f in range(solid.size):
        passable[m, f] = not solid[f]
    if not r1:  # keys block movement under minigrid only
        for k in range(K):
            if row[k] < K:
                passable[m, key_floor[row[k]]] = False
    for d in range(D):
        if row[K + d] != DOOR_OPEN:
            passable[m, door_floor[d]] = False
    for g in range(gate_floor.size):
        is_open = gate_open0[g]
        for i in range(S):
            if gate_ctrl[g, i] and row[K + D + i] != 0:
                is_open = True
        if not is_open:
            passable[m, gate_floor[g]] = False
    return m


@jit
def _carried(row, K):
    for k in range(K):
        if row[k] == K:
            return k
    return -1


@jit
def _table(store, t):
    if t == 0:
        return store[4]
    if t == 1:
        return store[5]
    return store[6]


@jit
def entry(store, rules, table, m, j):
    """The pickup (0), switch (1) or door (2) table's entry for configuration ``m`` and key cell /
    switch / door ``j``, computed on first use as StateSpace._pickup_result (and its twins) does."""
    v = _table(store, table)[m, j]
    if v != _UNKNOWN:
        return v
    shape, unlocks, switch_kind = rules[0], rules[6], rules[7]
    K, D, r1, consumes = shape[0], shape[1], shape[3], shape[4]
    row = store[0][m].copy()
    v = _NOOP
    if table == 0:
        at = -1
        for k in range(K):
            if row[k] == j:
                at = k
                break
        if at >= 0 and not (r1 and _carried(row, K) >= 0):
            for k in range(K):
                if row[k] == K:
                    row[k] = j  # swap: the carried key goes where the front key was
            row[at] = K
            v = intern(store, rules, row)
    elif table == 1:
        kind = switch_kind[j]
        on = row[K + D + j] != 0
        if not (kind == _HOLD or (kind == _ONE_SHOT and on)):
            row[K + D + j] = 0 if on else 1
            v = intern(store, rules, row)
    else:
        st = row[K + j]
        if st == DOOR_LOCKED or (r1 and st != DOOR_OPEN):
            carried = _carried(row, K)
            if carried >= 0 and unlocks[carried, j]:
                row[K + j] = DOOR_OPEN
                if consumes:
                    row[carried] = K + 1
                v = intern(store, rules, row)
        elif not r1:
            row[K + j] = DOOR_CLOSED if st == DOOR_OPEN else DOOR_OPEN
            v = intern(store, rules, row)
    _table(store, table)[m, j] = v
    return v


@jit
def fill(store, rules, m, nav, front, pickup_cell, switch_of, door_of):
    """Compute the pickup and toggle entries (m, nav) reads, in the plain search's order."""
    k = pickup_cell[nav]
    if k >= 0:
        entry(store, rules, 0, m, k)
    s = switch_of[nav >> 2]
    f = front[nav]
    if s >= 0:
        entry(store, rules, 1, m, s)
    elif f >= 0 and door_of[f] >= 0:
        entry(store, rules, 2, m, door_of[f])


@jit
def mech_moves(m, nav, N, front, pickup_cell, switch_of, door_of, pickup_to, switch_to, door_to, out_n, out_a, n):
    """Append the pickup and toggle moves that change (m, nav) to ``out_n``/``out_a`` from ``n``
    on; the new count, or -1 when an entry is not computed yet (``fill`` computes it: a call that
    passes the configuration store costs more than a state's whole work, so only then)."""
    k = pickup_cell[nav]
    if k >= 0:
        t = pickup_to[m, k]
        if t == _UNKNOWN:
            return -1
        if t >= 0:
            out_n[n] = t * N + nav
            out_a[n] = PICKUP
            n += 1
    s = switch_of[nav >> 2]
    f = front[nav]
    t = -1
    if s >= 0:
        t = switch_to[m, s]
    elif f >= 0 and door_of[f] >= 0:
        t = door_to[m, door_of[f]]
    if t == _UNKNOWN:
        return -1
    if t >= 0:
        out_n[n] = t * N + nav
        out_a[n] = TOGGLE
        n += 1
    return n


# the index of the lowest set bit of a 64-bit word w: _LOW_BIT[(w & -w) * _DE_BRUIJN >> 58]
_DE_BRUIJN = 0x03F79D71B4CB0A89
_LOW_BIT = np.zeros(64, np.int64)
for _b in range(64):
    _LOW_BIT[(((1 << _b) * _DE_BRUIJN) & ((1 << 64) - 1)) >> 58] = _b


@jit_inline
def ascending(fresh, n, marks):
    """``fresh[:n]`` (distinct ids) in ascending order. Where they lie close together, as a wide
    layer's new states do, by setting their bits in ``marks`` (one bit per id, all clear) and
    reading the words between the least and the greatest back in order, clearing them: about a
    word's work per 64 ids of the span against a sort's ~log n comparisons per id."""
    if n == 0:
        return fresh[:0].copy()
    lo = fresh[0]
    hi = fresh[0]
    for i in range(1, n):
        v = fresh[i]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    w_lo = lo >> 6
    w_hi = hi >> 6
    if w_hi - w_lo > 4 * n:
        return np.sort(fresh[:n])
    for i in range(n):
        v = fresh[i]
        marks[v >> 6] |= 1 << (v & 63)
    out = np.empty(n, np.int64)
    k = 0
    for w in range(w_lo, w_hi + 1):
        word = marks[w]
        if word == 0:
            continue
        marks[w] = 0
        while word != 0:
            low = word & -word
            out[k] = (w << 6) + _LOW_BIT[((low * _DE_BRUIJN) >> 58) & 63]
            k += 1
            word ^= low
    return out


@jit
def room_for(configs, more, rows, hashed, seen_size, N):
    """Whether ``more`` configurations past ``configs`` fit the store's ``rows``, its hash of
    ``hashed`` slots (kept at most half full) and the dense index."""
    n = configs + more
    return n < rows and 2 * n <= hashed and (n + 1) * N <= seen_size


@jit
def layered(state, N, goal, cap, stop_at_goal, parents, edges, scalar_layer, dense_limit,
            tl, tr, front, land, pickup_cell, switch_of, door_of, mech, store, rules, seen, ids, parent, action,
            es, ed, ea, c_dst, missing):
    mv_n = np.empty(5, np.int64)
    mv_a = np.empty(5, np.int8)
    marks = np.zeros(seen.size // 64 + 1, np.int64)
    meta = store[7]
    rows_cap, hashed = store[0].shape[0], store[1].size
    passable, pickup_to, switch_to, door_to = store[3], store[4], store[5], store[6]
    while True:
        mode = state[_MODE]
        n_configs = meta[0]
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
                if count + 5 > ids.size or (edges and ne + 5 > es.size) or not room_for(meta[0], 2, rows_cap, hashed, seen.size, N):
                    state[_POS] = pos
                    state[_COUNT] = count
                    state[_EDGES] = ne
                    state[_NEED_IDS] = count + 5
                    state[_NEED_EDGES] = ne + 5
                    state[_MISSING] = 2
                    return _NEED_ROOM
                base = m * N
                mv_n[0] = base + tl[nav]
                mv_a[0] = LEFT
                mv_n[1] = base + tr[nav]
                mv_a[1] = RIGHT
                k = 2
                f = front[nav]
                if f >= 0 and passable[m, f]:
                    mv_n[2] = base + 4 * land[nav] + (nav & 3)
                    mv_a[2] = FORWARD
                    k = 3
                if mech[nav]:
                    j = mech_moves(m, nav, N, front, pickup_cell, switch_of, door_of, pickup_to, switch_to, door_to,
                                   mv_n, mv_a, k)
                    if j < 0:
                        fill(store, rules, m, nav, front, pickup_cell, switch_of, door_of)
                        j = mech_moves(m, nav, N, front, pickup_cell, switch_of, door_of, pickup_to, switch_to,
                                       door_to, mv_n, mv_a, k)
                    k = j
                if meta[0] > state[_CONFIGS_SEEN]:  # a move met new configurations
                    ensure_rows(state, (meta[0] + 1) * N)
                    state[_CONFIGS_SEEN] = meta[0]
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
                        if a == FORWARD and land[nav] == goal and state[_GOAL] < 0:
                            state[_GOAL] = i
                    if edges:
                        es[ne] = pos
                        ed[ne] = i
                        ea[ne] = a
                        ne += 1
                pos += 1
            state[_SIZE] = count - hi  # the next frontier keeps its goal states (skipped in turn)
        else:
            # each live frontier state's position, configuration and navigation, divided out once
            # (a 64-bit division costs more than the rest of a state's work in the passes below),
            # and which of them pickup or toggle may act at (the table passes read only those)
            fpos = np.empty(hi - lo, np.int64)
            fm = np.empty(hi - lo, np.int64)
            fnav = np.empty(hi - lo, np.int64)
            fmech = np.empty(hi - lo, np.int64)
            live = 0
            n_mech = 0
            for pos in range(lo, hi):
                sid = ids[pos]
                m = sid // N
                nav = sid - m * N
                if nav >> 2 != goal:
                    fpos[live] = pos
                    fm[live] = m
                    fnav[live] = nav
                    if mech[nav]:
                        fmech[n_mech] = live
                        n_mech += 1
                    live += 1
            if count + 5 * live > ids.size or (edges and ne + 5 * live > es.size) or 5 * live > c_dst.size:
                state[_NEED_IDS] = count + 5 * live
                state[_NEED_EDGES] = ne + 5 * live
                state[_MISSING] = 0
                return _NEED_ROOM
            # first every table entry the layer needs, one table at a time in the pure search's
            # order (pickup, then a switch, then a door), each by ascending (m, j)
            while state[_TABLE] < 3:
                t = state[_TABLE]
                tab = pickup_to if t == 0 else (switch_to if t == 1 else door_to)
                width = tab.shape[1]
                n_miss = 0
                for q in range(n_mech):
                    i = fmech[q]
                    nav = fnav[i]
                    if t == 0:
                        j = pickup_cell[nav]
                    else:
                        s = switch_of[nav >> 2]
                        if t == 1:
                            j = s
                        else:
                            j = door_of[front[nav]] if s < 0 and front[nav] >= 0 else -1
                    if j >= 0 and tab[fm[i], j] == _UNKNOWN:
                        missing[n_miss] = fm[i] * width + j
                        n_miss += 1
                if n_miss:
                    codes = np.unique(missing[:n_miss])
                    if not room_for(meta[0], codes.size, rows_cap, hashed, seen.size, N):
                        state[_MISSING] = codes.size
                        state[_NEED_IDS] = count
                        state[_NEED_EDGES] = ne
                        return _NEED_ROOM
                    for code in codes:
                        entry(store, rules, t, code // width, code % width)
                state[_TABLE] = t + 1
            # every candidate edge, state by state into the slot a * live + i of move a of live
            # state i, so that the slots in order are the pure search's action-major candidates:
            # the destination's id where it is new in this layer, -(2 + its index) where it was
            # seen before, -1 for no move. A new destination is marked in ``seen`` with
            # -(2 + its first slot) until the layer's new states are numbered by ascending id.
            W = live
            n_new = 0
            for i in range(live):
                m = fm[i]
                nav = fnav[i]
                base = m * N
                c_dst[LEFT * W + i] = base + tl[nav]
                c_dst[RIGHT * W + i] = base + tr[nav]
                f = front[nav]
                c_dst[FORWARD * W + i] = base + 4 * land[nav] + (nav & 3) if f >= 0 and passable[m, f] else -1
                to_pick = -1
                to_toggle = -1
                if mech[nav]:
                    j = pickup_cell[nav]
                    if j >= 0 and pickup_to[m, j] >= 0:
                        to_pick = pickup_to[m, j] * N + nav
                    s = switch_of[nav >> 2]
                    t = -1
                    if s >= 0:
                        t = switch_to[m, s]
                    elif f >= 0 and door_of[f] >= 0:
                        t = door_to[m, door_of[f]]
                    if t >= 0:
                        to_toggle = t * N + nav
                c_dst[PICKUP * W + i] = to_pick
                c_dst[TOGGLE * W + i] = to_toggle
                for slot in range(i, 5 * W, W):
                    n = c_dst[slot]
                    if n < 0:
                        continue
                    mark = seen[n]
                    if mark >= 0:
                        c_dst[slot] = -(2 + mark)  # seen before this layer: its index, kept for the edge
                    elif mark == -1:
                        seen[n] = -(2 + slot)
                        missing[n_new] = n
                        n_new += 1
                    elif slot < -(mark + 2):
                        seen[n] = -(2 + slot)
            new_ids = ascending(missing, n_new, marks)
            goals = 0
            for r in range(n_new):
                n = new_ids[r]
                first = -(seen[n] + 2)
                a = first // W
                i = first - a * W
                seen[n] = count + r
                ids[count + r] = n
                if parents:
                    parent[count + r] = fpos[i]
                    action[count + r] = a
                if a == FORWARD and land[fnav[i]] == goal:  # only a move forward enters a cell
                    if state[_GOAL] < 0:
                        state[_GOAL] = count + r
                    goals += 1
            if n_new and state[_DENSE] == 1:
                top = new_ids[n_new - 1]
                if top >= state[_ROWS]:
                    if top >= dense_limit:
                        state[_DENSE] = 0
                    else:
                        ensure_rows(state, top)
            if edges:
                for a in range(5):
                    for i in range(W):
                        n = c_dst[a * W + i]
                        if n != -1:
                            es[ne] = fpos[i]
                            ed[ne] = seen[n] if n >= 0 else -(n + 2)
                            ea[ne] = a
                            ne += 1
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
def study(state, N, goal, cap, tl, tr, front, land, pickup_cell, switch_of, door_of, mech, store, rules, seen, ids,
          parent, action):
    # state: [queue position, count, expanded, status, goal index]
    mv_n = np.empty(5, np.int64)
    mv_a = np.empty(5, np.int8)
    meta = store[7]
    rows_cap, hashed = store[0].shape[0], store[1].size
    passable, pickup_to, switch_to, door_to = store[3], store[4], store[5], store[6]
    qpos = state[0]
    count = state[1]
    expanded = state[2]
    while qpos < count:
        if expanded >= cap:
            state[3] = _UNDECIDED
            state[1] = count
            return _DONE
        sid = ids[qpos]
        if count + 5 > ids.size or not room_for(meta[0], 2, rows_cap, hashed, seen.size, N):
            state[0] = qpos
            state[1] = count
            state[2] = expanded
            return _NEED_ROOM
        expanded += 1
        m = sid // N
        nav = sid - m * N
        base = m * N
        mv_n[0] = base + tl[nav]
        mv_a[0] = LEFT
        mv_n[1] = base + tr[nav]
        mv_a[1] = RIGHT
        k = 2
        if mech[nav]:
            j = mech_moves(m, nav, N, front, pickup_cell, switch_of, door_of, pickup_to, switch_to, door_to, mv_n,
                           mv_a, k)
            if j < 0:
                fill(store, rules, m, nav, front, pickup_cell, switch_of, door_of)
                j = mech_moves(m, nav, N, front, pickup_cell, switch_of, door_of, pickup_to, switch_to, door_to,
                               mv_n, mv_a, k)
            k = j
        f = front[nav]
        if f >= 0 and passable[m, f]:  # the study's order: the move last
            mv_n[k] = base + 4 * land[nav] + (nav & 3)
            mv_a[k] = FORWARD
            k += 1
        into_goal = land[nav] == goal  # where a move forward from here lands
        for j in range(k):
            n = mv_n[j]
            if seen[n] >= 0:
                continue
            seen[n] = count
            ids[count] = n
            parent[count] = qpos
            action[count] = mv_a[j]
            count += 1
            if mv_a[j] == FORWARD and into_goal:
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


@jit
def hops_along(n, src, dst, sources, dist):
    """``hops`` over the edges ``src -> dst`` as given, grouped by source (a counting sort) and
    searched in one call: a distance table's backward search. The grouping's arrays are int32 (a
    search holds fewer than 2**31 states and edges), half the memory to touch."""
    indptr = np.zeros(n + 1, np.int32)
    for e in range(src.size):
        indptr[src[e] + 1] += 1
    for v in range(n):
        indptr[v + 1] += indptr[v]
    at = indptr[:n].copy()
    succ = np.empty(src.size, np.int32)
    for e in range(src.size):
        v = src[e]
        succ[at[v]] = dst[e]
        at[v] += 1
    hops(indptr, succ, np.zeros(0, np.bool_), False, sources, dist)


class _Arrays:
    """The search's growing arrays, as the kernels take them."""

    def __init__(self, space: StateSpace, n: int, edges: bool = False):
        self.space = space
        self.seen = np.full(0, -1, dtype=np.int32)
        self.ids = np.empty(n, dtype=np.int64)
        self.parent = np.empty(n, dtype=np.int64)
        self.action = np.empty(n, dtype=np.int8)
        m = 5 * n if edges else 0  # at most five moves a state
        self.es, self.ed, self.ea = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int8)
        # a wide layer's candidate edges' destinations, and the table entries or new ids it gathers
        self.c_dst = np.empty(n, np.int64)
        self.missing = np.empty(n, np.int64)

    def fit_seen(self, configs: int) -> bool:
        """Grow the dense index to ``configs`` configurations; False past _MAX_DENSE."""
        top = (configs + 1) * self.space.N
        if top > _MAX_DENSE:
            return False
        if top > self.seen.size:
            grown = np.full(max(top, 2 * self.seen.size), -1, dtype=np.int32)
            grown[: self.seen.size] = self.seen
            self.seen = grown
        return True

    def navigation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                  np.ndarray]:
        s = self.space
        return s.turn_left, s.turn_right, s.front, s.land, s.pickup_cell, s.switch_of, s.door_of, s.mech

    def grow(self, names: tuple[str, ...], need: int) -> None:
        for name in names:
            a = getattr(self, name)
            if need > a.size:
                b = np.empty(max(need, 4 * a.size), dtype=a.dtype)
                b[: a.size] = a
                setattr(self, name, b)


class _Configurations:
    """The space's configurations and transition tables, as the kernels intern and fill them;
    handed back to the space (``settle``) once a search ends."""

    def __init__(self, space: StateSpace, rules: tuple, more: int):
        self.space = space
        self.rules = rules
        n = len(space.configs)
        self.rows = np.array([self._row(c) for c in space.configs], dtype=np.int64).reshape(n, -1)
        self.tables = [getattr(space, name)[:n].copy() for name in ("pickup_to", "switch_to", "door_to")]
        self.passable = space.passable[:n].copy()
        self.count = n
        self.size = 0
        self.keys = np.zeros(0, np.int64)
        self.vals = np.zeros(0, np.int64)
        self.reserve(more)

    @staticmethod
    def _row(cfg: tuple) -> list[int]:
        places, doors, switches = cfg[:3]
        return [*places, *doors, *(int(x) for x in switches)]

    def reserve(self, more: int) -> None:
        """Room for ``more`` new configurations in the rows, the tables and the hash."""
        need = self.count + more + 1
        if need > self.rows.shape[0]:
            cap = max(need, 2 * self.rows.shape[0], 64)

            def grown(a: np.ndarray, fill) -> np.ndarray:
                out = np.full((cap, *a.shape[1:]), fill, dtype=a.dtype)
                out[: self.count] = a[: self.count]
                return out

            self.rows = grown(self.rows, 0)
            self.tables = [grown(t, _UNKNOWN) for t in self.tables]
            self.passable = grown(self.passable, False)
        if 2 * need > self.keys.size:
            size = 1 << max(8, (4 * need - 1).bit_length())
            self.keys = np.full(size, -1, dtype=np.int64)
            self.vals = np.zeros(size, dtype=np.int64)
            weights = self.rules[1]
            for m in range(self.count):
                code = int(self.rows[m] @ weights)
                h = (code * _HASH) & (size - 1)
                while self.keys[h] != -1:
                    h = (h + 1) & (size - 1)
                self.keys[h], self.vals[h] = code, m

    def store(self) -> tuple:
        meta = np.array([self.count, self.keys.size - 1], dtype=np.int64)
        self._meta = meta
        return (self.rows, self.keys, self.vals, self.passable, *self.tables, meta)

    def sync(self) -> None:
        """Read back how many configurations the kernel interned."""
        self.count = int(self._meta[0])

    def settle(self) -> None:
        """Hand the kernel's new configurations, their passable rows and the tables to the space."""
        K, D = int(self.rules[0][0]), int(self.rules[0][1])
        rest = self.space.configs[0][3:]
        n0, n = len(self.space.configs), self.count
        rows = self.rows[n0:n]
        places, doors = map(tuple, rows[:, :K].tolist()), map(tuple, rows[:, K:K + D].tolist())
        switches = map(tuple, rows[:, K + D:].astype(bool).tolist())
        new = [(p, d, s, *rest) for p, d, s in zip(places, doors, switches, strict=True)]
        self.space.adopt(new, self.passable[n0:n], [t[:n] for t in self.tables])


def _rules(space: StateSpace) -> tuple | None:
    """The space's mechanism rules as the kernels read them; None when a configuration's code
    would not fit 62 bits (the plain search answers)."""
    maze = space.maze
    K, D, S = space.K, len(maze.doors), len(maze.switches)
    if any(c[3:] != space.configs[0][3:] for c in space.configs):
        return None
    radix = [K + 2] * K + [3] * D + [2] * S
    weights, w = [], 1
    for r in radix:
        weights.append(w)
        w *= r
    if w >= 1 << 62:
        return None
    kinds = {"toggle": _TOGGLE_SWITCH, "one_shot": _ONE_SHOT, "hold": _HOLD}
    ctrl = np.zeros((len(maze.gates), max(S, 1)), dtype=np.bool_)
    for g, sw in enumerate(maze.gate_switches):
        for i in sw:
            ctrl[g, i] = True
    unlocks = np.zeros((max(K, 1), max(D, 1)), dtype=np.bool_)
    for k, row in enumerate(space.unlocks):
        unlocks[k, : len(row)] = row
    return (
        np.array([K, D, S, int(space.r1), int(bool(space.consumes))], dtype=np.int64),
        np.array(weights, dtype=np.int64),
        np.array(space.key_floor, dtype=np.int64).reshape(-1),
        np.array(space.door_floor, dtype=np.int64).reshape(-1),
        np.array(space.gate_floor, dtype=np.int64).reshape(-1),
        space.solid,
        unlocks,
        np.array([kinds[sw.switch_type] for sw in maze.switches], dtype=np.int64).reshape(-1),
        np.array([g.open for g in maze.gates], dtype=np.bool_).reshape(-1),
        ctrl,
    )


def search(space: StateSpace, starts: list[int], cap: int, stop_at_goal: bool, edges: bool) -> Search | None:
    """``env.oracle.bfs.search`` compiled; None where the pure search must run instead."""
    from env.oracle.bfs import _SCALAR_LAYER, Search, _SeenIndex

    if space.explicit or (rules := _rules(space)) is None:
        return None
    configs = _Configurations(space, rules, _FIRST_CONFIGS)
    start_ids = np.unique(np.array(starts, dtype=np.int64))
    arrays = _Arrays(space, _first_size(cap), edges)
    if not arrays.fit_seen(configs.count + _FIRST_CONFIGS) or int(start_ids.max()) >= arrays.seen.size:
        return None
    n0 = start_ids.size
    arrays.ids[:n0] = start_ids
    arrays.parent[:n0] = -1
    arrays.action[:n0] = -1
    arrays.seen[start_ids] = np.arange(n0, dtype=np.int32)
    goal_mask = space.is_goal(start_ids)
    state = np.zeros(16, dtype=np.int64)
    state[_LO], state[_HI], state[_COUNT] = 0, n0, n0
    state[_GOAL] = int(np.flatnonzero(goal_mask)[0]) if goal_mask.any() else -1
    state[_SIZE] = int((~goal_mask).sum())
    top = int(start_ids.max())  # _SeenIndex.add of the starts
    state[_DENSE] = int(top < _SeenIndex.DENSE_LIMIT)
    state[_ROWS] = max(top + 1, 1024) if state[_DENSE] else 0
    while True:
        code = layered(state, space.N, space.goal_floor, cap, stop_at_goal, stop_at_goal, edges, _SCALAR_LAYER,
                       _SeenIndex.DENSE_LIMIT, *arrays.navigation(), configs.store(), rules, arrays.seen, arrays.ids,
                       arrays.parent, arrays.action, arrays.es, arrays.ed, arrays.ea, arrays.c_dst, arrays.missing)
        configs.sync()
        if code == _DONE:
            break
        more = int(state[_MISSING]) + 2
        configs.reserve(more)
        arrays.grow(("ids", "parent", "action"), int(state[_NEED_IDS]))
        if edges:
            arrays.grow(("es", "ed", "ea"), int(state[_NEED_EDGES]))
        arrays.grow(("c_dst", "missing"), int(state[_NEED_IDS] - state[_COUNT]))
        if not arrays.fit_seen(configs.count + more):
            return None
    configs.settle()
    count = int(state[_COUNT])
    seen = _SeenIndex()
    seen.rows = arrays.seen
    result = Search(space, status=STATUSES[int(state[_STATUS])], goal_index=int(state[_GOAL]), seen=seen)
    result.ids = _trimmed(arrays.ids, count)
    kept = count if stop_at_goal else n0  # the pure search keeps parent links only to find the goal
    result.parent = _trimmed(arrays.parent, kept)
    result.action = _trimmed(arrays.action, kept)
    if edges:
        ne = int(state[_EDGES])
        result.edge_src = _trimmed(arrays.es, ne)
        result.edge_dst = _trimmed(arrays.ed, ne)
        result.edge_act = _trimmed(arrays.ea, ne)
    return result


_COPY_BELOW = 1 << 18  # bytes: what _trimmed copies rather than cuts


def _trimmed(a: np.ndarray, n: int) -> np.ndarray:
    """``a``'s first ``n`` entries: a copy where they are few, else ``a`` cut to size in place,
    the allocator giving the rest back without copying what the search wrote (copying a sweep's
    edges cost a sixth of the kernel's time; shrinking the mapping of a small search's arrays
    costs more than copying them). ``a`` is the search's own array, which nothing else views."""
    if n * a.itemsize < _COPY_BELOW:
        return a[:n].copy()
    a.resize(n, refcheck=False)
    return a


def study_search(space: StateSpace, sid: int, cap: int) -> tuple[Status, list[int], int] | None:
    """``env.oracle.plans._study_search`` compiled: (status, plan, states explored), or None where
    the pure search must run instead."""
    if space.explicit or (rules := _rules(space)) is None:
        return None
    configs = _Configurations(space, rules, _FIRST_CONFIGS)
    arrays = _Arrays(space, _first_size(cap))
    if not arrays.fit_seen(configs.count + _FIRST_CONFIGS):
        return None
    arrays.ids[0] = sid
    arrays.parent[0] = -1
    arrays.action[0] = -1
    arrays.seen[sid] = 0
    state = np.zeros(5, dtype=np.int64)
    state[1] = 1
    state[4] = -1
    while True:
        code = study(state, space.N, space.goal_floor, cap, *arrays.navigation(), configs.store(), rules,
                     arrays.seen, arrays.ids, arrays.parent, arrays.action)
        configs.sync()
        if code == _DONE:
            break
        configs.reserve(2)
        arrays.grow(("ids", "parent", "action"), int(state[1]) + 5)
        if not arrays.fit_seen(configs.count + 2):
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


def _first_size(cap: int) -> int:
    # room up front for a search of up to 65,536 states (the pool's largest, 39,476, never stops to
    # grow), its largest array (the edges, five a state) 2.6 MB: an array that size the allocator
    # hands out again from memory the last search freed, where a larger one is a fresh mapping
    # whose every page faults on first touch (p0029's oracle 3.8-4.2 ms with room for 2M states,
    # 3.2-3.4 ms with this; a 64x64 maze's 40-44 ms, 35.5 ms); a larger search grows fourfold
    return min(cap, 1 << 16) + 1024


