"""Small mazes that hold every mechanism of their ruleset, each with a tour that fires them all.

A tour is the maze's ``prefix`` (actions that set off what the shortest way to the goal would
pass by; ``None`` is an unreadable reply, a no-op step), then the oracle's way to the goal from
wherever the prefix left the agent (``tour_actions``). The episode, replay, viewer and play tests
share these, so each maze is declared once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from env import Maze, initial_state, maze_from_dict, step
from env.oracle import solve
from env.state import FORWARD, LEFT, PICKUP, RIGHT, TOGGLE

# minigrid's mechanisms: two keys (picked up, swapped), a locked door, a closed door, a switch
# and the gate it opens, which bars the short way to the goal
MINIGRID_TOUR: dict[str, Any] = {
    "format": "gridbench.maze/1", "id": "minigrid-every-kind",
    "grid": ["#########", "#.......#", "#.......#", "#########"],
    "start": {"pos": [1, 1], "dir": "east"}, "goal": [7, 1],
    "objects": [
        {"id": "k", "kind": "key", "color": "red", "pos": [2, 1]},
        {"id": "b", "kind": "key", "color": "blue", "pos": [2, 2]},
        {"id": "d", "kind": "door", "color": "red", "pos": [3, 1], "state": "locked"},
        {"id": "e", "kind": "door", "color": "green", "pos": [3, 2], "state": "closed"},
        {"id": "s", "kind": "switch", "color": "purple", "pos": [5, 1], "controls": ["g"]},
        {"id": "g", "kind": "gate", "color": "purple", "pos": [6, 1]},
    ],
}

# what the study's R1 mazes lack: a teleporter, a hold switch and its gate, ice, a kill cell
R1_TOUR: dict[str, Any] = {
    "format": "gridbench.maze/1", "id": "r1-everything", "ruleset": "multinet-r1", "rules": {"freeze_steps": 2},
    "grid": ["#########", "#.....#.#", "#.....#.#", "#.......#", "#########"],
    "start": {"pos": [1, 1], "dir": "east"}, "goal": [7, 1],
    "objects": [
        {"id": "t", "kind": "teleporter", "color": "purple", "pos": [2, 1], "to": [5, 3]},
        {"id": "k", "kind": "key", "color": "red", "pos": [5, 2]},
        {"id": "d", "kind": "door", "color": "red", "pos": [6, 3], "state": "locked"},
        {"id": "h", "kind": "switch", "color": "blue", "pos": [7, 3], "controls": ["g"], "switch_type": "hold"},
        {"id": "g", "kind": "gate", "color": "grey", "pos": [7, 2]},
        {"id": "f", "kind": "frozen", "pos": [3, 3]},
        {"id": "x", "kind": "kill", "pos": [1, 3]},
    ],
}

# what only multinet-pr57 adds: turntables (their arrows turn every step), a cyan portal, a death tile
PR57_TOUR: dict[str, Any] = {
    "format": "gridbench.maze/1", "id": "pr57-every-kind", "ruleset": "multinet-pr57", "rules": {"freeze_steps": 2},
    "grid": ["#########", "#.......#", "#.......#", "#.#######", "#.......#", "#########"],
    "start": {"pos": [1, 1], "dir": "east"}, "goal": [7, 4],
    "objects": [
        {"id": "f", "kind": "frozen", "pos": [2, 1]},
        {"id": "p", "kind": "teleporter", "color": "cyan", "pos": [4, 1], "to": [6, 2]},
        {"id": "x", "kind": "kill", "pos": [7, 2]},
        {"id": "t", "kind": "turntable", "pos": [1, 4], "dir": "north"},
        {"id": "u", "kind": "turntable", "pos": [3, 2], "dir": "west"},
    ],
}


@dataclass(frozen=True)
class Tour:
    maze: dict[str, Any]
    prefix: tuple[int | None, ...]
    fires: frozenset[str]  # the events the tour sets off


TOURS: dict[str, Tour] = {
    # an unreadable reply; the red key, swapped for the blue one and back; the door unlocked; the
    # switch on, off and on; then the oracle's way through the gate
    "minigrid": Tour(MINIGRID_TOUR,
                     (None, PICKUP, FORWARD, RIGHT, PICKUP, PICKUP, LEFT, TOGGLE, FORWARD, FORWARD, FORWARD,
                      TOGGLE, TOGGLE),
                     frozenset({"noop", "pickup", "swap", "door_unlocked", "switch_on", "switch_off", "goal"})),
    # into the kill cell (back to the start), onto the ice (two actions swallowed), then the
    # oracle's way: the key, the teleporter, the door, the hold switch and its gate
    "multinet-r1": Tour(R1_TOUR,
                        (RIGHT, FORWARD, FORWARD, RIGHT, FORWARD, LEFT, FORWARD, RIGHT, FORWARD, LEFT, FORWARD,
                         LEFT, RIGHT),
                        frozenset({"reset", "frozen", "pickup", "teleported", "door_unlocked", "goal"})),
    # onto the ice (two actions swallowed), through the portal, into the death tile; then the
    # oracle's way from the start, which rides a turntable
    "multinet-pr57": Tour(PR57_TOUR, (FORWARD, LEFT, RIGHT, FORWARD, FORWARD, FORWARD),
                          frozenset({"froze", "frozen", "teleported", "died", "rode", "goal"})),
}


def tour_actions(maze: Maze, prefix: tuple[int | None, ...]) -> list[int | None]:
    """``prefix``, then the oracle's shortest way to the goal from where it leaves the agent."""
    s = initial_state(maze)
    for a in prefix:
        if a is not None:
            s, _ = step(maze, s, a)
    return [*prefix, *solve(maze, s).plan]


def tour_maze(ruleset: str) -> Maze:
    return maze_from_dict(TOURS[ruleset].maze, f"testing.mazes {ruleset}")
