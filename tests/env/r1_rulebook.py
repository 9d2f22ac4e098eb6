"""The MultiNet study's R1 rulebook, written here from its restatement (the study's RULES.md,
sections 2-7) and nothing of ``env``'s dynamics: the tests hold ``env.state.step`` and the oracle
to it. A state is the rulebook's minimal one: (cell, heading, key in hand, keys on the floor,
switches on, one-shot switches used, doors open, freeze countdown)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace

from env.maze import Maze

HEADINGS = ((1, 0), (0, 1), (-1, 0), (0, -1))  # east, south, west, north
LEFT, RIGHT, FORWARD, PICKUP, TOGGLE = 0, 1, 2, 3, 5  # Minigrid's action ids, as the rulebook numbers them


@dataclass(frozen=True)
class R1State:
    cell: tuple[int, int]
    heading: int
    held: str | None
    floor_keys: frozenset[tuple[str, tuple[int, int]]]
    on: frozenset[str]
    used: frozenset[str]
    open_doors: frozenset[str]
    freeze: int = 0


class Rulebook:
    def __init__(self, maze: Maze):
        self.maze = maze
        self.walls = {(x, y) for x in range(maze.width) for y in range(maze.height) if maze.grid[y][x] == "#"}
        objs = maze.objects
        self.key_color = {o.id: o.color for o in objs if o.kind == "key"}
        self.doors = {o.pos: (o.id, o.color) for o in objs if o.kind == "door"}
        self.switches = {o.pos: o for o in objs if o.kind == "switch"}
        self.gates = {o.pos: o for o in objs if o.kind == "gate"}
        self.solid = {o.pos for o in objs if o.kind in ("hazard", "block")}
        self.kills = {o.pos for o in objs if o.kind == "kill"}
        self.frozen = {o.pos for o in objs if o.kind == "frozen"}
        self.jump = {}
        for o in objs:
            if o.kind == "teleporter":
                self.jump[o.pos] = o.to
                if o.bidirectional:
                    self.jump[o.to] = o.pos
        rules = maze.rules
        self.consume = True if rules is None else rules.key_consumption
        self.freeze_steps = 5 if rules is None else rules.freeze_steps

    def start(self) -> R1State:
        on = frozenset(s.id for s in self.switches.values() if s.on)
        return R1State(self.maze.start.pos, 0, None, frozenset((o.id, o.pos) for o in self.maze.objects if o.kind == "key"),
                       on, frozenset(s.id for s in self.switches.values() if s.on and s.switch_type == "one_shot"),
                       frozenset(d.id for d in self.maze.objects if d.kind == "door" and d.state != "locked"))

    def gate_open(self, gate, on: frozenset[str]) -> bool:
        return gate.open or any(gate.id in s.controls and s.id in on for s in self.switches.values())

    def successors(self, s: R1State) -> Iterator[tuple[int, R1State]]:
        """The legal transitions, in the rulebook's order; every other action is a no-op."""
        if s.freeze > 0:
            yield LEFT, replace(s, freeze=s.freeze - 1)
            return
        yield LEFT, replace(s, heading=(s.heading - 1) % 4)
        yield RIGHT, replace(s, heading=(s.heading + 1) % 4)
        dx, dy = HEADINGS[s.heading]
        front = (s.cell[0] + dx, s.cell[1] + dy)
        here = [k for k, c in s.floor_keys if c == s.cell]
        if here and s.held is None:
            yield PICKUP, replace(s, held=here[0], floor_keys=frozenset(kc for kc in s.floor_keys if kc[0] != here[0]))
        sw = self.switches.get(s.cell)
        if sw is not None:
            if sw.switch_type == "toggle":
                yield TOGGLE, replace(s, on=s.on ^ {sw.id})
            elif sw.switch_type == "one_shot" and sw.id not in s.used:
                yield TOGGLE, replace(s, on=s.on | {sw.id}, used=s.used | {sw.id})
        else:
            door = self.doors.get(front)
            if door and door[0] not in s.open_doors and s.held is not None and self.key_color[s.held] == door[1]:
                yield TOGGLE, replace(s, open_doors=s.open_doors | {door[0]}, held=None if self.consume else s.held)
        blocked = (front in self.walls or front in self.solid
                   or (front in self.doors and self.doors[front][0] not in s.open_doors)
                   or (front in self.gates and not self.gate_open(self.gates[front], s.on)))
        if not blocked:
            land = self.jump.get(front, front)
            if land in self.kills:
                yield FORWARD, self.start()
                return
            on = frozenset(i for i in s.on if self.switches_by_id(i).switch_type != "hold")
            on |= {sw_.id for c, sw_ in self.switches.items() if sw_.switch_type == "hold" and c == land}
            yield FORWARD, replace(s, cell=land, on=on, freeze=self.freeze_steps if land in self.frozen else 0)

    def switches_by_id(self, sid: str):
        return next(s for s in self.switches.values() if s.id == sid)

    def apply(self, s: R1State, action: int) -> R1State:
        for a, n in self.successors(s):
            if a == action:
                return n
        if s.freeze > 0:  # frozen: every action, of any kind, counts down
            return replace(s, freeze=s.freeze - 1)
        return s

    def shortest(self) -> tuple[int | None, int]:
        """(actions of the first shortest plan, distinct states generated when the goal was first
        generated, the start included): the study's optimal count and its ``states_explored``."""
        start = self.start()
        if start.cell == self.maze.goal:
            return 0, 1
        depth = {start: 0}
        queue = deque([start])
        while queue:
            s = queue.popleft()
            for _, n in self.successors(s):
                if n in depth:
                    continue
                depth[n] = depth[s] + 1
                if n.cell == self.maze.goal:
                    return depth[n], len(depth)
                queue.append(n)
        return None, len(depth)


def project(maze: Maze, state) -> R1State:
    """A gridbench ``MazeState`` of a multinet-r1 maze in the rulebook's terms."""
    switches = maze.switches
    return R1State(
        state.pos, state.dir, maze.keys[state.carrying].id if state.carrying >= 0 else None,
        frozenset((k.id, p) for k, p in zip(maze.keys, state.keys, strict=True) if p is not None),
        frozenset(s.id for s, on in zip(switches, state.switches, strict=True) if on),
        frozenset(s.id for s, on in zip(switches, state.switches, strict=True) if on and s.switch_type == "one_shot"),
        frozenset(d.id for d, st in zip(maze.doors, state.doors, strict=True) if st == 0),
        state.frozen,
    )
