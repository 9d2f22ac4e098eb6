"""The layered breadth-first search over a state space's dense ids, and what it finds.

One layer at a time: thin layers go state by state into plain lists, wide ones through numpy
arrays (``_SCALAR_LAYER`` decides); an explicit maze always goes state by state. A dense index
(one int32 row per mechanism configuration) records which ids were seen, a sorted array past
``_SeenIndex.DENSE_LIMIT``. The result keeps parent links (a plan) or every edge (the full sweep
``env.oracle.distances`` builds distances from).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from env import jit
from env.oracle import compiled, explicit
from env.oracle.solution import Status
from env.oracle.space import StateSpace
from env.state import FORWARD, LEFT, RIGHT

_SCALAR_LAYER = 400  # frontiers up to this size are expanded state by state


def search(space: StateSpace, starts: list[int], cap: int, stop_at_goal: bool, edges: bool) -> Search:
    """Layered BFS from ``starts`` over ids. Goal states are found but not expanded.

    A tabled space is searched by the compiled kernel (``env.oracle.compiled``), an explicit
    multinet-pr57 one by ``env.oracle.explicit``'s, state for state the same search;
    ``python_search`` is this search in plain Python and numpy.
    """
    if jit.enabled():
        found = (explicit.search if space.explicit else compiled.search)(space, starts, cap, stop_at_goal, edges)
        if found is not None:
            return found
    return python_search(space, starts, cap, stop_at_goal, edges)


def python_search(space: StateSpace, starts: list[int], cap: int, stop_at_goal: bool, edges: bool) -> Search:
    """Layered BFS from ``starts`` over ids, in plain Python and numpy.

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
    goal_mask = space.is_goal(start_ids)
    if goal_mask.any():
        found.goal_index = int(np.flatnonzero(goal_mask)[0])
    f_ids: list[int] | np.ndarray = start_ids[~goal_mask]
    f_idx: Sequence[int] | np.ndarray = np.flatnonzero(~goal_mask).astype(np.int64)
    status: Status = "unsolvable"
    while len(f_ids) and not (stop_at_goal and found.goal_index >= 0):
        size = len(f_ids)
        if space.explicit and not seen.dense_room((len(space.configs) + 1) * space.N):
            status = "undecided"  # the explicit search keeps its index dense (docs/oracle.md)
            break
        if space.explicit or (size <= _SCALAR_LAYER
                              and seen.dense_room((len(space.configs) + 3 * size + 1) * space.N)):
            ids: list[int] = f_ids.tolist() if isinstance(f_ids, np.ndarray) else f_ids
            idx = f_idx.tolist() if isinstance(f_idx, np.ndarray) else f_idx
            found.begin_lists()
            f_ids, f_idx, count = _expand_scalar(space, ids, idx, seen, count, found, edges, stop_at_goal)
        else:
            f_ids = np.asarray(f_ids, dtype=np.int64)
            f_idx = np.asarray(f_idx, dtype=np.int64)
            live = ~space.is_goal(f_ids)  # a run of thin layers leaves goal states in
            f_ids, f_idx, count = _expand_numpy(space, f_ids[live], f_idx[live], seen, count, found, edges,
                                                stop_at_goal)
        if count >= cap and not (stop_at_goal and found.goal_index >= 0):
            status = "undecided"
            break
    if status != "undecided" and found.goal_index >= 0:
        status = "solved"
    result = Search(space, status=status, goal_index=found.goal_index, seen=seen)
    result.ids = found.array("ids", np.int64)
    result.parent = found.array("parent", np.int64)
    result.action = found.array("action", np.int8)
    if edges:
        result.edge_src = found.array("edge_src", np.int64)
        result.edge_dst = found.array("edge_dst", np.int64)
        result.edge_act = found.array("edge_act", np.int8)
    return result


def _expand_scalar(space: StateSpace, f_ids: list[int], f_idx, seen: _SeenIndex, count: int,
                   out: _Found, edges: bool, parents: bool) -> tuple[list[int], range, int]:
    """One BFS layer state by state: for thin frontiers, where numpy's per-call cost dominates,
    and every layer of an explicit maze (its moves come from ``moves``, no table).

    Appends what it finds to ``out`` and returns the next frontier (ids, indices) and count.
    The next frontier is every state found here, goal states included: they are skipped
    when their turn to be expanded comes.
    """
    N, goal = space.N, space.goal_floor
    tl, tr, mech, fwd = space._py_left, space._py_right, space._py_mech, space._py_forward
    ids_out, par_out, act_out = out.ids, out.parent, out.action
    es, ed, ea = out.edge_src, out.edge_dst, out.edge_act
    first_new, first_count = len(ids_out), count
    seen.ensure((len(space.configs) + 1) * N)
    if not space.explicit:
        space._forward_row(len(space.configs) - 1)
    rows = seen.view()
    for sid, si in zip(f_ids, f_idx, strict=True):
        m, nav = divmod(sid, N)
        if nav >> 2 == goal:
            continue
        if space.explicit:
            moves = space.moves(sid, space.useful)
            seen.ensure((len(space.configs) + 1) * N)
            rows = seen.view()
        else:
            base = m * N
            fn = fwd[m][nav]
            moves = [(base + tl[nav], LEFT), (base + tr[nav], RIGHT)]
            if fn >= 0:
                moves.append((base + fn, FORWARD))
            if mech[nav]:
                moves += space._mechanism_moves_scalar(m, nav)
                if len(fwd) < len(space.configs):  # the move met new configurations
                    seen.ensure((len(space.configs) + 1) * N)
                    space._forward_row(len(space.configs) - 1)
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


def _expand_numpy(space: StateSpace, f_ids: np.ndarray, f_idx: np.ndarray, seen: _SeenIndex, count: int,
                  out: _Found, edges: bool, parents: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """One BFS layer over arrays: for wide frontiers."""
    dst_parts, src_parts, act_parts = [], [], []
    for a in space.useful:
        dst = space.successors(f_ids, a)
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
    goal_mask = space.is_goal(new_ids)
    if goal_mask.any() and out.goal_index < 0:
        out.goal_index = int(new_idx[np.flatnonzero(goal_mask)[0]])
    return new_ids[~goal_mask], new_idx[~goal_mask], count


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

