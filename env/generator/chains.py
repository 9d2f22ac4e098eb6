"""Dependency-chain patterns and where their parts may go.

A chain is a list of steps, each an enabler (a key or a switch) and the barrier it opens (a
locked door or a gate). Barriers sit on cells that cut the start off from the goal, in path
order; the enabler of step i lies in the region that opens only after barrier i-1. That one
rule gives every pattern its necessity (no way round a barrier) and its order (nothing of step
i can be reached before step i-1 is done), so the checks confirm what the layout guarantees.
"""

from __future__ import annotations

import random

from env.generator.topology import Cell, bfs_dist, connected, neighbours

# step kinds: "key" (key + locked door), "switch" (switch + gate), and "switch2": a switch + gate
# whose switch also controls the previous step's gate (two switches on one gate)
PATTERNS: dict[str, tuple[str, ...] | None] = {
    "none": (),
    "key_door": ("key",),
    "switch_gate": ("switch",),
    "gate_behind_door": ("key", "switch"),
    "door_behind_gate": ("switch", "key"),
    "two_switches_one_gate": ("switch", "switch2"),
    # sequences take their length from `mechanisms`
    "key_sequence": None,
    "switch_sequence": None,
    "mixed_sequence": None,
}


def chain_kinds(pattern: str, mechanisms: int, rng: random.Random) -> tuple[str, ...]:
    fixed = PATTERNS[pattern]
    if fixed is not None:
        return fixed
    n = max(2, mechanisms)
    if pattern == "key_sequence":
        return ("key",) * n
    if pattern == "switch_sequence":
        return ("switch",) * n
    # a mix with at least one key and one switch, order drawn at random
    kinds = ["key", "switch"] + [rng.choice(("key", "switch")) for _ in range(n - 2)]
    rng.shuffle(kinds)
    return tuple(kinds)


def fewest_keys(pattern: str, mechanisms: int) -> int:
    """The keys (each with its door) a chain of ``pattern`` holds at the least, whatever its draw."""
    fixed = PATTERNS[pattern]
    if fixed is not None:
        return fixed.count("key")
    return {"key_sequence": max(2, mechanisms), "switch_sequence": 0}.get(pattern, 1)


def cut_cells(path: list[Cell], floor: set[Cell]) -> list[int]:
    """Indices into ``path`` of cells whose removal separates its two ends.

    Any way round path cell i leaves the path before i and rejoins it after i through cells off
    the path; so i is a cut exactly when no component of the off-path floor touches the path both
    before and after it. (A shortest path has no shortcuts between its own cells.)
    """
    index = {c: i for i, c in enumerate(path)}
    bridged = [False] * len(path)
    rest = floor - set(path)
    seen: set[Cell] = set()
    for c in sorted(rest):
        if c in seen:
            continue
        comp = bfs_dist(c, rest)
        seen |= comp.keys()
        touch = [index[n] for cell in comp for n in neighbours(cell, floor) if n in index]
        if touch:
            for i in range(min(touch) + 1, max(touch)):
                bridged[i] = True
    return [i for i in range(1, len(path) - 1) if not bridged[i]]


def regions(path: list[Cell], barrier_idx: list[int], floor: set[Cell]) -> list[set[Cell]] | None:
    """The floor split by the barriers: region 0 holds the start, region n the goal."""
    blocked = {path[i] for i in barrier_idx}
    seeds = [path[0]] + [path[i + 1] for i in barrier_idx]
    out: list[set[Cell]] = []
    for s in seeds:
        if s in blocked:
            return None
        r = set(bfs_dist(s, floor, blocked))
        if any(r & o for o in out):
            return None
        out.append(r)
    if path[-1] not in out[-1]:
        return None
    return out


def key_cells_ok(floor: set[Cell], key_cells: set[Cell]) -> bool:
    """Keys block movement and can only be swapped, never dropped: a key must never sit where
    the rest of the floor needs it as a passage, and it needs a free neighbour to be picked up."""
    rest = floor - key_cells
    if not connected(rest):
        return False
    return all(neighbours(k, rest) for k in key_cells)


def carve_deadend(floor: set[Cell], width: int, height: int, anchors: list[Cell], rng: random.Random,
                  length: int) -> list[Cell] | None:
    """A spur into solid wall from one of ``anchors``: it touches nothing but its own previous
    cell, so it leads nowhere and changes no route."""
    rng.shuffle(anchors)
    for anchor in anchors:
        for _ in range(4):
            cells: list[Cell] = []
            prev = anchor
            taken = set(floor)
            for _step in range(length):
                options = []
                for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
                    c = (prev[0] + dx, prev[1] + dy)
                    if not (0 < c[0] < width - 1 and 0 < c[1] < height - 1) or c in taken:
                        continue
                    if any(n in taken and n != prev for n in _four(c)):
                        continue
                    options.append(c)
                if not options:
                    break
                prev = rng.choice(options)
                cells.append(prev)
                taken.add(prev)
            if len(cells) >= 2:
                return cells
    return None


def natural_deadend(floor: set[Cell], occupied: set[Cell], route: set[Cell]) -> list[Cell] | None:
    """An existing side branch off the route that ends blind and holds nothing."""
    tips = sorted(c for c in floor if len(neighbours(c, floor)) == 1 and c not in occupied and c not in route)
    best = None
    for tip in tips:
        branch = [tip]
        prev, cur = None, tip
        while True:
            nxt = [n for n in neighbours(cur, floor) if n != prev]
            if len(nxt) != 1 or nxt[0] in route:
                break
            prev, cur = cur, nxt[0]
            if len(neighbours(cur, floor)) > 2:
                break
            branch.append(cur)
        if len(branch) >= 2 and not (set(branch) & occupied):
            if best is None or len(branch) > len(best):
                best = branch
    return best


def _four(c: Cell) -> list[Cell]:
    return [(c[0] + 1, c[1]), (c[0] - 1, c[1]), (c[0], c[1] + 1), (c[0], c[1] - 1)]
