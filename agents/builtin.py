"""Built-in agents (models named ``builtin/<name>``): reference points that need no model.

- ``oracle``: follows a shortest plan from the current state, so it solves every maze in
  exactly the optimal number of actions.
- ``random``: uniform over the actions the protocol offers (six, or seven with DROP), seeded.
- ``explorer``: knows nothing of the mechanics. It sees the map the way a model sees a frame
  (walls, the goal, where objects are drawn) and learns everything else by trying: it walks
  toward cells it has not stood on, tries ``pickup`` and ``toggle`` on each object it meets
  (again whenever the world has changed since it last tried), tries both while standing on an
  object, remembers the cells it bumped into, and never repeats an interaction that changed
  the world until it has nothing else left to try. When an interaction puts the world back
  the way it was before (it undid an earlier change), it repeats it at once to restore it.
  It never reads the maze's ruleset: whether keys can be walked onto and picked up from
  underfoot (multinet-r1) or only from in front (minigrid) it finds out by trying. A move that
  ended somewhere other than the cell in front marks that cell as visited (a teleporter), and
  when it also put the world back as it was (a kill cell), as a trap it never walks into again.
  Where the protocol offers DROP: when nothing new is within reach while it carries a key, it
  puts the key down on the next cell it stands on where nothing is drawn, and leaves it lying
  there until it next starts over.
"""

from __future__ import annotations

import random
from collections import deque

from agents.model import KNOWN_BUILTINS
from agents.types import Decision, ResumeMismatch, Turn
from env.errors import BadInput
from env.maze import DIR_VECTORS, Maze
from env.oracle import distance_table
from env.state import ACTIONS, DONE, DROP, FORWARD, LEFT, PICKUP, RIGHT, TOGGLE, MazeState, step


class _Builtin:
    """Built-in agents are deterministic in their seed: a recorded turn is taken back by playing
    it again (which advances a random agent's generator and an explorer's memory) and checking
    that the same action comes out."""

    async def act(self, turn: Turn) -> Decision:
        raise NotImplementedError

    async def resume(self, turn: Turn, decision: Decision) -> None:
        again = await self.act(turn)
        if again.action != decision.action:
            raise ResumeMismatch(f"step {turn.step}: the built-in agent chose {again.action}, the trace "
                                 f"recorded {decision.action}")

    async def aclose(self) -> None:
        return None


class OracleAgent(_Builtin):
    """Exactly optimal: each action lowers the action distance to the goal by one."""

    async def act(self, turn: Turn) -> Decision:
        return Decision(action=self.choose(turn.maze, turn.state, turn.protocol.drop))

    @staticmethod
    def choose(maze: Maze, state: MazeState, drop: bool = False) -> int:
        """``drop``: DROP is offered, and the distances are those of a search with its edge."""
        table = distance_table(maze, drop=drop)
        d = table.action_distance(state)
        if d is None or d == 0:
            return DONE  # nothing left to do, or the goal can no longer be reached
        for a in (FORWARD, LEFT, RIGHT, PICKUP, TOGGLE, *((DROP,) if drop else ())):
            nxt, _ = step(maze, state, a)
            if table.action_distance(nxt) == d - 1:
                return a
        raise AssertionError("a state at distance d has a successor at distance d - 1")


class RandomAgent(_Builtin):
    def __init__(self, seed: int = 0):
        self._rng = random.Random(seed)

    async def act(self, turn: Turn) -> Decision:
        return Decision(action=self._rng.randrange(len(turn.protocol.offered)))


Cell = tuple[int, int]


class ExplorerAgent(_Builtin):
    """Knowledge-free exploration: see the module docstring for the rules it follows."""

    INTERACTIONS = (PICKUP, TOGGLE)

    def __init__(self, seed: int = 0):
        self._rng = random.Random(seed)
        self._seen_steps = 0
        self.visited: set[Cell] = set()
        self.blocked: set[Cell] = set()  # bumped into since the world last changed
        self.traps: set[Cell] = set()  # walking in undid the world: never again
        self.tried: set[tuple[str, Cell, int]] = set()  # no effect since the world last changed
        self.effective: set[tuple[str, Cell, int]] = set()  # changed the world: not repeated
        self.changes: list[tuple[int, str, Cell, str]] = []  # (step, where, cell, action)
        self._pending: tuple[str, Cell, int] | None = None
        self._worlds: set[tuple] = set()
        self._redo: int | None = None
        self._put_down = False  # DROP offered and stuck with a key: drop it on the next plain cell
        # an untried object this many steps further away still comes before an unvisited cell
        self.object_bonus = 4

    # ---- what the agent can see in a frame -------------------------------------------------
    @staticmethod
    def _world(state: MazeState) -> tuple:
        """Everything drawn except the agent itself: a change here is a change of the world."""
        return (state.carrying, state.keys, state.doors, state.switches)

    @staticmethod
    def _object_cells(maze: Maze, state: MazeState) -> set[Cell]:
        cells: set[Cell] = {o.pos for o in maze.objects if o.kind != "key"}
        cells |= {p for p in state.keys if p is not None}
        return cells

    # ---- memory ---------------------------------------------------------------------------
    def _learn(self, turn: Turn) -> None:
        for past in turn.history[self._seen_steps:]:
            before, after = past.state_before, past.state_after
            self._worlds.add(self._world(before))
            if self._world(before) != self._world(after):
                self.blocked.clear()
                self.tried.clear()
                if self._pending is not None:
                    self.effective.add(self._pending)
                    where, cell, action = self._pending
                    self.changes.append((past.step, where, cell, ACTIONS[action]))
                    if self._world(after) in self._worlds and past.action not in (None, DROP):
                        self._redo = past.action
                    if past.action == DROP:  # the key it put down stays there until it starts over
                        cell = next(p for p, q in zip(after.keys, before.keys, strict=True) if q is None and p)
                        self.effective |= {("on", cell, PICKUP), ("front", cell, PICKUP)}
            elif self._pending is not None:
                self.tried.add(self._pending)
            if past.action == FORWARD and after.pos == before.pos:
                self.blocked.add(before.front())
            elif past.action == FORWARD and after.pos != before.front():
                # entered, but it sent the agent elsewhere; undoing the world too, it is a trap
                (self.traps if self._world(before) != self._world(after) else self.visited).add(before.front())
            self.visited.add(after.pos)
            self._pending = None
        self._seen_steps = len(turn.history)

    def _untried(self, where: str, cell: Cell) -> list[int]:
        return [a for a in self.INTERACTIONS
                if (where, cell, a) not in self.tried and (where, cell, a) not in self.effective]

    # ---- choice ---------------------------------------------------------------------------
    async def act(self, turn: Turn) -> Decision:
        return Decision(action=self.choose(turn))

    def choose(self, turn: Turn) -> int:
        maze, state = turn.maze, turn.state
        if not self.visited:
            self.visited.add(state.pos)
        self._learn(turn)
        if self._redo is not None:
            redo, self._redo = self._redo, None
            return redo
        objects = self._object_cells(maze, state)
        here, front = state.pos, state.front()
        if self._put_down and state.carrying >= 0 and here not in objects:
            self._put_down = False
            self._pending = ("on", here, DROP)
            return DROP
        for where, cell in (("on", here), ("front", front)):
            if cell in objects:
                untried = self._untried(where, cell)
                if untried:
                    self._pending = (where, cell, untried[0])
                    return untried[0]
        action = self._walk(maze, state, objects)
        if action is None and turn.protocol.drop and state.carrying >= 0:
            self._put_down = True  # nothing new within reach: the key in hand may be what blocks
        if action is None:
            # nothing new within reach: forget what was learnt and start over
            self.blocked.clear()
            self.tried.clear()
            self.effective.clear()
            self.visited = {state.pos}
            action = self._walk(maze, state, objects)
        if action is None:
            action = self._rng.choice((LEFT, RIGHT, FORWARD))
        return action

    def _walk(self, maze: Maze, state: MazeState, objects: set[Cell]) -> int | None:
        """First action of a shortest walk to the goal if it looks reachable, else toward the
        best place where something is new: an untried object (preferred) or an unvisited cell."""
        goal = maze.goal
        start = (state.pos, state.dir)
        first: dict[tuple[Cell, int], int | None] = {start: None}
        cost = {start: 0}
        order = deque([start])
        best: tuple[int, int | None] | None = None  # (score, first action)
        while order:
            node = order.popleft()
            pos, d = node
            if pos == goal:
                return first[node]
            if node != start and (best is None or cost[node] - self.object_bonus < best[0]):
                front = (pos[0] + DIR_VECTORS[d][0], pos[1] + DIR_VECTORS[d][1])
                if (front in objects and self._untried("front", front)) or (pos in objects and self._untried("on", pos)):
                    score = cost[node] - self.object_bonus
                elif pos not in self.visited:
                    score = cost[node]
                else:
                    score = None
                if score is not None and (best is None or score < best[0]):
                    best = (score, first[node])
            for a, nxt in self._moves(maze, pos, d):
                if nxt not in first:
                    first[nxt] = a if first[node] is None else first[node]
                    cost[nxt] = cost[node] + 1
                    order.append(nxt)
        return best[1] if best else None

    def _moves(self, maze: Maze, pos: Cell, d: int):
        yield LEFT, (pos, (d - 1) % 4)
        yield RIGHT, (pos, (d + 1) % 4)
        nxt = (pos[0] + DIR_VECTORS[d][0], pos[1] + DIR_VECTORS[d][1])
        if 0 <= nxt[0] < maze.width and 0 <= nxt[1] < maze.height \
                and not maze.walls[nxt] and nxt not in self.blocked and nxt not in self.traps:
            yield FORWARD, (nxt, d)


def make_builtin(name: str, seed: int = 0):
    if name == "oracle":
        return OracleAgent()
    if name == "random":
        return RandomAgent(seed)
    if name == "explorer":
        return ExplorerAgent(seed)
    raise BadInput(f"builtin/{name}", "model", f"unknown built-in agent (known: {', '.join(KNOWN_BUILTINS)})")
