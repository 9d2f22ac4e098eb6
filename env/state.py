"""The full state of a maze episode and the normative dynamics of docs/design.md §3.

``MazeState`` is the one state object: ``MazeEnv`` exposes it, the oracle searches over it,
frames and the text projection are drawn from it, so none of them can disagree.
``step`` is a pure reference implementation of the dynamics, one rulebook per ruleset
(``minigrid``: gridbench's own; ``multinet-r1``: the MultiNet study's R1 rulebook;
``multinet-pr57``: R1 with the study's later tiles), each tile's rules its mechanic's
(env.mechanics). ``MazeEnv``
executes the minigrid rules through Minigrid, and the tests hold the two to each other.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from env.maze import DIR_VECTORS, DOOR_STATES, MULTINET_PR57, STUDY_KINDS, Maze
from env.mechanics import MECHANICS

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
    # the study's rulesets: what the mechanics name their moves (``Mechanic.events``)
    *(e for m in MECHANICS for e in m.events),
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
    # the slots the mechanics keep their state in (env.mechanics says what each reads and writes):
    # actions still swallowed (the study's rulesets)
    frozen: int = 0
    # multinet-pr57: steps taken mod 4 since the start or the last reset (what turns by itself)
    phase: int = 0
    # multinet-pr57: the agent stands where a mechanic sent it (nothing sends it again before it
    # has moved off)
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
    object; the study's rulebook refuses doors, switches, gates, the goal and each of its tiles;
    gridbench refuses the tiles the study's rule is silent on too)."""
    x, y = cell
    if maze.walls[x, y] or cell == maze.goal or key_at(s, cell) >= 0 or cell in _static_cells(maze):
        return False
    return cell not in _tile_cells(maze)


@lru_cache(maxsize=512)
def _tile_cells(maze: Maze) -> frozenset[tuple[int, int]]:
    """The cells of the study's tiles (every kind only its rulesets have)."""
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


# ---- multinet-r1 and multinet-pr57 ------------------------------------------------------------
# R1's own rules (keys underfoot, one-shot and hold switches, doors that stay open) are written
# here; every other tile's rule is its mechanic's (env.mechanics: ``holds``, ``steers``,
# ``refuses``, ``lands``, ``fires``, ``enters``, ``ticks``, ``over``), asked in the registry's order.


@dataclass(frozen=True)
class _Rules:
    holds: tuple[Any, ...]
    steers: tuple[Any, ...]
    refuses: dict[tuple[int, int], Any]
    lands: tuple[Any, ...]
    fires: tuple[Any, ...]
    enters: tuple[Any, ...]
    ticks: tuple[Any, ...]
    over: tuple[Any, ...]
    info: tuple[Any, ...]
    read_info: tuple[Any, ...]
    tabled: bool  # the oracle's tables cover every rule that acts (env.oracle.space)
    tabulated: bool  # env.oracle.explicit's tables hold every rule that acts under multinet-pr57


@lru_cache(maxsize=512)
def rules_of(maze: Maze) -> _Rules:
    """The rules of the mechanics ``maze`` has (those with an object in it), in the registry's order."""
    present = [m for m in MECHANICS if any(maze.of_kind(k) for k in m.kinds)]

    def hooks(name: str) -> tuple[Any, ...]:
        return tuple(h for m in present if (h := getattr(m, name)) is not None)

    refuses = {o.pos: m.refuses for m in present if m.refuses is not None for k in m.kinds for o in maze.of_kind(k)}
    moving = ("holds", "steers", "refuses", "fires", "enters", "ticks", "over")
    tabled = all(m.tabled or all(getattr(m, n) is None for n in moving) for m in present)
    tabulated = all(m.tabulated or all(getattr(m, n) is None for n in moving) for m in present)
    return _Rules(holds=hooks("holds"), steers=hooks("steers"), refuses=refuses, lands=hooks("lands"), fires=hooks("fires"),
                  enters=hooks("enters"), ticks=hooks("ticks"), over=hooks("over"), info=hooks("info"),
                  read_info=hooks("read_info"), tabled=tabled, tabulated=tabulated)


def r1_landing(maze: Maze, cell: tuple[int, int]) -> tuple[int, int]:
    """Where a move into ``cell`` ends: where a mechanic on it sends the agent (``lands``), else
    ``cell`` itself."""
    for lands in rules_of(maze).lands:
        cell = lands(maze, cell)
    return cell


def r1_enterable(maze: Maze, state: MazeState, cell: tuple[int, int]) -> bool:
    """Can a move go into ``cell``? Keys never block; walls, the solid mechanics' cells (hazards,
    blocks), doors that are not open and gates that are not open do."""
    x, y = cell
    if maze.walls[x, y] or cell in maze.solid_cells:
        return False
    return _barrier_open(maze, state, cell)


def heading(maze: Maze, s: MazeState) -> int:
    """The way a forward from ``s`` goes: the agent's facing, unless a mechanic under it steers the
    move (``steers``)."""
    for steers in rules_of(maze).steers:
        way = steers(maze, s)
        if way is not None:
            return int(way)
    return s.dir


def ahead(maze: Maze, s: MazeState) -> tuple[int, int]:
    """The cell a forward from ``s`` goes into, before any mechanic sends it on."""
    dx, dy = DIR_VECTORS[heading(maze, s)]
    return (s.pos[0] + dx, s.pos[1] + dy)


def refused(maze: Maze, cell: tuple[int, int], way: int) -> bool:
    """Does a mechanic on ``cell`` refuse a move heading ``way`` (0..3) into it?"""
    rule = rules_of(maze).refuses.get(cell)
    return rule is not None and rule(maze, cell, way)


def dead(maze: Maze, s: MazeState) -> bool:
    """Is the episode over in ``s`` though the goal is not reached (a mechanic's ``over``: the
    agent dead where a tile killed it)?"""
    return any(over(maze, s) for over in rules_of(maze).over)


def fired_at(maze: Maze, cell: tuple[int, int]) -> tuple[int, int] | None:
    """Where the agent stands after a move that ends on ``cell``, whatever else the state holds:
    ``cell``, or where a mechanic that takes the move over puts it (the start, after a reset), or
    None once the episode is over there."""
    start = initial_state(maze)
    for fires in rules_of(maze).fires:
        fired = fires(maze, start, cell)
        if fired is not None:
            return None if dead(maze, fired[0]) else fired[0].pos
    return cell


def no_change(before: MazeState, after: MazeState) -> bool:
    """Did a step change nothing but the phase (what turns by itself after every step)? Such a
    step (a bump, an action with nothing to act on) is never a move of an optimal plan: the R1
    planner's convention, which the oracle keeps (docs/oracle.md)."""
    if after == before:
        return True
    return after.phase != before.phase and replace(after, phase=before.phase) == before


def _step_study(maze: Maze, s: MazeState, action: int) -> tuple[MazeState, str]:
    """The study's rulebooks (docs/maze-format.md#rulesets): R1, and multinet-pr57, R1 with the
    later tiles; under multinet-pr57 what turns by itself turns after every step (``ticks``),
    unless the step taken over by a mechanic settled the state (a reset leaves the start state
    exactly as it was)."""
    if not 0 <= action < len(ACTIONS):
        raise ValueError(f"action must be 0..{DROP}, got {action!r}")
    if maze.ruleset != MULTINET_PR57:
        return _act_study(maze, s, action, pr57=False)[:2]
    if dead(maze, s):  # nothing happens any more; the episode runner has ended the episode
        return _ticked(maze, s), "noop"
    after, event, settled = _act_study(maze, s, action, pr57=True)
    return (after if settled else _ticked(maze, after)), event


def _ticked(maze: Maze, s: MazeState) -> MazeState:
    for tick in rules_of(maze).ticks:
        s = tick(maze, s)
    return s


def _act_study(maze: Maze, s: MazeState, action: int, pr57: bool) -> tuple[MazeState, str, bool]:
    """One action under R1's rules, with multinet-pr57's additions when ``pr57``; whether a
    mechanic that took the step over settled the state."""
    for holds in rules_of(maze).holds:  # a mechanic that takes every action over while it holds the agent
        held = holds(maze, s)
        if held is not None:
            return (*held, False)
    in_place = _turn_or_wait(s, action)
    if in_place is not None:
        return (*in_place, False)
    if action == FORWARD:
        return _forward_study(maze, s)
    return (*_act_r1(maze, s, action), False)


def _forward_study(maze: Maze, s: MazeState) -> tuple[MazeState, str, bool]:
    """A forward under the study's rulebooks: where it heads (``steers``), whether it may enter
    (``refuses``), where it ends (``lands``), a mechanic that takes it over (``fires``), what
    entering does (``enters``, the first event a mechanic gives, in the registry's order; the goal
    before them all)."""
    rules = rules_of(maze)
    way = heading(maze, s) if rules.steers else s.dir
    front = (s.pos[0] + DIR_VECTORS[way][0], s.pos[1] + DIR_VECTORS[way][1])
    if not r1_enterable(maze, s, front) or (rules.refuses and refused(maze, front, way)):
        return s, "bump", False
    landing = r1_landing(maze, front) if rules.lands else front
    for fires in rules.fires:
        fired = fires(maze, s, landing)
        if fired is not None:
            return fired
    held = list(s.switches)
    for i, spec in enumerate(maze.switches):
        if spec.switch_type == "hold":  # on exactly while the agent stands on it
            held[i] = spec.pos == landing
    after = replace(s, pos=landing, switches=tuple(held), frozen=0)
    event = "moved"
    for enters in rules.enters:
        after, said = enters(maze, s, after, front)
        if said is not None and event == "moved":
            event = said
    return after, ("goal" if landing == maze.goal else event), False


def _act_r1(maze: Maze, s: MazeState, action: int) -> tuple[MazeState, str]:
    """Pickup, drop and toggle under R1's rules."""
    cells = _static_cells(maze)
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
    countdown, and what else a mechanic keeps, ``Mechanic.info``: docs/design.md §3)."""
    info = {
        "pos": list(s.pos),
        "dir": s.dir,
        "carrying": maze.keys[s.carrying].id if s.carrying >= 0 else None,
        "keys": {k.id: (list(p) if p is not None else None) for k, p in zip(maze.keys, s.keys, strict=True)},
        "doors": {d.id: DOOR_STATES[st] for d, st in zip(maze.doors, s.doors, strict=True)},
        "switches": {sw.id: on for sw, on in zip(maze.switches, s.switches, strict=True)},
        "gates": {g.id: op for g, op in zip(maze.gates, maze.gates_open(s.switches), strict=True)},
    }
    for more in rules_of(maze).info:  # what the mechanics keep beside (the freeze, the arrows, the latch)
        info.update(more(maze, s))
    return info



def state_of_info(maze: Maze, info: dict[str, Any]) -> MazeState:
    """The state ``info`` describes: the inverse of ``mechanism_info``, the one reading of that
    form (the traces' ``mechanisms`` column and a step's position, facing and inventory). An
    ``info`` that does not fit the maze (an unknown key id, a door left out) raises ``KeyError``
    or ``ValueError``."""
    keys, doors, switches = info["keys"], info["doors"], info["switches"]
    more: dict[str, Any] = {}
    for read in rules_of(maze).read_info:
        more.update(read(maze, info))
    carrying = info["carrying"]
    return MazeState(
        pos=(int(info["pos"][0]), int(info["pos"][1])),
        dir=int(info["dir"]),
        carrying=-1 if carrying is None else [k.id for k in maze.keys].index(carrying),
        keys=tuple(None if keys[k.id] is None else tuple(keys[k.id]) for k in maze.keys),
        doors=tuple(DOOR_STATES.index(doors[d.id]) for d in maze.doors),
        switches=tuple(bool(switches[s.id]) for s in maze.switches),
        **more,
    )
