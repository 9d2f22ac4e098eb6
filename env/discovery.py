"""Discovery timelines: when an episode first met each mechanism, tried it, operated it and used
it (docs/report.md, "Discovery").

For every key, door, switch and gate of a maze, four steps of an episode (1-based; 0 for the
start; None when the episode never got there):

- ``contact``: the agent stood on the object's cell or next to it, after the step (the start
  counts as step 0). "Next to" is one of the **four orthogonal neighbours** (north, south, east,
  west: the cells the agent can face from where it stands); a diagonal neighbour is not contact;
- ``attempt``: the first ``pickup`` or ``toggle`` taken while standing on the object's cell or
  facing it, whatever it did. For a gate that is a toggle facing it: a toggle never acts on a
  gate itself, but one made while standing on a switch flips that switch, and when the switch
  controls the gate that toggle opens it (its attempt and success are then the same step; the
  oracle opens gates that way). A toggle facing a gate from anywhere else does nothing;
- ``success``: the object was first operated: a key taken, a door opened, a switch flipped, a gate
  opened (by any of its switches, wherever the agent stood: a gate's success can come before its
  contact and its attempt);
- ``use``: its effect was first used: the agent walked onto the door's or the gate's cell (it can
  only while it is open); for a key, once taken, onto the cell of a door of its colour that started
  locked; for a switch, onto the cell of a gate it controls while it is on.

The later tiles have timelines too, in multinet-pr57 mazes (R1's mazes keep the four kinds),
read off the step each ``Move`` replays (``env.state.step`` from its ``before``): ``contact`` on
or next to one of its cells, and ``attempt``, ``success`` and ``use`` as its module judges them
for each forward (``Mechanic.stages``, env.mechanics; docs/report.md lists them).

The definitions are gridbench's: the study describes discovery in words only (its switch-gate
finding). They depend only on the states, so they hold under every ruleset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from env.maze import (
    MULTINET_PR57,
    STUDY_KINDS,
    KeyObject,
    Maze,
    MazeObject,
    SwitchObject,
)
from env.mechanics import MECHANICS, covered_cells, of_kind
from env.state import FORWARD, PICKUP, TOGGLE, MazeState, ahead, step

STAGES = ("contact", "attempt", "success", "use")
# the kinds whose discovery is followed, as each mechanic declares it (env.mechanics), in its order
KINDS = tuple(k for m in MECHANICS if m.discovered for k in m.kinds)
LATER_KINDS = tuple(k for k in KINDS if k in STUDY_KINDS)  # the study's later tiles, read off the replayed step


@dataclass(frozen=True)
class Timeline:
    """The stages of one object in one episode."""

    object_id: str
    kind: str
    contact: int | None = None
    attempt: int | None = None
    success: int | None = None
    use: int | None = None


@dataclass(frozen=True)
class Move:
    """One step as the timeline reads it."""

    step: int
    action: int | None
    before: MazeState
    after: MazeState


def _near(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """The same cell or one of its four orthogonal neighbours (Manhattan distance at most 1)."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1]) <= 1


def timelines(maze: Maze, start: MazeState, moves: Sequence[Move]) -> list[Timeline]:
    """Every key, door, switch and gate of ``maze`` with its four stages in this episode."""
    out = []
    gate_index = {g.id: i for i, g in enumerate(maze.gates)}
    objects: list[tuple[str, int, MazeObject]] = [
        *(("key", i, o) for i, o in enumerate(maze.keys)), *(("door", i, o) for i, o in enumerate(maze.doors)),
        *(("switch", i, o) for i, o in enumerate(maze.switches)), *(("gate", i, o) for i, o in enumerate(maze.gates))]
    for kind, index, obj in objects:
        stages: dict[str, int | None] = dict.fromkeys(STAGES)
        if _near(start.pos, obj.pos):
            stages["contact"] = 0
        for m in moves:
            here, front = m.after.pos, m.before.front()
            if stages["contact"] is None and _near(here, obj.pos):
                stages["contact"] = m.step
            if stages["attempt"] is None and m.action in (PICKUP, TOGGLE) and obj.pos in (m.before.pos, front):
                stages["attempt"] = m.step
            if stages["success"] is None and _operated(maze, kind, index, m):
                stages["success"] = m.step
            if stages["use"] is None and _used(maze, index, obj, m, gate_index) and (
                    kind != "key" or stages["success"] is not None):
                stages["use"] = m.step
        out.append(Timeline(obj.id, kind, **stages))
    later = [o for o in maze.objects if o.kind in LATER_KINDS] if maze.ruleset == MULTINET_PR57 else []
    if later:
        fired = [(m, _fired(maze, m)) for m in moves]
        out += [_later_timeline(maze, o, start, fired) for o in later]
    return out


def _fired(maze: Maze, m: Move) -> tuple[tuple[int, int] | None, str | None]:
    """(the cell a forward went into, before a tile sent it on; the step's event) of a forward, else
    (None, None): what the later tiles' stages read."""
    if m.action != FORWARD or m.before.frozen:
        return None, None
    return ahead(maze, m.before), step(maze, m.before, FORWARD)[1]


def _later_timeline(maze: Maze, obj: MazeObject, start: MazeState,
                    fired: list[tuple[Move, tuple[tuple[int, int] | None, str | None]]]) -> Timeline:
    cells = covered_cells(obj)
    stages: dict[str, int | None] = dict.fromkeys(STAGES)
    if any(_near(start.pos, c) for c in cells):
        stages["contact"] = 0
    judge = of_kind(obj.kind).stages  # each later tile says when it was tried, worked and used
    assert judge is not None, obj.kind
    seen: dict[str, Any] = {}
    for m, (into, event) in fired:
        if stages["contact"] is None and any(_near(m.after.pos, c) for c in cells):
            stages["contact"] = m.step
        if into is None:
            continue
        tried, worked, used = judge(maze, obj, m, into, event, seen)
        if stages["attempt"] is None and tried:
            stages["attempt"] = m.step
        if stages["success"] is None and worked:
            stages["success"] = m.step
        if stages["use"] is None and used:
            stages["use"] = m.step
    return Timeline(obj.id, obj.kind, **stages)


def _operated(maze: Maze, kind: str, index: int, m: Move) -> bool:
    b, a = m.before, m.after
    if kind == "key":
        return a.carrying == index and b.carrying != index
    if kind == "door":
        return a.doors[index] == 0 and b.doors[index] != 0
    if kind == "switch":
        return a.switches[index] != b.switches[index]
    return maze.gates_open(a.switches)[index] and not maze.gates_open(b.switches)[index]


def _used(maze: Maze, index: int, obj: MazeObject, m: Move, gate_index: dict[str, int]) -> bool:
    a = m.after
    if a.pos == m.before.pos:
        return False
    if isinstance(obj, KeyObject):
        # onto a door of its colour that started locked (the agent is on it: it is open)
        return any(d.pos == a.pos and d.color == obj.color and d.state == "locked" for d in maze.doors)
    if isinstance(obj, SwitchObject):
        return a.switches[index] and any(maze.gates[gate_index[g]].pos == a.pos for g in obj.controls)
    return a.pos == obj.pos
