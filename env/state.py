"""The full state of a maze episode and the normative dynamics of docs/design.md §3.

``MazeState`` is the one state object: ``MazeEnv`` exposes it, the oracle searches over it,
frames and the text projection are drawn from it, so none of them can disagree.
``step`` is a pure reference implementation of the dynamics, one rulebook per ruleset
(``minigrid``: gridbench's own; ``multinet-r1``: the MultiNet study's R1 rulebook;
``multinet-pr57``: R1 with the study's later tiles, turntables among them). ``MazeEnv``
executes the minigrid rules through Minigrid, and the tests hold the two to each other.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from env.maze import DIR_VECTORS, DIRECTIONS, DOOR_STATES, MULTINET_PR57, STUDY_KINDS, Maze
from env.mechanics import of_kind

# The six actions every protocol offers, then DROP, which only a protocol with ``actions:
# with_drop`` offers (the study's revised harness; agents.protocol): it comes last so that the six
# keep their indices, and so every recorded episode its actions.
ACTIONS = ("left", "right", "forward", "pickup", "toggle", "done", "drop")
LEFT, RIGHT, FORWARD, PICKUP, TOGGLE, DONE, DROP = range(7)
SIX_ACTIONS = ACTIONS[:DROP]
EVENTS = (
    "moved", "turned", "bump", "pickup", "swap", "door_unlocked", "door_opened",
    "door_closed", "switch_on", "switch_off", "noop", "goal",
    # a carried key put down (DROP; a DROP that cannot put it down is a noop)
    "drop",
    # multinet-r1 only: a move that landed elsewhere, a move that put everything back as it was at
    # the start, an action swallowed while frozen
    "teleported", "reset", "frozen",
    # multinet-pr57 only: a move into a kill cell (the maze back at its start, or under
    # rules.death "fail" the episode over), a move onto a frozen tile, a forward that a turntable's
    # arrow carried (the study's mechanism labels; "reset" is R1's name for "died")
    "died", "froze", "rode",
)
# Minigrid's own state encoding for doors.
DOOR_OPEN, DOOR_CLOSED, DOOR_LOCKED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class MazeState:
    pos: tuple[int, int]
    dir: int
    carrying: int  # index into maze.keys, -1 when empty-handed
    # floor cell of each key; None while carried, and (multinet-r1) once used up by a door
    keys: tuple[tuple[int, int] | None, ...]
    doors: tuple[int, ...]  # per door: 0 open, 1 closed, 2 locked
    switches: tuple[bool, ...]  # per switch: on? (a one-shot switch that is on has been used)
    frozen: int = 0  # the study's rulesets: actions still swallowed by a frozen tile
    # multinet-pr57: steps taken mod 4 since the start or the last death; turntable t's arrow points
    # (t.dir + phase) % 4, since every arrow turns one step clockwise after every step
    phase: int = 0
    # multinet-pr57: the agent stands on the end a portal sent it to (it does not send again until
    # the agent has left it)
    latched: bool = False

    def front(self) -> tuple[int, int]:
        dx, dy = DIR_VECTORS[self.dir]
        return (self.pos[0] + dx, self.pos[1] + dy)

    def mechanism_key(self) -> tuple:
        """Position, carried key and mechanism state: what the stall watchdog calls novel."""
        return (self.pos, self.carrying, self.keys, self.doors, self.switches, self.frozen, self.phase,
                self.latched)


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
    return _barrier_open(maze, state, cell)


def _barrier_open(maze: Maze, state: MazeState, cell: tuple[int, int]) -> bool:
    """No door or gate on ``cell`` holds the agent back."""
    obj = _static_cells(maze).get(cell)
    if obj is None or obj[0] == "switch":
        return True
    if obj[0] == "door":
        return state.doors[obj[1]] == DOOR_OPEN
    return maze.gates_open(state.switches)[obj[1]]


def _turn_or_wait(s: MazeState, action: int) -> tuple[MazeState, str] | None:
    """Turning and ``done``, alike in both rulebooks; None for the other actions."""
    if action == LEFT:
        return replace(s, dir=(s.dir - 1) % 4), "turned"
    if action == RIGHT:
        return replace(s, dir=(s.dir + 1) % 4), "turned"
    if action == DONE:
        return s, "noop"
    return None


def _dropped(s: MazeState, cell: tuple[int, int]) -> tuple[MazeState, str]:
    """The carried key put down on ``cell``."""
    keys = list(s.keys)
    keys[s.carrying] = cell
    return replace(s, carrying=-1, keys=tuple(keys)), "drop"


def drop_cell_free(maze: Maze, s: MazeState, cell: tuple[int, int]) -> bool:
    """May a key be put down on ``cell``? Only on plain empty floor: no wall, no key, not the goal,
    no door, switch or gate, and none of the study's tiles (Minigrid's drop needs a cell with no
    object; the study's rulebook refuses doors, switches, gates, the goal, portals, death tiles,
    ice, hazards and blocks; a turntable is refused too, where the study's rule is silent)."""
    x, y = cell
    if maze.walls[x, y] or cell == maze.goal or key_at(s, cell) >= 0 or cell in _static_cells(maze):
        return False
    return cell not in _tile_cells(maze)


@lru_cache(maxsize=512)
def _tile_cells(maze: Maze) -> frozenset[tuple[int, int]]:
    """The cells of the study's tiles (portals, hazards, blocks, death tiles, ice, turntables)."""
    return frozenset().union(*(maze.cells_of(k) for k in STUDY_KINDS))


def step(maze: Maze, s: MazeState, action: int) -> tuple[MazeState, str]:
    """Apply one action: the reference dynamics of docs/design.md §3, under the maze's ruleset."""
    if maze.study_rules:
        return _step_study(maze, s, action)
    in_place = _turn_or_wait(s, action)
    if in_place is not None:
        return in_place
    front = s.front()
    if action == DROP:  # Minigrid's drop: onto the empty cell in front
        if s.carrying < 0 or not drop_cell_free(maze, s, front):
            return s, "noop"
        return _dropped(s, front)
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
    raise ValueError(f"action must be 0..{DROP}, got {action!r}")


# ---- multinet-r1 ------------------------------------------------------------------------------

@lru_cache(maxsize=512)
def _r1_cells(maze: Maze) -> tuple[frozenset, frozenset, frozenset, dict]:
    """Cells that can never be entered, kill cells, frozen tiles, and where each teleporter
    entrance lands."""
    solid = maze.solid_cells
    lands: dict[tuple[int, int], tuple[int, int]] = {}
    for t in maze.teleporters:
        lands[t.pos] = t.to
        if t.bidirectional:
            lands[t.to] = t.pos
    return solid, maze.cells_of("kill"), maze.cells_of("frozen"), lands


def r1_landing(maze: Maze, cell: tuple[int, int]) -> tuple[int, int]:
    """Where a move into ``cell`` ends: the other end of a teleporter, else ``cell`` itself."""
    return _r1_cells(maze)[3].get(cell, cell)


def r1_enterable(maze: Maze, state: MazeState, cell: tuple[int, int]) -> bool:
    """Can a move go into ``cell``? Keys never block; walls, hazards, blocks, doors that are not
    open and gates that are not open do."""
    x, y = cell
    if maze.walls[x, y] or cell in _r1_cells(maze)[0]:
        return False
    return _barrier_open(maze, state, cell)


def arrow(maze: Maze, s: MazeState, cell: tuple[int, int]) -> int | None:
    """The direction the arrow of the turntable on ``cell`` points in ``s`` (None: no turntable)."""
    t = _turntable_at(maze).get(cell)
    return None if t is None else (t + s.phase) % 4


@lru_cache(maxsize=512)
def _turntable_at(maze: Maze) -> dict[tuple[int, int], int]:
    return {t.pos: DIRECTIONS.index(t.dir) for t in maze.turntables}


def heading(maze: Maze, s: MazeState) -> int:
    """The way a forward from ``s`` goes: the agent's facing, or under multinet-pr57 on a
    turntable where its arrow points."""
    arrow_now = arrow(maze, s, s.pos) if maze.ruleset == MULTINET_PR57 else None
    return s.dir if arrow_now is None else arrow_now


def ahead(maze: Maze, s: MazeState) -> tuple[int, int]:
    """The cell a forward from ``s`` goes into, before any portal: the one in front, or under
    multinet-pr57 on a turntable the one its arrow points at."""
    dx, dy = DIR_VECTORS[heading(maze, s)]
    return (s.pos[0] + dx, s.pos[1] + dy)


@lru_cache(maxsize=512)
def _own_rules(maze: Maze) -> tuple[dict[tuple[int, int], Any], dict[tuple[int, int], Any]]:
    """Per cell, the rules of the mechanics that declare their own (``Mechanic.refuses`` and
    ``Mechanic.enters``, env.mechanics): who refuses a move into it, what entering it does."""
    refuses, enters = {}, {}
    for o in maze.objects:
        m = of_kind(o.kind)
        if m.refuses is not None:
            refuses[o.pos] = m.refuses
        if m.enters is not None:
            enters[o.pos] = m.enters
    return refuses, enters


def refused(maze: Maze, cell: tuple[int, int], way: int) -> bool:
    """Does a mechanic on ``cell`` refuse a move heading ``way`` (0..3) into it? (multinet-pr57)"""
    rule = _own_rules(maze)[0].get(cell)
    return rule is not None and rule(maze, cell, way)


def dead(maze: Maze, s: MazeState) -> bool:
    """Under multinet-pr57 with ``rules.death: fail``: has the agent died (the episode is over)?"""
    return maze.rulebook.death == "fail" and s.pos in _r1_cells(maze)[1]


def no_change(before: MazeState, after: MazeState) -> bool:
    """Did a step change nothing but the turntables' arrows? Such a step (a bump, an action with
    nothing to act on) is never a move of an optimal plan: the R1 planner's convention, which the
    oracle keeps (docs/oracle.md)."""
    if after == before:
        return True
    return after.phase != before.phase and replace(after, phase=before.phase) == before


def _step_study(maze: Maze, s: MazeState, action: int) -> tuple[MazeState, str]:
    """The study's rulebooks (docs/maze-format.md#rulesets): R1, and under multinet-pr57 R1 with
    turntables, the portal latch, the mechanism labels and the death rule; every arrow turns one
    step clockwise after every step (after a death that resets the maze, the start state is
    exactly as it was, arrows included)."""
    if not 0 <= action < len(ACTIONS):
        raise ValueError(f"action must be 0..{DROP}, got {action!r}")
    if maze.ruleset != MULTINET_PR57:
        return _act_study(maze, s, action, pr57=False)
    if dead(maze, s):  # nothing happens any more; the episode runner has ended the episode
        return _turn_arrows(maze, s), "noop"
    after, event = _act_study(maze, s, action, pr57=True)
    if event == "died" and not dead(maze, after):
        return after, event
    return _turn_arrows(maze, after), event


def _turn_arrows(maze: Maze, s: MazeState) -> MazeState:
    return replace(s, phase=(s.phase + 1) % 4) if maze.turntables else s


def _act_study(maze: Maze, s: MazeState, action: int, pr57: bool) -> tuple[MazeState, str]:
    """One action under R1's rules, with multinet-pr57's additions when ``pr57``."""
    if s.frozen > 0:  # every action, done included, only counts the freeze down
        return replace(s, frozen=s.frozen - 1), "frozen"
    in_place = _turn_or_wait(s, action)
    if in_place is not None:
        return in_place
    cells = _static_cells(maze)
    if action == FORWARD:
        way = heading(maze, s) if pr57 else s.dir
        front = (s.pos[0] + DIR_VECTORS[way][0], s.pos[1] + DIR_VECTORS[way][1])
        if not r1_enterable(maze, s, front) or (pr57 and refused(maze, front, way)):
            return s, "bump"
        _, kills, frozen_tiles, _ = _r1_cells(maze)
        landing = r1_landing(maze, front)
        if landing in kills:
            if not pr57:
                return initial_state(maze), "reset"
            if maze.rulebook.death == "fail":
                return replace(s, pos=landing, latched=False), "died"
            return initial_state(maze), "died"
        held = list(s.switches)
        for i, spec in enumerate(maze.switches):
            if spec.switch_type == "hold":  # on exactly while the agent stands on it
                held[i] = spec.pos == landing
        frozen = maze.rulebook.freeze_steps if landing in frozen_tiles else 0
        after = replace(s, pos=landing, switches=tuple(held), frozen=frozen,
                        latched=pr57 and landing != front)
        entered = _own_rules(maze)[1].get(landing) if pr57 else None
        if entered is not None:
            after = entered(maze, after)
        if landing == maze.goal:
            return after, "goal"
        if landing != front:
            return after, "teleported"
        if pr57 and frozen:
            return after, "froze"
        return after, ("rode" if pr57 and arrow(maze, s, s.pos) is not None else "moved")
    if action == PICKUP:
        k = key_at(s, s.pos)
        if k < 0 or s.carrying >= 0:  # the key underfoot, with empty hands only
            return s, "noop"
        keys = list(s.keys)
        keys[k] = None
        return replace(s, carrying=k, keys=tuple(keys)), "pickup"
    if action == DROP:  # the study's drop: onto the agent's own cell, as its pickup takes from there
        if s.carrying < 0 or not drop_cell_free(maze, s, s.pos):
            return s, "noop"
        return _dropped(s, s.pos)
    # toggle: a switch underfoot takes it, whatever it does; otherwise a door in front
    under = cells.get(s.pos)
    if under is not None and under[0] == "switch":
        i = under[1]
        kind = maze.switches[i].switch_type
        if kind == "hold" or (kind == "one_shot" and s.switches[i]):
            return s, "noop"
        sw = list(s.switches)
        sw[i] = not sw[i]
        return replace(s, switches=tuple(sw)), ("switch_on" if sw[i] else "switch_off")
    obj = cells.get(s.front())
    if obj is not None and obj[0] == "door":
        i = obj[1]
        if s.doors[i] != DOOR_OPEN and s.carrying >= 0 and maze.keys[s.carrying].color == maze.doors[i].color:
            doors = list(s.doors)
            doors[i] = DOOR_OPEN
            carrying = -1 if maze.rulebook.key_consumption else s.carrying
            return replace(s, doors=tuple(doors), carrying=carrying), "door_unlocked"
    return s, "noop"


def mechanism_info(maze: Maze, s: MazeState) -> dict[str, Any]:
    """The state as plain JSON-able data: position, facing, inventory and every mechanism (a key
    is null while carried or, under the study's rulesets, once used up; ``frozen``, the freeze
    countdown, only in mazes with frozen tiles; ``arrows``, where each turntable points, only in
    mazes with turntables; ``latched``, whether the agent stands on the end a portal sent it to,
    only in multinet-pr57 mazes with portals)."""
    info = {
        "pos": list(s.pos),
        "dir": s.dir,
        "carrying": maze.keys[s.carrying].id if s.carrying >= 0 else None,
        "keys": {k.id: (list(p) if p is not None else None) for k, p in zip(maze.keys, s.keys, strict=True)},
        "doors": {d.id: DOOR_STATES[st] for d, st in zip(maze.doors, s.doors, strict=True)},
        "switches": {sw.id: on for sw, on in zip(maze.switches, s.switches, strict=True)},
        "gates": {g.id: op for g, op in zip(maze.gates, maze.gates_open(s.switches), strict=True)},
    }
    if maze.cells_of("frozen"):
        info["frozen"] = s.frozen
    if maze.turntables:
        info["arrows"] = {t.id: DIRECTIONS[arrow(maze, s, t.pos) or 0] for t in maze.turntables}
    if maze.ruleset == MULTINET_PR57 and maze.teleporters:
        info["latched"] = s.latched
    return info



def state_of_info(maze: Maze, info: dict[str, Any]) -> MazeState:
    """The state ``info`` describes: the inverse of ``mechanism_info``, the one reading of that
    form (the traces' ``mechanisms`` column and a step's position, facing and inventory). An
    ``info`` that does not fit the maze (an unknown key id, a door left out) raises ``KeyError``
    or ``ValueError``."""
    keys, doors, switches = info["keys"], info["doors"], info["switches"]
    phase = 0
    if maze.turntables:  # every arrow has turned as often as the first one
        first = maze.turntables[0]
        phase = (DIRECTIONS.index(info["arrows"][first.id]) - DIRECTIONS.index(first.dir)) % 4
    carrying = info["carrying"]
    return MazeState(
        pos=(int(info["pos"][0]), int(info["pos"][1])),
        dir=int(info["dir"]),
        carrying=-1 if carrying is None else [k.id for k in maze.keys].index(carrying),
        keys=tuple(None if keys[k.id] is None else tuple(keys[k.id]) for k in maze.keys),
        doors=tuple(DOOR_STATES.index(doors[d.id]) for d in maze.doors),
        switches=tuple(bool(switches[s.id]) for s in maze.switches),
        frozen=int(info.get("frozen", 0)),
        phase=phase,
        latched=bool(info.get("latched", False)),
    )
