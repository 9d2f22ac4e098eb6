"""The study's later rulebook (portals, death tiles, ice, turntables on top of R1), written here from
the rules as issue 33 states them and nothing of ``env``'s dynamics or oracle: the tests hold
``gridbench maze solve`` to it. It reads the maze's objects only.

- a move enters the cell ahead if it is not wall, block, hazard, a door not yet opened or a closed
  gate (keys never block); a move into one end of a portal lands on the other (a one-way portal
  sends from its first end only); a move into a death tile puts the whole maze back at its start;
  a move onto an ice tile swallows the next ``freeze_steps`` actions, each a step;
- on a turntable a forward goes where its arrow points, not where the agent faces; after every
  step every arrow turns a quarter clockwise; a death puts the arrows back too;
- pickup takes the key underfoot with empty hands; toggle flips the switch underfoot, else unlocks
  the door ahead with the matching key (used up when the maze says so);
- a step that changes nothing but the arrows (a bump, a toggle with nothing to act on) is never a
  move of a shortest plan (the R1 planner's convention).

A state is (cell, heading, held key, keys on the floor, switches on, doors open, ice countdown,
arrow phase). The portal latch is left out: only a move into a portal sends, and a move never
enters the cell it starts from, so the latch never changes what a plan can do.
"""

from __future__ import annotations

from collections import deque

from env.maze import Maze

HEADINGS = ((1, 0), (0, 1), (-1, 0), (0, -1))  # east, south, west, north
NAMES = ("east", "south", "west", "north")


class LaterRulebook:
    def __init__(self, maze: Maze, death_fails: bool = False):
        self.maze = maze
        self.death_fails = death_fails
        self.open_cells = {(x, y) for y, row in enumerate(maze.grid) for x, ch in enumerate(row) if ch == "."}
        objs = maze.objects
        self.solid = {o.pos for o in objs if o.kind in ("hazard", "block")}
        self.doors = {o.pos: o for o in objs if o.kind == "door"}
        self.gates = {o.pos: o for o in objs if o.kind == "gate"}
        self.switches = {o.pos: o for o in objs if o.kind == "switch"}
        self.key_color = {o.id: o.color for o in objs if o.kind == "key"}
        self.deaths = {o.pos for o in objs if o.kind == "kill"}
        self.ice = {o.pos for o in objs if o.kind == "frozen"}
        self.arrows = {o.pos: NAMES.index(o.dir) for o in objs if o.kind == "turntable"}
        self.portal = {}
        for o in objs:
            if o.kind == "teleporter":
                self.portal[o.pos] = o.to
                if o.bidirectional:
                    self.portal[o.to] = o.pos
        self.freeze = maze.rulebook.freeze_steps
        self.consume = maze.rulebook.key_consumption

    def start(self):
        keys = frozenset((o.id, o.pos) for o in self.maze.objects if o.kind == "key")
        on = frozenset(o.id for o in self.maze.objects if o.kind == "switch" and o.on)
        opened = frozenset(o.id for o in self.maze.objects if o.kind == "door" and o.state == "open")
        return (self.maze.start.pos, NAMES.index(self.maze.start.dir), None, keys, on, opened, 0, 0)

    def gate_open(self, gate, on) -> bool:
        return gate.open or any(s.id in on and gate.id in s.controls for s in self.switches.values())

    def act(self, s, action):
        """The state after ``action`` (0 left, 1 right, 2 forward, 3 pickup, 4 toggle), before
        the arrows turn; None for a death under the failing reading."""
        cell, heading, held, keys, on, opened, ice, phase = s
        if ice:
            return (cell, heading, held, keys, on, opened, ice - 1, phase)
        if action in (0, 1):
            return (cell, (heading + (1 if action else -1)) % 4, held, keys, on, opened, 0, phase)
        if action == 2:
            way = (self.arrows[cell] + phase) % 4 if cell in self.arrows else heading
            dx, dy = HEADINGS[way]
            ahead = (cell[0] + dx, cell[1] + dy)
            if ahead not in self.open_cells or ahead in self.solid:
                return s
            if ahead in self.doors and self.doors[ahead].id not in opened:
                return s
            if ahead in self.gates and not self.gate_open(self.gates[ahead], on):
                return s
            land = self.portal.get(ahead, ahead)
            if land in self.deaths:
                return None if self.death_fails else "start"
            return (land, heading, held, keys, on, opened, self.freeze if land in self.ice else 0, phase)
        if action == 3:
            here = [k for k in keys if k[1] == cell]
            if held is not None or not here:
                return s
            return (cell, heading, here[0][0], keys - {here[0]}, on, opened, 0, phase)
        sw = self.switches.get(cell)
        if sw is not None:
            if sw.switch_type != "toggle":
                raise NotImplementedError("the study's later mazes have toggle switches only")
            return (cell, heading, held, keys, on ^ {sw.id}, opened, 0, phase)
        dx, dy = HEADINGS[heading]
        door = self.doors.get((cell[0] + dx, cell[1] + dy))
        if door is None or door.id in opened or held is None or self.key_color[held] != door.color:
            return s
        return (cell, heading, None if self.consume else held, keys, on, opened | {door.id}, 0, phase)

    def step(self, s, action):
        after = self.act(s, action)
        if after is None or after == "start":
            return after
        if after[:7] == s[:7]:
            return s  # only the arrows would turn: not a move of a plan
        return (*after[:7], (after[7] + 1) % 4 if self.arrows else 0)

    def shortest(self, cap: int = 2_000_000) -> int | None:
        start = self.start()
        seen = {start: 0}
        queue = deque([start])
        while queue:
            s = queue.popleft()
            for action in range(5):
                n = self.step(s, action)
                if n is None or n == s:
                    continue
                if n == "start":
                    n = start
                if n in seen:
                    continue
                seen[n] = seen[s] + 1
                if n[0] == self.maze.goal:
                    return seen[n]
                if len(seen) > cap:
                    raise OverflowError(self.maze.id)
                queue.append(n)
        return None
