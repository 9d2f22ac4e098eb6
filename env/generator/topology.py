"""Wall layouts: each topology turns a grid size and a random source into a set of floor cells.

Every layout is connected (one 4-connected floor region) and keeps the outer ring as wall.
Cells are ``(x, y)`` like everywhere in gridbench.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from env import jit
from env.generator import floor_search

Cell = tuple[int, int]
STEPS = ((1, 0), (0, 1), (-1, 0), (0, -1))
# the largest side any recipe draws (pool, long-horizon and discovery specs, the variants'
# controls): past it the generator's verification and the rooms layout scale (docs/generator.md,
# "Large mazes"), and up to it every maze generated before is generated again byte for byte
RECIPE_SIDE = 40
# past RECIPE_SIDE a rooms layout has a block every this many cells along each side: rooms of
# about 9x9, where a 3x3 grid of 20x20 halls offered an 8-step chain a door for every step in
# 1 of 200 sub-seeds at 64x64
ROOM_PITCH = 10


def neighbours(c: Cell, floor: set[Cell] | frozenset[Cell]) -> list[Cell]:
    return [(c[0] + dx, c[1] + dy) for dx, dy in STEPS if (c[0] + dx, c[1] + dy) in floor]


def bfs_dist(src: Cell | list[Cell], floor: Iterable[Cell], blocked: Iterable[Cell] = ()) -> dict[Cell, int]:
    """Move counts from ``src`` (a cell, or a list of cells: from the nearest) over ``floor``
    minus ``blocked``, the cells in the order a breadth-first search finds them."""
    fl = set(floor) - set(blocked)
    sources = src if isinstance(src, list) else [src]
    if jit.enabled() and (found := floor_search.bfs_dist(sources, fl)) is not None:
        return found
    return python_bfs_dist(sources, fl)


def python_bfs_dist(sources: list[Cell], fl: set[Cell]) -> dict[Cell, int]:
    """``bfs_dist`` in plain Python (the compiled one is held to it)."""
    sources = [c for c in sources if c in fl]
    dist = {c: 0 for c in sources}
    q = deque(sources)
    while q:
        c = q.popleft()
        for n in neighbours(c, fl):
            if n not in dist:
                dist[n] = dist[c] + 1
                q.append(n)
    return dist


def shortest_path(a: Cell, b: Cell, floor: Iterable[Cell]) -> list[Cell]:
    fl = set(floor)
    if jit.enabled() and (found := floor_search.shortest_path(a, b, fl)) is not None:
        return found
    return python_shortest_path(a, b, fl)


def python_shortest_path(a: Cell, b: Cell, fl: set[Cell]) -> list[Cell]:
    prev: dict[Cell, Cell | None] = {a: None}
    q = deque([a])
    while q:
        c = q.popleft()
        if c == b:
            break
        for n in neighbours(c, fl):
            if n not in prev:
                prev[n] = c
                q.append(n)
    if b not in prev:
        return []
    path = [b]
    before = prev[b]
    while before is not None:
        path.append(before)
        before = prev[before]
    return path[::-1]


class FloorSearches:
    """Breadth-first searches over one floor that does not change: compiled over a grid built
    once (``floor_search.Floor``) or in plain Python, with the same answers."""

    def __init__(self, floor: set[Cell]):
        self.floor = floor
        self.compiled = floor_search.Floor.of(floor) if jit.enabled() else None

    def dist(self, src: Cell | list[Cell]) -> dict[Cell, int]:
        sources = src if isinstance(src, list) else [src]
        if self.compiled is not None:
            return self.compiled.bfs_dist(sources)
        return python_bfs_dist(sources, set(self.floor))

    def farthest(self, src: Cell, cells: list[Cell], k: int) -> list[Cell]:
        """The first ``k`` of ``cells`` (the whole floor) by distance from ``src``, farthest first,
        ties in the order of ``cells``."""
        if self.compiled is not None:
            return self.compiled.farthest(src, cells, k)
        d0 = self.dist(src)
        return sorted(cells, key=lambda c: -d0[c])[:k]

    def band(self, src: Cell, lo: int, hi: int) -> Sequence[Cell]:
        """The cells at a distance from ``lo`` to ``hi`` from ``src``, in breadth-first order."""
        if self.compiled is not None:
            return self.compiled.band(src, lo, hi)
        return [c for c, d in self.dist(src).items() if lo <= d <= hi]

    def path(self, a: Cell, b: Cell) -> list[Cell]:
        if self.compiled is not None and a in self.floor and b in self.floor:
            return self.compiled.shortest_path(a, b)
        return python_shortest_path(a, b, set(self.floor))

    def removable(self, cells: list[Cell]) -> set[Cell]:
        """The cells of ``cells`` (floor cells) whose removal leaves the floor connected."""
        if self.compiled is not None:
            return {c for c, ok in zip(cells, self.compiled.removable(cells), strict=True) if ok}
        return {c for c in cells if connected(self.floor - {c})}


def connected(floor: set[Cell] | frozenset[Cell]) -> bool:
    if not floor:
        return False
    if jit.enabled() and (found := floor_search.connected(floor)) is not None:
        return found
    return len(python_bfs_dist([next(iter(floor))], set(floor))) == len(floor)


def _lattice(width: int, height: int, rng: random.Random) -> tuple[list[Cell], int, int]:
    """Cells of a maze lattice (every other cell), offset at random where the size leaves room."""
    ox = rng.choice((1, 2)) if (width - 3) % 2 == 1 else 1
    oy = rng.choice((1, 2)) if (height - 3) % 2 == 1 else 1
    cells = [(x, y) for x in range(ox, width - 1, 2) for y in range(oy, height - 1, 2)]
    return cells, ox, oy


def _backtracker(cells: list[Cell], rng: random.Random) -> tuple[set[Cell], dict[Cell, list[Cell]]]:
    """Recursive-backtracker spanning tree over lattice cells: long corridors, few junctions."""
    cellset = set(cells)
    start = rng.choice(cells)
    floor = {start}
    tree: dict[Cell, list[Cell]] = {c: [] for c in cells}
    stack = [start]
    seen = {start}
    while stack:
        c = stack[-1]
        options = [(c[0] + 2 * dx, c[1] + 2 * dy) for dx, dy in STEPS]
        options = [n for n in options if n in cellset and n not in seen]
        if not options:
            stack.pop()
            continue
        n = rng.choice(options)
        floor.add(n)
        floor.add(((c[0] + n[0]) // 2, (c[1] + n[1]) // 2))
        tree[c].append(n)
        tree[n].append(c)
        seen.add(n)
        stack.append(n)
    return floor, tree


def perfect(width: int, height: int, rng: random.Random) -> set[Cell]:
    """A perfect maze: exactly one path between any two cells, corridors one cell wide."""
    cells, _, _ = _lattice(width, height, rng)
    floor, _ = _backtracker(cells, rng)
    return floor


def winding(width: int, height: int, rng: random.Random) -> set[Cell]:
    """One long winding corridor (the longest path of a random perfect maze) with a few short
    side branches; the branches hold keys and serve as dead ends."""
    cells, _, _ = _lattice(width, height, rng)
    floor, _ = _backtracker(cells, rng)
    a = max(bfs_dist(rng.choice(cells), floor).items(), key=lambda kv: kv[1])[0]
    far = bfs_dist(a, floor)
    b = max(far.items(), key=lambda kv: kv[1])[0]
    spine = shortest_path(a, b, floor)
    keep = set(spine)
    spine_set = set(spine)
    # short branches: walk off the spine into the discarded part of the tree, two to four cells
    offs = [c for c in spine if any(n not in spine_set for n in neighbours(c, floor))]
    rng.shuffle(offs)
    for c in offs[: rng.randint(2, 4)]:
        cur, prev = c, None
        for _ in range(rng.randint(2, 4)):
            nxt = [n for n in neighbours(cur, floor) if n not in spine_set and n != prev and n not in keep]
            if not nxt:
                break
            prev, cur = cur, rng.choice(nxt)
            keep.add(cur)
    return keep


def rooms(width: int, height: int, rng: random.Random) -> set[Cell]:
    """Rooms on a coarse grid, joined by one-cell corridors along a random spanning tree: 2x2 or
    3x3 blocks up to ``RECIPE_SIDE``, past it at least a block per ``ROOM_PITCH`` cells (rooms stay
    room-sized, and a long start-goal path passes enough corridors for a long chain's barriers)."""
    inner_w, inner_h = width - 2, height - 2
    nx = max(2, min(3, (inner_w + 1) // 4))
    ny = max(2, min(3, (inner_h + 1) // 4))
    if max(width, height) > RECIPE_SIDE:
        nx = max(nx, (inner_w + 1) // ROOM_PITCH)
        ny = max(ny, (inner_h + 1) // ROOM_PITCH)
    ex = [1 + round(i * inner_w / nx) for i in range(nx + 1)]
    ey = [1 + round(j * inner_h / ny) for j in range(ny + 1)]
    floor: set[Cell] = set()
    room: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    for i in range(nx):
        for j in range(ny):
            # a block spans ex[i] .. ex[i+1]-1; its last column/row stays wall between rooms
            x0, x1 = ex[i], ex[i + 1] - 2 if i < nx - 1 else ex[i + 1] - 1
            y0, y1 = ey[j], ey[j + 1] - 2 if j < ny - 1 else ey[j + 1] - 1
            if x1 - x0 >= 2 and rng.random() < 0.5:
                if rng.random() < 0.5:
                    x0 += 1
                else:
                    x1 -= 1
            if y1 - y0 >= 2 and rng.random() < 0.5:
                if rng.random() < 0.5:
                    y0 += 1
                else:
                    y1 -= 1
            room[(i, j)] = (x0, y0, x1, y1)
            floor |= {(x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)}
    # random spanning tree over the blocks, plus an occasional extra link (a loop)
    blocks = list(room)
    start = rng.choice(blocks)
    seen = {start}
    edges = []
    frontier = [(start, n) for n in _block_nbrs(start, nx, ny)]
    while frontier:
        a, b = frontier.pop(rng.randrange(len(frontier)))
        if b in seen:
            continue
        seen.add(b)
        edges.append((a, b))
        frontier += [(b, n) for n in _block_nbrs(b, nx, ny) if n not in seen]
    if rng.random() < 0.3:
        a = rng.choice(blocks)
        nb = [n for n in _block_nbrs(a, nx, ny) if (a, n) not in edges and (n, a) not in edges]
        if nb:
            edges.append((a, rng.choice(nb)))
    for a, b in edges:
        floor |= _corridor(room[a], room[b], rng)
    return floor


def _block_nbrs(b: tuple[int, int], nx: int, ny: int) -> list[tuple[int, int]]:
    out = []
    for dx, dy in STEPS:
        n = (b[0] + dx, b[1] + dy)
        if 0 <= n[0] < nx and 0 <= n[1] < ny:
            out.append(n)
    return out


def _corridor(ra: tuple[int, int, int, int], rb: tuple[int, int, int, int], rng: random.Random) -> set[Cell]:
    """A one-cell corridor between two rooms: straight where they overlap, else an L."""
    if ra[2] < rb[0] or rb[2] < ra[0]:  # side by side
        return _corridor_across(ra, rb, rng)
    # one above the other: the same corridor with x and y swapped
    def flip(r):
        return (r[1], r[0], r[3], r[2])
    return {(y, x) for x, y in _corridor_across(flip(ra), flip(rb), rng)}


def _corridor_across(ra: tuple[int, int, int, int], rb: tuple[int, int, int, int], rng: random.Random) -> set[Cell]:
    left, right = (ra, rb) if ra[2] < rb[0] else (rb, ra)
    cells: set[Cell] = set()
    lo, hi = max(left[1], right[1]), min(left[3], right[3])
    if lo <= hi:
        y = rng.randint(lo, hi)
        return {(x, y) for x in range(left[2] + 1, right[0])}
    ya, yb = rng.randint(left[1], left[3]), rng.randint(right[1], right[3])
    xm = rng.randint(left[2] + 1, right[0] - 1) if right[0] - 1 >= left[2] + 1 else left[2] + 1
    cells |= {(x, ya) for x in range(left[2] + 1, xm + 1)}
    cells |= {(xm, y) for y in range(min(ya, yb), max(ya, yb) + 1)}
    cells |= {(x, yb) for x in range(xm, right[0])}
    return cells


def open_rooms(width: int, height: int, rng: random.Random) -> set[Cell]:
    """Open floor cut by straight partition walls, each with a one-cell gap, plus wall stubs."""
    floor = {(x, y) for x in range(1, width - 1) for y in range(1, height - 1)}
    vertical = rng.random() < 0.5
    span = width if vertical else height
    # partitions with at least one floor line between them and the border
    lines: list[int] = []
    candidates = list(range(2, span - 2))
    rng.shuffle(candidates)
    want = rng.randint(2, max(2, (span - 2) // 3))
    for c in candidates:
        if len(lines) >= want:
            break
        if all(abs(c - o) >= 2 for o in lines):
            lines.append(c)
    other = height if vertical else width
    for c in sorted(lines):
        wall = {(c, t) if vertical else (t, c) for t in range(1, other - 1)}
        gap_at = rng.randint(1, other - 2)
        wall.discard((c, gap_at) if vertical else (gap_at, c))
        floor -= wall
    # a few free-standing stubs that never disconnect the floor or block a gap
    for _ in range(rng.randint(0, 3)):
        x, y = rng.randint(2, width - 3), rng.randint(2, height - 3)
        horiz = rng.random() < 0.5
        stub = {(x + i, y) if horiz else (x, y + i) for i in range(rng.randint(1, 2))}
        if not stub <= floor:
            continue
        trial = floor - stub
        if connected(trial) and all(len(neighbours(c, trial)) >= 1 for c in trial):
            # keep each partition gap passable in a straight line
            if all(_gap_ok(c, trial) for c in trial if _is_gap(c, floor, vertical)):
                floor = trial
    return floor


def _is_gap(c: Cell, floor: set[Cell], vertical: bool) -> bool:
    a = ((c[0], c[1] - 1), (c[0], c[1] + 1)) if vertical else ((c[0] - 1, c[1]), (c[0] + 1, c[1]))
    return all(n not in floor for n in a)


def _gap_ok(c: Cell, floor: set[Cell]) -> bool:
    return len(neighbours(c, floor)) == 2


TOPOLOGIES: dict[str, Callable[[int, int, random.Random], set[Cell]]] = {
    "perfect": perfect,
    "rooms": rooms,
    "open": open_rooms,
    "winding": winding,
}


def layout(topology: str, width: int, height: int, rng: random.Random) -> set[Cell]:
    """Floor cells of a fresh layout; always one connected region."""
    floor = TOPOLOGIES[topology](width, height, rng)
    floor = {c for c in floor if 0 < c[0] < width - 1 and 0 < c[1] < height - 1}
    if not connected(floor):
        # keep the largest region; a layout that splits is still a valid maze there
        best: set[Cell] = set()
        rest = set(floor)
        while rest:
            comp = set(bfs_dist(next(iter(rest)), rest))
            rest -= comp
            if len(comp) > len(best):
                best = comp
        floor = best
    return floor


def grid_rows(width: int, height: int, floor: set[Cell]) -> list[str]:
    return ["".join("." if (x, y) in floor else "#" for x in range(width)) for y in range(height)]
