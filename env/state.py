"""The full state of a maze episode and the normative dynamics of docs/design.md §3.

``MazeState`` is the one state object: ``MazeEnv`` exposes it, the oracle searches over it,
frames and the text projection are drawn from it, so none of them can disagree.
``step`` is a pure reference implementation of the dynamics; ``MazeEnv`` executes the same
rules through Minigrid, and the tests hold the two to each other.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from env.maze import DIR_VECTORS, DOOR_STATES, Maze

ACTIONS = ("left", "right", "forward", "pickup", "toggle", "done")
LEFT, RIGHT, FORWARD, PICKUP, TOGGLE, DONE = range(6)
EVENTS = (
    "moved", "turned", "bump", "pickup", "swap", "door_unlocked", "door_opened",
    "door_closed", "switch_on", "switch_off", "noop", "goal",
)
# Minigrid's own state encoding for doors.
DOOR_OPEN, DOOR_CLOSED, DOOR_LOCKED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class MazeState:
    pos: tuple[int, int]
    dir: int
    carrying: int  # index into maze.keys, -1 when empty-handed
    keys: tuple[tuple[int, int] | None, ...]  # floor cell of each key; None while carried
    doors: tuple[int, ...]  # per door: 0 open, 1 closed, 2 locked
    switches: tuple[bool, ...]  # per switch: on?

    def front(self) -> tuple[int, int]:
        dx, dy = DIR_VECTORS[self.dir]
        return (self.pos[0] + dx, self.pos[1] + dy)

    def mechanism_key(self) -> tuple:
        """Position, carried key and mechanism state: what the stall watchdog calls novel."""
        return (self.pos, self.carrying, self.keys, self.doors, self.switches)


def initial_state(maze: Maze) -> MazeState:
    return MazeState(
        pos=maze.start.pos,
        dir=maze.start_dir,
        carrying=-1,
        keys=tuple(k.pos for k in maze.keys),
        doors=tuple(DOOR_STATES.index(d.state) for d in maze.doors),
        switches=tuple(s.on for s in maze.switches),
    )


@lru_cache(maxsize=512)
def _static_cells(maze: Maze) -> dict[tuple[int, int], tuple[str, int]]:
    cells: dict[tuple[int, int], tuple[str, int]] = {}
    for i, d in enumerate(maze.doors):
        cells[d.pos] = ("door", i)
    for i, s in enumerate(maze.switches):
        cells[s.pos] = ("switch", i)
    for i, g in enumerate(maze.gates):
        cells[g.pos] = ("gate", i)
    return cells


def key_at(state: MazeState, cell: tuple[int, int]) -> int:
    for i, p in enumerate(state.keys):
        if p == cell:
            return i
    return -1


def passable(maze: Maze, state: MazeState, cell: tuple[int, int]) -> bool:
    """Can the agent stand on ``cell`` in ``state``? (floor, goal, switch, open door, open gate)"""
    x, y = cell
    if maze.walls[x, y] or key_at(state, cell) >= 0:
        return False
    obj = _static_cells(maze).get(cell)
    if obj is None or obj[0] == "switch":
        return True
    if obj[0] == "door":
        return state.doors[obj[1]] == DOOR_OPEN
    return maze.gates_open(state.switches)[obj[1]]


def step(maze: Maze, s: MazeState, action: int) -> tuple[MazeState, str]:
    """Apply one action: the reference dynamics of docs/design.md §3."""
    if action == LEFT:
        return replace(s, dir=(s.dir - 1) % 4), "turned"
    if action == RIGHT:
        return replace(s, dir=(s.dir + 1) % 4), "turned"
    if action == DONE:
        return s, "noop"
    front = s.front()
    if action == FORWARD:
        if not passable(maze, s, front):
            return s, "bump"
        return replace(s, pos=front), ("goal" if front == maze.goal else "moved")
    if action == PICKUP:
        k = key_at(s, front)
        if k < 0:
            return s, "noop"
        keys = list(s.keys)
        keys[k] = None
        if s.carrying >= 0:
            keys[s.carrying] = front
            return replace(s, carrying=k, keys=tuple(keys)), "swap"
        return replace(s, carrying=k, keys=tuple(keys)), "pickup"
    if action == TOGGLE:
        cells = _static_cells(maze)
        under = cells.get(s.pos)
        if under is not None and under[0] == "switch":
            sw = list(s.switches)
            sw[under[1]] = not sw[under[1]]
            return replace(s, switches=tuple(sw)), ("switch_on" if sw[under[1]] else "switch_off")
        obj = cells.get(front)
        if obj is not None and obj[0] == "door":
            i = obj[1]
            doors = list(s.doors)
            if doors[i] == DOOR_LOCKED:
                if s.carrying >= 0 and maze.keys[s.carrying].color == maze.doors[i].color:
                    doors[i] = DOOR_OPEN
                    return replace(s, doors=tuple(doors)), "door_unlocked"
                return s, "noop"
            if doors[i] == DOOR_CLOSED:
                doors[i] = DOOR_OPEN
                return replace(s, doors=tuple(doors)), "door_opened"
            doors[i] = DOOR_CLOSED
            return replace(s, doors=tuple(doors)), "door_closed"
        return s, "noop"
    raise ValueError(f"action must be 0..5, got {action!r}")
