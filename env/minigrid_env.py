"""``MazeEnv``: a gridbench maze as a Minigrid environment (docs/design.md §3).

Under the minigrid ruleset turning and moving run through Minigrid's own ``step``; pickup
(which swaps here) and toggle (which flips a switch underfoot first) extend it. Under
multinet-r1 every action goes through the rulebook, ``env.state.step``, and the grid is drawn
afresh from the state it returns (as the study's own env wrote its rulebook's state back onto a
Minigrid grid); so it is under multinet-pr57, whose tiles are drawn as they show now (a
mechanic's ``shown``). Every step reports one event and the mechanism state in ``info``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar, cast

import numpy as np
from gymnasium import spaces
from minigrid.core.actions import Actions as MinigridActions
from minigrid.core.grid import Grid
from minigrid.core.mission import MissionSpace
from minigrid.core.world_object import Door, Goal, Key, Wall, WorldObj
from minigrid.minigrid_env import MiniGridEnv

from env.maze import CLASSIC, Maze, MazeObject
from env.mechanics import MECHANICS, covered_cells, of_kind
from env.objects import Gate, NeutralGlyph, Switch
from env.sets import resolve_maze
from env.state import (
    ACTIONS,
    DONE,
    DROP,
    FORWARD,
    LEFT,
    PICKUP,
    RIGHT,
    SIX_ACTIONS,
    TOGGLE,
    MazeState,
    dead,
    initial_state,
    mechanism_info,
    step,
)
from env.tiles import prewarm

# gridbench action index -> Minigrid's action index. Minigrid's 4 (drop) is gridbench's 6, reached
# only by an env made with drop=True.
TO_MINIGRID = {
    LEFT: int(MinigridActions.left),
    RIGHT: int(MinigridActions.right),
    FORWARD: int(MinigridActions.forward),
    PICKUP: int(MinigridActions.pickup),
    TOGGLE: int(MinigridActions.toggle),
    DONE: int(MinigridActions.done),
    DROP: int(MinigridActions.drop),
}
MISSION = "reach the goal"
_NO_TRUNCATION = 2**31 - 1
T = TypeVar("T", bound=WorldObj)


def look(maze: Maze, obj: MazeObject, value: Any = None, switch_frames: str = "distinct") -> WorldObj:
    """What ``obj`` of ``maze`` is drawn as when its state is ``value``: a door's state (0 open, 1
    closed, 2 locked), a switch's on, a gate's open, what a later tile shows (``Mechanic.shown``); nothing for the
    rest. ``switch_frames`` is the protocol field of that name (docs/protocol.md). Each mechanic
    draws its own objects (``Mechanic.draws``, env.mechanics); ``build_grid`` draws with this, and
    the viewer names its tiles with it (``cell_looks``)."""
    draws = of_kind(obj.kind).draws
    assert draws is not None, obj.kind
    return cast(WorldObj, draws(maze, obj, value, switch_frames))


def build_grid(maze: Maze, state: MazeState, switch_frames: str = "distinct") -> tuple[Grid, list[Key]]:
    """A Minigrid ``Grid`` showing ``state``, each object as ``look`` draws it, a used-up key gone
    and the agent over a key it stands on (multinet-r1); returns it with the key objects by index."""
    grid = Grid(maze.width, maze.height)
    walls = maze.walls
    for x in range(maze.width):
        for y in range(maze.height):
            if walls[x, y]:
                grid.set(x, y, Wall())
    grid.set(*maze.goal, Goal())
    for i, d in enumerate(maze.doors):
        grid.set(*d.pos, look(maze, d, state.doors[i]))
    for i, s in enumerate(maze.switches):
        grid.set(*s.pos, look(maze, s, state.switches[i], switch_frames))
    for g, is_open in zip(maze.gates, maze.gates_open(state.switches), strict=True):
        grid.set(*g.pos, look(maze, g, is_open))
    for o in maze.objects:
        if o.kind not in ("key", "door", "switch", "gate"):
            shown = of_kind(o.kind).shown  # what it shows in this state (None: always the same)
            drawn = look(maze, o, shown(maze, state, o) if shown is not None else None)
            for cell in covered_cells(o):
                grid.set(*cell, drawn)
    keys = [cast(Key, look(maze, k)) for k in maze.keys]
    for i, p in enumerate(state.keys):
        if p is not None:
            grid.set(*p, keys[i])
            keys[i].cur_pos = p
    return grid, keys


# what the traces' mechanism state (env.state.mechanism_info) records of each stateful kind: the
# field and its values as written there, each with the value ``look`` takes (``Mechanic.recorded``)
_RECORDED = {kind: rec for m in MECHANICS for kind, rec in m.recorded.items()}


def cell_looks(maze: Maze, switch_frames: str = "distinct") -> list[dict[str, Any]]:
    """How a viewer draws each object of ``maze`` from a recorded state, in the order
    ``build_grid`` lays them (keys last): the state field that holds its value (None: it has no
    state), the cells it covers (none for a key: it lies where the state says), and the tile name
    (``env.tiles.tile_name``, in the maze's skin) for each value the field can record. The viewer
    knows no ruleset: this is the ruleset's look, read off ``look``."""
    from env.tiles import tile_name

    prefix = "" if maze.skin == CLASSIC else f"{maze.skin}/"
    out = []
    for obj in sorted(maze.objects, key=lambda o: o.kind == "key"):
        field, values = _RECORDED.get(obj.kind, (None, (("", None),)))
        cells = [] if obj.kind == "key" else covered_cells(obj)
        out.append({"id": obj.id, "field": field, "cells": [list(c) for c in cells],
                    "tiles": {name: prefix + tile_name(look(maze, obj, value, switch_frames)) for name, value in values}})
    return out


def in_skin(grid: Grid, skin: str) -> Grid:
    """The grid as the maze's skin draws it (env.skins): itself for the classic skin; for the
    neutral one a copy with every object but walls and the goal in its neutral glyph. Only frames
    use it: the dynamics act on the classic grid."""
    if skin == CLASSIC:
        return grid
    out = Grid(grid.width, grid.height)
    for i, obj in enumerate(grid.grid):
        out.grid[i] = obj if obj is None or isinstance(obj, Wall | Goal) else NeutralGlyph(obj)
    return out


def drawn_grid(maze: Maze, state: MazeState, switch_frames: str = "distinct") -> Grid:
    """The grid a frame of ``state`` shows: ``build_grid``'s, in the maze's skin."""
    return in_skin(build_grid(maze, state, switch_frames)[0], maze.skin)


def _placed(grid: Grid, objects: Iterable[MazeObject], kind: type[T]) -> list[T]:
    """The Minigrid objects ``build_grid`` put on the cells of ``objects``, in their order."""
    out = []
    for o in objects:
        placed = grid.get(*o.pos)
        if not isinstance(placed, kind):
            raise TypeError(f"{o.id}: the grid holds {placed!r} at {list(o.pos)}, not a {kind.__name__}")
        out.append(placed)
    return out


class MazeEnv(MiniGridEnv):
    """A gridbench maze with six actions: left, right, forward, pickup, toggle, done; with
    ``drop=True`` a seventh, drop (the protocol's ``actions: with_drop``)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, maze: Maze | str | dict, render_mode: str | None = None, tile_size: int = 32,
                 drop: bool = False, **kwargs: Any):
        self.maze: Maze = resolve_maze(maze)
        self._actions = len(ACTIONS) if drop else len(SIX_ACTIONS)
        self._r1 = self.maze.study_rules
        self._state = initial_state(self.maze)  # multinet-r1: the rulebook's state, drawn onto the grid
        self._keys: list[Key] = []
        self._doors: list[Door] = []
        self._switches: list[Switch] = []
        self._gates: list[Gate] = []
        super().__init__(
            mission_space=MissionSpace(mission_func=lambda: MISSION),
            width=self.maze.width,
            height=self.maze.height,
            max_steps=_NO_TRUNCATION,
            see_through_walls=True,
            render_mode=render_mode,
            tile_size=tile_size,
            highlight=False,
            **kwargs,
        )
        # Six actions (seven with drop); Minigrid's own enum is only reached through TO_MINIGRID.
        self.action_space = spaces.Discrete(self._actions)
        if render_mode == "rgb_array":
            prewarm(tile_size, self.maze.skin)  # once per process, tile size and skin: no first frame is cold

    # ---- Minigrid hooks ------------------------------------------------------------------
    def _gen_grid(self, width: int, height: int) -> None:
        start = self._state = initial_state(self.maze)
        self.grid, self._keys = build_grid(self.maze, start)
        if not self._r1:  # the objects Minigrid's own step changes in place
            self._doors = _placed(self.grid, self.maze.doors, Door)
            self._switches = _placed(self.grid, self.maze.switches, Switch)
            self._gates = _placed(self.grid, self.maze.gates, Gate)
        self.agent_pos = self.maze.start.pos
        self.agent_dir = self.maze.start_dir
        self.mission = MISSION

    # ---- gymnasium API -------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, _ = super().reset(seed=seed, options=options)
        return obs, self._info("start")

    # minigrid's step is generic in gymnasium's action type; this one takes gridbench's action indices
    def step(self, action: int):  # type: ignore[override]
        action = int(action)
        if not 0 <= action < self._actions:
            raise ValueError(f"action must be 0..{self._actions - 1} ({', '.join(ACTIONS[:self._actions])}), got {action}")
        if self._r1:
            return self._step_rulebook(action)
        if action in (LEFT, RIGHT, FORWARD, DONE, DROP):
            before, held = self.agent_pos, self.carrying
            obs, _, terminated, _, _ = super().step(TO_MINIGRID[action])
            if action == FORWARD:
                moved = tuple(self.agent_pos) != tuple(before)
                event = ("goal" if terminated else "moved") if moved else "bump"
            elif action == DROP:  # Minigrid's own drop: onto an empty cell in front
                event = "drop" if held is not None and self.carrying is None else "noop"
            else:
                event = "noop" if action == DONE else "turned"
        else:
            self.step_count += 1
            event = self._pickup() if action == PICKUP else self._toggle()
            obs, terminated = self.gen_obs(), False
        return obs, (1.0 if terminated else 0.0), terminated, False, self._info(event)

    def _step_rulebook(self, action: int):
        """The study's rulesets: the rulebook decides, the grid shows its state. A state a
        mechanic says is over (``env.state.dead``) ends the episode (reward 0)."""
        self.step_count += 1
        self._state, event = step(self.maze, self._state, action)
        self.grid, self._keys = build_grid(self.maze, self._state)
        self.agent_pos, self.agent_dir = self._state.pos, self._state.dir
        held = self._state.carrying
        # minigrid's __init__ sets carrying to a bare None, which mypy takes for its type
        self.carrying = self._keys[held] if held >= 0 else None  # type: ignore[assignment]
        terminated = event == "goal" or dead(self.maze, self._state)
        return self.gen_obs(), (1.0 if event == "goal" else 0.0), terminated, False, self._info(event)

    def _pickup(self) -> str:
        fx, fy = self.front_pos
        front = self.grid.get(fx, fy)
        if not isinstance(front, Key):
            return "noop"
        held = self.carrying
        self.grid.set(fx, fy, None)
        front.cur_pos = (-1, -1)
        # minigrid's __init__ sets carrying to a bare None, which mypy takes for its type
        self.carrying = front  # type: ignore[assignment]
        if held is None:
            return "pickup"
        self.grid.set(fx, fy, held)
        held.cur_pos = (fx, fy)
        return "swap"

    def _toggle(self) -> str:
        under = self.grid.get(*self.agent_pos)
        if isinstance(under, Switch):
            under.is_on = not under.is_on
            self._sync_gates()
            return "switch_on" if under.is_on else "switch_off"
        front = self.grid.get(*self.front_pos)
        if isinstance(front, Door):
            was_locked, was_open = front.is_locked, front.is_open
            front.toggle(self, self.front_pos)  # Minigrid's own door logic: key colour, no consumption
            if was_locked:
                return "door_unlocked" if not front.is_locked else "noop"
            return "door_closed" if was_open else "door_opened"
        return "noop"

    def _sync_gates(self) -> None:
        on = tuple(s.is_on for s in self._switches)
        for gate, is_open in zip(self._gates, self.maze.gates_open(on), strict=True):
            gate.is_open = is_open

    # ---- the state object ----------------------------------------------------------------
    @property
    def state(self) -> MazeState:
        if self._r1:
            return self._state
        carried = -1
        keys: list[tuple[int, int] | None] = []
        for i, k in enumerate(self._keys):
            if k is self.carrying:
                carried = i
                keys.append(None)
            else:
                assert k.cur_pos is not None  # a key not carried lies on a cell
                keys.append((int(k.cur_pos[0]), int(k.cur_pos[1])))
        return MazeState(
            pos=(int(self.agent_pos[0]), int(self.agent_pos[1])),
            dir=int(self.agent_dir),
            carrying=carried,
            keys=tuple(keys),
            doors=tuple(0 if d.is_open else (2 if d.is_locked else 1) for d in self._doors),
            switches=tuple(bool(s.is_on) for s in self._switches),
        )

    def _info(self, event: str) -> dict[str, Any]:
        return {"event": event, **mechanism_info(self.maze, self.state)}

    # ---- frames --------------------------------------------------------------------------
    def render(self):
        if self.render_mode != "rgb_array":
            return None
        return self.frame(self.tile_size)

    def frame(self, tile_size: int | None = None) -> np.ndarray:
        """The full top-down RGB frame of the grid, no view-cone highlight."""
        tile_size = tile_size or self.tile_size
        prewarm(tile_size, self.maze.skin)
        return in_skin(self.grid, self.maze.skin).render(tile_size, (int(self.agent_pos[0]), int(self.agent_pos[1])), self.agent_dir, None)

