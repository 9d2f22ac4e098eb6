"""The generator's searches over floor cells, compiled (``env.jit``): breadth-first distances,
a shortest path, connectivity, the cells a key may hold, and the turn-and-move search that
estimates a plan's length.

Each kernel finds what its plain Python twin in ``env.generator.topology`` and
``env.generator.generator`` finds, in the same order: neighbours in ``STEPS`` order, states
in breadth-first order, so a distance table's cells come in the same order and a maze drawn from
a seed is byte for byte the same (the tests hold each pair equal). A set of cells becomes a
padded grid of flags, one row per ``x``, with a ring of non-floor around it, so a neighbour is
an index step and never leaves the array.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import overload

import numpy as np

from env.jit import jit

Cell = tuple[int, int]


class Grid:
    """Cells as indices ``(x + 1) * (height + 2) + (y + 1)`` of a padded grid ``width x height``."""

    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self.stride = height + 2
        self.size = (width + 2) * self.stride
        self.cells = _cells(width, height)
        self.at = {c: i for i, c in enumerate(self.cells) if c is not None}

    def index(self, c: Cell) -> int:
        return (c[0] + 1) * self.stride + c[1] + 1

    def cells_of(self, indices: np.ndarray) -> list[Cell]:
        if indices.size == 0:
            return []
        got = itemgetter(*indices.tolist())(self.cells)
        return list(got) if indices.size > 1 else [got]

    def mask(self, cells: Iterable[Cell]) -> np.ndarray:
        m = np.zeros(self.size, dtype=np.bool_)
        idx = [(x + 1) * self.stride + y + 1 for x, y in cells]
        m[idx] = True
        return m


@lru_cache(maxsize=32)
def _cells(width: int, height: int) -> list[Cell | None]:
    """Index -> cell, None on the padding."""
    out: list[Cell | None] = [None] * ((width + 2) * (height + 2))
    for x in range(width):
        for y in range(height):
            out[(x + 1) * (height + 2) + y + 1] = (x, y)
    return out


def grid_for(cells: Iterable[Cell]) -> Grid | None:
    """The smallest grid from (0, 0) that holds ``cells`` (None: no cells, or one off the quadrant)."""
    xs = [c[0] for c in cells]
    ys = [c[1] for c in cells]
    if not xs or min(xs) < 0 or min(ys) < 0:
        return None
    return _grid(max(xs) + 1, max(ys) + 1)


@lru_cache(maxsize=32)
def _grid(width: int, height: int) -> Grid:
    return Grid(width, height)


# ---- kernels ---------------------------------------------------------------------------------


@jit
def _bfs(mask, stride, sources, order, dist):
    """Breadth-first from ``sources`` (in order, each once) over ``mask``: the cells found in
    order and their distances; their count."""
    n = 0
    seen = np.full(mask.size, -1, np.int32)
    for s in sources:
        if mask[s] and seen[s] < 0:
            seen[s] = 0
            order[n] = s
            dist[n] = 0
            n += 1
    steps = (stride, 1, -stride, -1)  # topology.STEPS: (1, 0), (0, 1), (-1, 0), (0, -1)
    head = 0
    while head < n:
        c = order[head]
        d = dist[head] + 1
        head += 1
        for k in range(4):
            nb = c + steps[k]
            if mask[nb] and seen[nb] < 0:
                seen[nb] = d
                order[n] = nb
                dist[n] = d
                n += 1
    return n


@jit
def _band(mask, stride, src, lo, hi, order, dist, out):
    """The cells (in the order found) at a distance from ``lo`` to ``hi`` from ``src``; their count."""
    n = _bfs(mask, stride, src, order, dist)
    m = 0
    for i in range(n):
        if lo <= dist[i] <= hi:
            out[m] = order[i]
            m += 1
    return m


@jit
def _farthest(mask, stride, src, cells, k, order, dist, out):
    """The first ``k`` of ``cells`` by their distance from ``src``, farthest first, ties in the
    order of ``cells`` (a stable sort); every cell must be reachable."""
    n = _bfs(mask, stride, src, order, dist)
    at = np.full(mask.size, -1, np.int64)
    for i in range(n):
        at[order[i]] = dist[i]
    away = np.empty(cells.size, np.int64)
    for j in range(cells.size):
        away[j] = -at[cells[j]]
    ranked = np.argsort(away, kind="mergesort")
    for j in range(k):
        out[j] = cells[ranked[j]]


@jit
def _path(mask, stride, a, b, out):
    """The cells of the first shortest path from ``a`` to ``b`` found breadth-first; its length
    (0: none)."""
    prev = np.full(mask.size, -2, np.int64)
    queue = np.empty(mask.size, np.int64)
    steps = (stride, 1, -stride, -1)
    prev[a] = -1
    queue[0] = a
    head, tail = 0, 1
    while head < tail:
        c = queue[head]
        head += 1
        if c == b:
            break
        for k in range(4):
            nb = c + steps[k]
            if mask[nb] and prev[nb] == -2:
                prev[nb] = c
                queue[tail] = nb
                tail += 1
    if prev[b] == -2:
        return 0
    n = 0
    c = b
    while c != -1:
        out[n] = c
        n += 1
        c = prev[c]
    return n


@jit
def _removable(mask, stride, cells, out):
    """Per cell of ``cells``: whether the floor without it is still one connected region."""
    total = 0
    for i in range(mask.size):
        if mask[i]:
            total += 1
    order = np.empty(mask.size, np.int64)
    seen = np.zeros(mask.size, np.bool_)
    steps = (stride, 1, -stride, -1)
    for j in range(cells.size):
        c = cells[j]
        mask[c] = False
        seen[:] = False
        start = -1
        for i in range(mask.size):
            if mask[i]:
                start = i
                break
        n = 0
        if start >= 0:
            seen[start] = True
            order[0] = start
            n = 1
            head = 0
            while head < n:
                x = order[head]
                head += 1
                for k in range(4):
                    nb = x + steps[k]
                    if mask[nb] and not seen[nb]:
                        seen[nb] = True
                        order[n] = nb
                        n += 1
        out[j] = start >= 0 and n == total - 1
        mask[c] = True


@jit
def _turns(passable, stride, start, start_dir, target, facing):
    """Fewest turn/move actions from (``start``, ``start_dir``) to a state standing on ``target``
    or, with ``facing``, facing it; (actions, cell, direction), actions -1 when none."""
    steps = (stride, 1, -stride, -1)  # generator._STEPS by direction
    if (start + steps[start_dir] if facing else start) == target:
        return 0, start, start_dir
    n_states = passable.size * 4
    dist = np.full(n_states, -1, np.int32)
    queue = np.empty(n_states, np.int64)
    s0 = start * 4 + start_dir
    dist[s0] = 0
    queue[0] = s0
    head, tail = 0, 1
    nexts = np.empty(3, np.int64)
    while head < tail:
        s = queue[head]
        head += 1
        c = s // 4
        d = s % 4
        nexts[0] = c * 4 + (d - 1) % 4
        nexts[1] = c * 4 + (d + 1) % 4
        k = 2
        ahead = c + steps[d]
        if passable[ahead]:
            nexts[2] = ahead * 4 + d
            k = 3
        for j in range(k):
            t = nexts[j]
            if dist[t] < 0:
                dist[t] = dist[s] + 1
                tc = t // 4
                td = t % 4
                if (tc + steps[td] if facing else tc) == target:
                    return dist[t], tc, td
                queue[tail] = t
                tail += 1
    return -1, 0, 0


# ---- the searches, with the plain functions' signatures ---------------------------------------


class CellRun(Sequence[Cell]):
    """Cells of a grid held as indices, turned into cells one at a time when read."""

    def __init__(self, grid: Grid, indices: np.ndarray):
        self.grid = grid
        self.indices = indices

    def __len__(self) -> int:
        return int(self.indices.size)

    @overload
    def __getitem__(self, i: int) -> Cell: ...

    @overload
    def __getitem__(self, i: slice) -> CellRun: ...

    def __getitem__(self, i: int | slice) -> Cell | CellRun:
        if isinstance(i, slice):
            return CellRun(self.grid, self.indices[i])
        cell = self.grid.cells[int(self.indices[i])]
        assert cell is not None
        return cell


class Floor:
    """A floor that does not change, as a grid built once: the generator searches one layout
    thousands of times while it places a chain."""

    def __init__(self, floor: set[Cell] | frozenset[Cell], grid: Grid):
        self.floor = floor
        self.grid = grid
        self.mask = grid.mask(floor)
        self._order = np.empty(len(floor), dtype=np.int64)  # the kernels' output, reused
        self._dist = np.empty(len(floor), dtype=np.int32)
        self._out = np.empty(len(floor), dtype=np.int64)
        self._cells: tuple[list[Cell], np.ndarray] | None = None  # a list of cells as indices

    @classmethod
    def of(cls, floor: set[Cell] | frozenset[Cell]) -> Floor | None:
        grid = grid_for(floor)
        return None if grid is None else cls(floor, grid)

    def bfs_dist(self, sources: list[Cell]) -> dict[Cell, int]:
        at = self.grid.at
        src = np.array([at[c] for c in sources if c in self.floor], dtype=np.int64)
        n = _bfs(self.mask, self.grid.stride, src, self._order, self._dist)
        return dict(zip(self.grid.cells_of(self._order[:n]), self._dist[:n].tolist(), strict=True))

    def band(self, src: Cell, lo: int, hi: int) -> CellRun:
        """The cells at a distance from ``lo`` to ``hi`` from ``src``, in breadth-first order."""
        m = _band(self.mask, self.grid.stride, np.array([self.grid.at[src]], dtype=np.int64), lo, hi, self._order,
                  self._dist, self._out)
        return CellRun(self.grid, self._out[:m].copy())

    def farthest(self, src: Cell, cells: list[Cell], k: int) -> list[Cell]:
        if self._cells is None or self._cells[0] is not cells:
            self._cells = (cells, np.array([self.grid.at[c] for c in cells], dtype=np.int64))
        _farthest(self.mask, self.grid.stride, np.array([self.grid.at[src]], dtype=np.int64), self._cells[1], k,
                  self._order, self._dist, self._out)
        return self.grid.cells_of(self._out[:k])

    def shortest_path(self, a: Cell, b: Cell) -> list[Cell]:
        at = self.grid.at
        n = _path(self.mask, self.grid.stride, at[a], at[b], self._order)
        return self.grid.cells_of(self._order[:n][::-1])

    def removable(self, cells: list[Cell]) -> list[bool]:
        out = np.zeros(len(cells), dtype=np.bool_)
        _removable(self.mask.copy(), self.grid.stride, np.array([self.grid.index(c) for c in cells], dtype=np.int64),
                   out)
        return out.tolist()

    def without(self, cells: Iterable[Cell]) -> np.ndarray:
        """The floor's flags with ``cells`` taken out (a passable set to grow with ``let``)."""
        mask = self.mask.copy()
        at = self.grid.at
        for c in cells:
            mask[at[c]] = False
        return mask

    def let(self, mask: np.ndarray, c: Cell) -> None:
        mask[self.grid.at[c]] = True

    def turns(self, mask: np.ndarray, state: tuple[int, int, int], target: Cell,
              facing: bool) -> tuple[int, tuple[int, int, int]] | None:
        x, y, d = state
        grid = self.grid
        n, c, nd = _turns(mask, grid.stride, grid.at[(x, y)], d, grid.at[target], facing)
        if n < 0:
            return None
        cell = grid.cells[c]
        assert cell is not None
        return int(n), (cell[0], cell[1], int(nd))


def bfs_dist(sources: list[Cell], fl: set[Cell] | frozenset[Cell]) -> dict[Cell, int] | None:
    """``topology.bfs_dist`` over ``fl`` (blocked cells already taken out); None when ``fl`` does
    not fit a grid (the plain search answers)."""
    grid = grid_for(fl)
    if grid is None:
        return None
    src = np.array([grid.index(c) for c in sources if c in fl], dtype=np.int64)
    order = np.empty(len(fl), dtype=np.int64)
    dist = np.empty(len(fl), dtype=np.int32)
    n = _bfs(grid.mask(fl), grid.stride, src, order, dist)
    cells = grid.cells
    return dict(zip([cells[i] for i in order[:n].tolist()], dist[:n].tolist(), strict=True))


def connected(floor: set[Cell] | frozenset[Cell]) -> bool | None:
    grid = grid_for(floor)
    if grid is None:
        return None
    order = np.empty(len(floor), dtype=np.int64)
    dist = np.empty(len(floor), dtype=np.int32)
    start = np.array([grid.index(next(iter(floor)))], dtype=np.int64)
    return bool(_bfs(grid.mask(floor), grid.stride, start, order, dist) == len(floor))


def shortest_path(a: Cell, b: Cell, fl: set[Cell]) -> list[Cell] | None:
    grid = grid_for([*fl, a, b])
    if grid is None or a not in fl:
        return None
    out = np.empty(len(fl), dtype=np.int64)
    n = _path(grid.mask(fl), grid.stride, grid.index(a), grid.index(b), out)
    cells = grid.cells
    return [cells[i] for i in out[:n][::-1].tolist()]
