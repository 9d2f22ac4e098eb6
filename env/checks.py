"""The four validity checks of a pool maze (docs/design.md §4), each naming the object that fails.

1. ``reachable``: the oracle solves the maze within the state cap.
2. ``mechanism_necessity``: for each step of ``meta.chain``, remove its enabler (its key or
   switch; a step without one has its barrier turned into wall) and re-solve: a maze still
   solvable without it reports that object as unnecessary.
3. ``chain_ordering``: no part of step i (its key picked up, its door opened, its switch reached)
   can be operated while step i-1's barrier has never been opened (its door open, its gate
   open; for a step with no barrier, its enabler operated).
4. ``distractor_safety``: from every state the agent can reach without touching a distractor
   and from which the goal is still reachable, no single interaction with a distractor (picking
   up a decoy key, flipping a decoy switch, toggling a decoy door, stepping into a decoy gate or
   into a dead end) leaves the goal unreachable. ``deadend:N`` is the N-th (from 1) cell list of
   ``meta.generator["deadends"]``; entering it means a forward move from outside onto one of
   its cells.

Checks 3 and 4 read one forward sweep of the reachable state graph and its backward distance
table (``env.oracle.DistanceTable``); each is a breadth-first search over the sweep's edges
with some edges left out. Check 2 re-solves one edited maze per chain step.

``drop=True`` checks the maze as a protocol that offers DROP plays it (``actions: with_drop``):
every search has a DROP edge, so under the study's rulesets a decoy key taken is no longer final
(it can be put down again) and check 4 no longer fails for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from env.maze import Maze, MazeObject, maze_from_dict
from env.oracle import STATE_CAP, DistanceTable, StateSpace, distance_table, solve
from env.state import DOOR_OPEN, FORWARD, PICKUP, TOGGLE

CHECKS = ("reachable", "mechanism_necessity", "chain_ordering", "distractor_safety")


@dataclass(frozen=True)
class CheckResult:
    check: str
    passed: bool
    object_id: str | None
    reason: str


def run_checks(maze: Maze, cap: int = STATE_CAP, drop: bool = False) -> list[CheckResult]:
    """All four checks. A passing check gives one result; a failing one, one per failing object.
    ``drop``: with DROP offered."""
    out: list[CheckResult] = []
    sol = solve(maze, cap=cap, drop=drop)
    if sol.status == "solved":
        out.append(CheckResult("reachable", True, None, f"solved in {sol.optimal_actions} actions"))
    else:
        why = (f"more than {cap} states searched without reaching the goal"
               if sol.status == "undecided" else "the goal cannot be reached from the start")
        out.append(CheckResult("reachable", False, None, f"{sol.status}: {why}"))
    out.extend(check_necessity(maze, cap, drop))
    try:
        # not the per-maze cache: the generator checks thousands of candidates it mostly throws away
        table = DistanceTable(maze, cap, drop)
    except OverflowError:
        for name in CHECKS[2:]:
            out.append(CheckResult(name, False, None, f"not checked: more than {cap} reachable states"))
        return out
    out.extend(check_chain_ordering(maze, table))
    out.extend(check_distractor_safety(maze, table))
    return out


# ---- 2. mechanism necessity --------------------------------------------------------------


def _without(maze: Maze, object_id: str, as_wall: bool) -> Maze:
    """The maze with one object removed (or, for a barrier, replaced by wall); no meta."""
    d = maze.to_dict()
    d.pop("meta", None)
    gone = maze.by_id[object_id]
    d["objects"] = [o for o in d["objects"] if o["id"] != object_id]
    for o in d["objects"]:
        if o["kind"] == "switch":
            o["controls"] = [g for g in o["controls"] if g != object_id]
    if as_wall:
        x, y = gone.pos
        row = d["grid"][y]
        d["grid"][y] = row[:x] + "#" + row[x + 1:]
    return maze_from_dict(d, f"<{maze.id} without {object_id}>")


def check_necessity(maze: Maze, cap: int = STATE_CAP, drop: bool = False) -> list[CheckResult]:
    chain = maze.meta.chain if maze.meta else ()
    out = []
    for step in chain:
        enablers = [i for i in step if maze.by_id[i].kind in ("key", "switch")]
        removals = [(i, False) for i in enablers] or [(i, True) for i in step]
        for oid, as_wall in removals:
            sol = solve(_without(maze, oid, as_wall), cap=cap, cache=False, drop=drop)
            what = "turned into wall" if as_wall else "removed"
            if sol.status == "solved":
                out.append(CheckResult("mechanism_necessity", False, oid,
                                       f"with {oid} {what} the maze is still solved in {sol.optimal_actions} actions"))
            elif sol.status == "undecided":
                out.append(CheckResult("mechanism_necessity", False, oid,
                                       f"with {oid} {what} the oracle cannot decide within {cap} states"))
    if not out:
        reason = f"each of {len(chain)} chain steps is needed" if chain else "no chain to check"
        out.append(CheckResult("mechanism_necessity", True, None, reason))
    return out


# ---- state signatures over the sweep -------------------------------------------------------


class _Sweep:
    """Per-state views of a distance table's sweep: mechanism configuration and floor cell."""

    def __init__(self, maze: Maze, table: DistanceTable):
        self.maze = maze
        self.table = table
        self.space: StateSpace = table.space
        ids = table.sweep.ids
        self.m = ids // self.space.N
        self.floor = (ids % self.space.N) >> 2
        self.n = ids.size
        s = self.space
        self.kind_index: dict[str, tuple[str, int]] = {}
        groups: tuple[tuple[MazeObject, ...], ...] = (maze.keys, maze.doors, maze.switches, maze.gates)
        for group in groups:
            for i, o in enumerate(group):
                self.kind_index[o.id] = (o.kind, i)
        self.start_config = s.configs[s.start_config]

    def config_flags(self, predicate) -> np.ndarray:
        """``predicate(config)`` for every state, evaluated once per mechanism configuration."""
        flags = np.array([bool(predicate(c)) for c in self.space.configs], dtype=bool)
        return flags[self.m]

    def on_cell(self, pos) -> np.ndarray:
        return self.floor == self.space.floor_of[tuple(pos)]

    def touched(self, oid: str) -> np.ndarray:
        """States in which ``oid`` has been operated (for a gate: the agent stands in it)."""
        kind, i = self.kind_index[oid]
        s0 = self.start_config
        obj = self.maze.by_id[oid]
        if kind == "key":
            return self.config_flags(lambda c: c[0][i] != s0[0][i])
        if kind == "door":
            return self.config_flags(lambda c: c[1][i] != s0[1][i])
        if kind == "switch":
            return self.on_cell(obj.pos) | self.config_flags(lambda c: c[2][i] != s0[2][i])
        return self.on_cell(obj.pos)

    def opened(self, oid: str) -> np.ndarray:
        """States in which the barrier ``oid`` is open."""
        kind, i = self.kind_index[oid]
        if kind == "door":
            return self.config_flags(lambda c: c[1][i] == DOOR_OPEN)
        return self.config_flags(lambda c: self.maze.gates_open(c[2])[i])

    def reach(self, allowed_edges: np.ndarray, allowed_states: np.ndarray | None = None) -> np.ndarray:
        """States reachable from the start along allowed edges into allowed states."""
        keep = allowed_edges
        if allowed_states is not None:
            keep = keep & allowed_states[self.table.edge_dst]
        return self.table.forward_edges.hops(np.array([0]), keep) >= 0


# ---- 3. chain ordering ---------------------------------------------------------------------


def check_chain_ordering(maze: Maze, table: DistanceTable | None = None) -> list[CheckResult]:
    chain = maze.meta.chain if maze.meta else ()
    out = []
    if len(chain) >= 2:
        sweep = _Sweep(maze, table or distance_table(maze))
        all_edges = np.ones(sweep.table.edge_src.size, dtype=bool)
        for prev, step in zip(chain, chain[1:], strict=False):
            barriers = [i for i in prev if maze.by_id[i].kind in ("door", "gate")]
            done = np.zeros(sweep.n, dtype=bool)
            for oid in barriers or prev:
                done |= sweep.opened(oid) if barriers else sweep.touched(oid)
            before = sweep.reach(all_edges, ~done)
            for oid in step:
                early = before & sweep.touched(oid)
                if early.any():
                    where = sweep.space.decode(int(sweep.table.sweep.ids[np.flatnonzero(early)[0]]))
                    out.append(CheckResult(
                        "chain_ordering", False, oid,
                        f"{oid} can be operated before {'/'.join(barriers or prev)} "
                        f"(e.g. agent at {list(where.pos)})"))
                    break
    if not out:
        reason = f"{len(chain)} steps in order" if len(chain) >= 2 else "fewer than two chain steps"
        out.append(CheckResult("chain_ordering", True, None, reason))
    return out


# ---- 4. distractor safety ------------------------------------------------------------------


def deadend_cells(maze: Maze, entry: str) -> list[tuple[int, int]] | None:
    """The cells of a ``deadend:N`` entry (N counts from 1), or None if not recorded."""
    n = int(entry.split(":", 1)[1])
    cells = ((maze.meta.generator or {}).get("deadends") if maze.meta else None) or []
    if not 1 <= n <= len(cells):
        return None
    return [tuple(c) for c in cells[n - 1]]


def _interactions(sweep: _Sweep, entry: str) -> np.ndarray | None:
    """The sweep's edges that interact with one distractor (None: dead end not recorded)."""
    src, dst, act = sweep.table.edge_src, sweep.table.edge_dst, sweep.table.edge_act
    maze = sweep.maze
    if entry.startswith("deadend:"):
        cells = deadend_cells(maze, entry)
        if cells is None:
            return None
        inside = np.zeros(sweep.space.F + 1, dtype=bool)
        for c in cells:
            f = sweep.space.floor_of.get(c)
            if f is not None:
                inside[f] = True
        return (act == FORWARD) & inside[sweep.floor[dst]] & ~inside[sweep.floor[src]]
    kind, i = sweep.kind_index[entry]
    obj = maze.by_id[entry]
    if kind == "key":
        carried = sweep.config_flags(lambda c: c[0][i] == sweep.space.K)
        return (act == PICKUP) & carried[dst] & ~carried[src]
    if kind == "switch":
        return (act == TOGGLE) & sweep.on_cell(obj.pos)[src]
    if kind == "door":
        state = np.array([c[1][i] for c in sweep.space.configs], dtype=np.int8)[sweep.m]
        return state[src] != state[dst]
    return (act == FORWARD) & sweep.on_cell(obj.pos)[dst]


def check_distractor_safety(maze: Maze, table: DistanceTable | None = None) -> list[CheckResult]:
    entries = maze.meta.distractors if maze.meta else ()
    out = []
    if entries:
        sweep = _Sweep(maze, table or distance_table(maze))
        alive = sweep.table.dist >= 0
        src, dst = sweep.table.edge_src, sweep.table.edge_dst
        per_entry = {}
        any_interaction = np.zeros(src.size, dtype=bool)
        for entry in entries:
            edges = _interactions(sweep, entry)
            if edges is None:
                out.append(CheckResult("distractor_safety", False, entry,
                                       f"{entry}: no such dead end in meta.generator.deadends"))
                continue
            per_entry[entry] = edges
            any_interaction |= edges
        calm = sweep.reach(~any_interaction)
        for entry, edges in per_entry.items():
            bad = edges & calm[src] & alive[src] & ~alive[dst]
            if bad.any():
                e = np.flatnonzero(bad)[0]
                where = sweep.space.decode(int(sweep.table.sweep.ids[src[e]]))
                out.append(CheckResult(
                    "distractor_safety", False, entry,
                    f"one interaction with {entry} (agent at {list(where.pos)}) leaves the goal unreachable"))
    if not out:
        reason = f"{len(entries)} distractors are harmless" if entries else "no distractors"
        out.append(CheckResult("distractor_safety", True, None, reason))
    return out
