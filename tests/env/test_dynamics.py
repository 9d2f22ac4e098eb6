"""The dynamics of docs/design.md §3, rule by rule, for MazeEnv and the pure reference ``step`` alike."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from maze_strategies import make, mazes, obj
from minigrid.core.world_object import Key

import env
from env import ACTIONS, EVENTS, MazeEnv, initial_state, mechanism_info, step
from env.state import DOOR_CLOSED, DOOR_LOCKED, DOOR_OPEN

L, R, F, P, T, D = range(6)


def run_both(maze, actions):
    """Run ``actions`` on MazeEnv and on the pure step; both must agree on every step."""
    e = MazeEnv(maze)
    _, info = e.reset(seed=0)
    s = initial_state(maze)
    assert e.state == s and info["event"] == "start"
    events, terminated = [], False
    for a in actions:
        _, reward, terminated, truncated, info = e.step(a)
        s, event = step(maze, s, a)
        assert info["event"] == event, (ACTIONS[a], info["event"], event)
        assert e.state == s
        assert {k: v for k, v in info.items() if k != "event"} == mechanism_info(maze, s)
        assert terminated == (event == "goal") and reward == (1.0 if terminated else 0.0) and not truncated
        events.append(event)
    return events, s, e


# ---- one table row per rule: (name, maze, actions, expected events, check on the final state) ----

CORRIDOR = ["#######",
            "#A...G#",
            "#######"]

CASES = [
    ("left turns counter-clockwise", make(CORRIDOR), [L, L, L, L], ["turned"] * 4,
     lambda m, s: s.dir == 0),
    ("right turns clockwise", make(CORRIDOR), [R], ["turned"], lambda m, s: s.dir == 1),
    ("forward onto floor", make(CORRIDOR), [F], ["moved"], lambda m, s: s.pos == (2, 1)),
    ("bump: wall", make(CORRIDOR), [L, F], ["turned", "bump"], lambda m, s: s.pos == (1, 1)),
    ("bump: key", make(["#######", "#Ak..G#", "#######"], k=obj("key")), [F], ["bump"],
     lambda m, s: s.pos == (1, 1) and s.keys == ((2, 1),)),
    ("bump: closed door", make(["#######", "#Ad..G#", "#######"], d=obj("door", state="closed")), [F],
     ["bump"], lambda m, s: s.pos == (1, 1)),
    ("bump: locked door", make(["#######", "#Ad..G#", "#######"], d=obj("door", state="locked")), [F],
     ["bump"], lambda m, s: s.pos == (1, 1)),
    ("bump: closed gate (switch off)",
     make(["#######", "#Ag.sG#", "#######"], g=obj("gate"), s=obj("switch", on=False, controls=["g"])),
     [F], ["bump"], lambda m, s: s.pos == (1, 1)),
    ("bump: gate no switch controls stays closed", make(["#######", "#Ag..G#", "#######"], g=obj("gate")),
     [F, T], ["bump", "noop"], lambda m, s: s.pos == (1, 1)),
    ("forward through an open door", make(["#######", "#Ad..G#", "#######"], d=obj("door", state="open")),
     [F, F], ["moved", "moved"], lambda m, s: s.pos == (3, 1)),
    ("forward through an open gate (switch on)",
     make(["#######", "#Ag.sG#", "#######"], g=obj("gate"), s=obj("switch", on=True, controls=["g"])),
     [F, F], ["moved", "moved"], lambda m, s: s.pos == (3, 1)),
    ("forward onto a switch", make(["#######", "#As..G#", "#######"], s=obj("switch")), [F], ["moved"],
     lambda m, s: s.pos == (2, 1) and s.switches == (False,)),
    ("entering the goal solves", make(["#####", "#AG.#", "#####"]), [F], ["goal"],
     lambda m, s: s.pos == (2, 1)),
    ("pickup a key", make(["#######", "#Ak..G#", "#######"], k=obj("key")), [P, F],
     ["pickup", "moved"], lambda m, s: s.carrying == 0 and s.keys == (None,) and s.pos == (2, 1)),
    ("pickup with nothing in front", make(CORRIDOR), [P], ["noop"], lambda m, s: s.carrying == -1),
    ("pickup a door is nothing", make(["#######", "#Ad..G#", "#######"], d=obj("door", state="closed")),
     [P], ["noop"], lambda m, s: s.carrying == -1 and s.doors == (DOOR_CLOSED,)),
    ("pickup while carrying swaps",
     make(["#######", "#.A...#", "#k#j#G#", "#######"], facing="south",
          k=obj("key", "red"), j=obj("key", "blue")),
     [R, F, L, P, L, F, F, R, P],
     ["turned", "moved", "turned", "pickup", "turned", "moved", "moved", "turned", "swap"],
     lambda m, s: s.carrying == 1 and s.keys == ((3, 2), None) and s.pos == (3, 1)),
    ("toggle a switch underfoot: on, off",
     make(["#######", "#As.gG#", "#######"], s=obj("switch", controls=["g"]), g=obj("gate")),
     [F, T, T], ["moved", "switch_on", "switch_off"], lambda m, s: s.switches == (False,)),
    ("switch underfoot before the door in front",
     make(["#######", "#Asd.G#", "#######"], s=obj("switch"), d=obj("door", state="closed")),
     [F, T], ["moved", "switch_on"], lambda m, s: s.switches == (True,) and s.doors == (DOOR_CLOSED,)),
    ("door cycle locked -> open -> closed -> open; the key is kept",
     make(["#######", "#.Ad.G#", "#k#####", "#######"], k=obj("key"), d=obj("door", state="locked")),
     [T, L, L, F, L, P, L, F, T, T, T, F, F],
     ["noop", "turned", "turned", "moved", "turned", "pickup", "turned", "moved", "door_unlocked", "door_closed",
      "door_opened", "moved", "moved"],
     lambda m, s: s.carrying == 0 and s.doors == (DOOR_OPEN,) and s.pos == (4, 1)),
    ("locked door, wrong colour key: noop",
     make(["#######", "#.Ad.G#", "#k#####", "#######"],
          k=obj("key", "red"), d=obj("door", "blue", state="locked")),
     [L, L, F, L, P, L, F, T, F],
     ["turned", "turned", "moved", "turned", "pickup", "turned", "moved", "noop", "bump"],
     lambda m, s: s.doors == (DOOR_LOCKED,) and s.carrying == 0),
    ("toggle with nothing in front or underfoot", make(CORRIDOR), [T], ["noop"], lambda m, s: True),
    ("toggle facing a closed gate is nothing",
     make(["#######", "#Ag.sG#", "#######"], g=obj("gate"), s=obj("switch", controls=["g"])),
     [T], ["noop"], lambda m, s: s.switches == (False,)),
    ("two switches on one gate: open while either is on",
     make(["########", "#Ast.gG#", "########"],
          s=obj("switch", "blue", controls=["g"]), t=obj("switch", "red", controls=["g"]), g=obj("gate")),
     [F, T, F, T, L, L, F, T, L, L, F, T, F, F],
     ["moved", "switch_on", "moved", "switch_on", "turned", "turned", "moved", "switch_off", "turned", "turned",
      "moved", "switch_off", "moved", "bump"],
     lambda m, s: s.switches == (False, False) and m.gates_open(s.switches) == (False,) and s.pos == (4, 1)),
    ("decoy switch changes no gate",
     make(["########", "#As.g.G#", "########"], s=obj("switch", controls=[]), g=obj("gate")),
     [F, T, F, F], ["moved", "switch_on", "moved", "bump"],
     lambda m, s: s.switches == (True,) and m.gates_open(s.switches) == (False,) and s.pos == (3, 1)),
    ("done changes nothing", make(CORRIDOR), [D, D], ["noop", "noop"],
     lambda m, s: s == initial_state(m)),
]


@pytest.mark.parametrize("name,maze,actions,expected,check", CASES, ids=[c[0] for c in CASES])
def test_rule(name, maze, actions, expected, check):
    events, final, _ = run_both(maze, actions)
    assert events == expected
    assert check(maze, final)


def test_two_switches_on_one_gate_gate_state_at_each_step():
    maze = make(["########", "#Ast.gG#", "########"],
                s=obj("switch", "blue", controls=["g"]), t=obj("switch", "red", controls=["g"]), g=obj("gate"))
    e = MazeEnv(maze)
    e.reset()
    gates = [e.step(a)[4]["gates"]["g"] for a in (F, T, F, T, L, L, F, T, L, L, F, T)]
    # s on; t on; s off (t still on); t off
    assert gates == [False, True, True, True, True, True, True, True, True, True, True, False]
    assert e.grid.get(5, 1).is_open is False


@pytest.mark.parametrize("facing,dx,dy", [("east", 1, 0), ("south", 0, 1), ("west", -1, 0), ("north", 0, -1)])
def test_start_facing_each_direction(facing, dx, dy):
    maze = make(["#####", "#...#", "#.A.#", "#..G#", "#####"], facing=facing)
    events, s, e = run_both(maze, [F])
    assert events == ["moved"] and s.pos == (2 + dx, 2 + dy)
    assert MazeEnv(maze).reset()[1]["dir"] == env.DIRECTIONS.index(facing)


def test_actions_map_onto_minigrid_and_drop_only_when_asked_for():
    from minigrid.core.actions import Actions

    from env.minigrid_env import TO_MINIGRID

    assert [TO_MINIGRID[i] for i in range(7)] == [Actions.left, Actions.right, Actions.forward, Actions.pickup,
                                                   Actions.toggle, Actions.done, Actions.drop]
    e = MazeEnv("example")
    assert e.action_space.n == 6
    e.reset()
    with pytest.raises(ValueError):
        e.step(6)
    assert MazeEnv("example", drop=True).action_space.n == 7


def test_the_episode_continues_after_the_goal_and_never_truncates():
    maze = make(["#####", "#AG.#", "#####"])
    e = MazeEnv(maze)
    e.reset()
    assert e.step(F)[2] is True
    for _ in range(50):
        _, _, terminated, truncated, info = e.step(D)
        assert not truncated and info["event"] == "noop"


MINIGRID_EVENTS = {"moved", "turned", "bump", "pickup", "swap", "door_unlocked", "door_opened", "door_closed",
                   "switch_on", "switch_off", "noop", "goal"}


def test_every_event_name_is_in_the_design_list():
    # three others are multinet-r1's (tests/env/test_rulesets.py), three more multinet-pr57's
    # (tests/env/test_pr57.py)
    # "drop" is DROP's (tests/env/test_drop.py)
    assert set(EVENTS) == MINIGRID_EVENTS | {"teleported", "reset", "frozen"} | {"died", "froze", "rode"} | {"drop"}
    seen = {ev for _, maze, actions, _, _ in CASES for ev in run_both(maze, actions)[0]}
    assert seen == MINIGRID_EVENTS


# ---- gymnasium ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["path", "id", "dict"])
def test_gymnasium_env_checker_passes(how):
    path = Path(env.__file__).parent / "mazes" / "hand" / "example.json"
    spec = {"path": str(path), "id": "example", "dict": env.load_maze(path).to_dict()}[how]
    e = gym.make("gridbench/Maze-v0", maze=spec, render_mode="rgb_array", tile_size=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        # the checker asks for the raw env: gym.make's own wrappers are gymnasium's, not ours
        check_env(e.unwrapped)
    obs, info = e.reset(seed=1)
    assert e.unwrapped.maze.id == "example" and info["doors"] == {"d1": "locked"}
    assert e.render().shape == (6 * 32, 9 * 32, 3)
    e.close()


# ---- properties over random mazes ---------------------------------------------------------------


def _blocked(maze, s, cell) -> bool:
    x, y = cell
    if maze.walls[x, y]:
        return True
    for d, st_ in zip(maze.doors, s.doors, strict=True):
        if tuple(d.pos) == cell and st_ != DOOR_OPEN:
            return True
    for g, is_open in zip(maze.gates, maze.gates_open(s.switches), strict=True):
        if tuple(g.pos) == cell and not is_open:
            return True
    return False


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(maze=mazes(), actions=st.lists(st.integers(0, 5), max_size=80))
def test_random_actions_on_random_mazes(maze, actions):
    e = MazeEnv(maze)
    e.reset(seed=0)
    s = initial_state(maze)
    n_keys = len(maze.keys)
    for a in actions:
        _, _, _, _, info = e.step(a)
        s, event = step(maze, s, a)
        assert info["event"] == event and e.state == s
        assert not _blocked(maze, s, s.pos)
        on_floor = [p for p in s.keys if p is not None]
        assert len(on_floor) + (s.carrying >= 0) == n_keys
        assert len(set(on_floor)) == len(on_floor) and s.pos not in on_floor
        assert (s.carrying < 0) or s.keys[s.carrying] is None
        in_grid = sum(isinstance(c, Key) for c in e.grid.grid)
        assert in_grid + (e.carrying is not None) == n_keys
