"""DROP, the seventh action of the study's revised harness (docs/protocol.md, "The revised
harness"): its dynamics under each ruleset, the oracle's DROP edge (there only when DROP is
offered, and never shortening an optimal plan on the study's mazes), and the checks with it."""

from __future__ import annotations

import pytest
from maze_strategies import make, obj

import env
from env.checks import run_checks
from env.minigrid_env import MazeEnv
from env.oracle import DistanceTable, action_distance, reference_solve, solve
from env.state import DROP, FORWARD, LEFT, PICKUP, RIGHT, initial_state, step

R1 = "multinet-r1"


def play(maze, actions):
    s, events = initial_state(maze), []
    for a in actions:
        s, event = step(maze, s, a)
        events.append(event)
    return s, events


# ---- dynamics -------------------------------------------------------------------------------


def test_study_drop_puts_the_key_on_the_agents_own_plain_floor_cell():
    maze = make(["#######", "#Ak..G#", "#######"], ruleset=R1, k=obj("key"))
    s, events = play(maze, [FORWARD, PICKUP, FORWARD, DROP])
    assert events == ["moved", "pickup", "moved", "drop"]
    assert s.carrying == -1 and s.keys == ((3, 1),) and s.pos == (3, 1)
    # picked up again where it was put down
    s, event = step(maze, s, PICKUP)
    assert event == "pickup" and s.carrying == 0


def test_study_drop_does_nothing_off_plain_floor_or_with_empty_hands():
    # empty hands
    maze = make(["#####", "#A.G#", "#####"], ruleset=R1)
    assert play(maze, [DROP])[1] == ["noop"]
    # carrying the key onto a switch, then into an open door's cell: DROP puts nothing down there
    maze = make(["########", "#Aksd.G#", "########"], ruleset=R1, k=obj("key"), s=obj("switch", controls=[]),
                d=obj("door", color="red", state="open"))
    s, events = play(maze, [FORWARD, PICKUP, FORWARD, DROP, FORWARD, DROP])
    assert events == ["moved", "pickup", "moved", "noop", "moved", "noop"] and s.carrying == 0
    # standing on another key: no room for a second one
    maze = make(["#######", "#Akl.G#", "#######"], ruleset=R1, k=obj("key"), l=obj("key", color="red"))
    s, events = play(maze, [FORWARD, PICKUP, FORWARD, DROP])
    assert events[-1] == "noop" and s.carrying == 0


def test_study_drop_refuses_the_later_tiles():
    # on ice, once the freeze has run out, the study's rulebook allows no DROP; on the floor past it
    maze = make(["#######", "#Akf.G#", "#######"], ruleset="multinet-pr57", rules={"freeze_steps": 1},
                k=obj("key"), f={"kind": "frozen"})
    s, events = play(maze, [FORWARD, PICKUP, FORWARD, DROP, DROP, FORWARD, DROP])
    assert events == ["moved", "pickup", "froze", "frozen", "noop", "moved", "drop"] and s.keys == ((4, 1),)


def both(maze, actions):
    """Play ``actions`` through MazeEnv (drop=True: Minigrid's own drop) and the reference step;
    they must agree at every step. Returns the final state and the events."""
    e = MazeEnv(maze, drop=True)
    e.reset(seed=0)
    s, events = initial_state(maze), []
    for a in actions:
        _, _, _, _, info = e.step(a)
        s, event = step(maze, s, a)
        assert info["event"] == event and e.state == s
        events.append(event)
    return s, events


def test_minigrid_drop_puts_the_key_on_the_empty_cell_in_front_as_minigrid_does():
    maze = make(["#######", "#Ak...#", "#....G#", "#######"], k=obj("key"))
    # the key goes back in front; facing the floor below, it goes there; facing the wall, nowhere
    s, events = both(maze, [PICKUP, DROP, PICKUP, RIGHT, DROP, PICKUP, RIGHT, DROP])
    assert events == ["pickup", "drop", "pickup", "turned", "drop", "pickup", "turned", "noop"]
    assert s.keys == (None,) and s.carrying == 0
    with pytest.raises(ValueError):
        MazeEnv(maze).step(DROP)  # offered only to an env made with drop=True


def test_minigrid_drop_refuses_a_door_a_switch_and_the_goal_in_front():
    maze = make(["#######", "#Akd.G#", "#s....#", "#######"], k=obj("key"),
                d=obj("door", state="open"), s=obj("switch", controls=[]))
    # facing the switch below the start, then the open door ahead
    s, events = both(maze, [PICKUP, RIGHT, DROP, LEFT, FORWARD, DROP])
    assert events == ["pickup", "turned", "noop", "turned", "moved", "noop"] and s.carrying == 0
    maze = make(["#####", "#AkG#", "#####"], k=obj("key"))
    s, events = both(maze, [PICKUP, FORWARD, DROP])
    assert events == ["pickup", "moved", "noop"] and s.carrying == 0


# ---- the oracle's DROP edge -----------------------------------------------------------------


def test_no_search_takes_drop_unless_it_is_offered():
    maze = env.resolve_maze("study/r1_M1_8x8_corridor_kr_0")
    plain = solve(maze)
    assert DROP not in plain.plan
    with_drop = solve(maze, drop=True)
    assert with_drop.optimal_actions == plain.optimal_actions
    assert with_drop.states_explored > plain.states_explored  # the DROP edge was searched
    assert reference_solve(maze, drop=True).optimal_actions == plain.optimal_actions


# the mazes of the study's sets: DROP never shortens an optimal plan on them (the study's own
# regression test held the same on its panel)
STUDY_SETS = ("study", "study-heldout", "study-m7m10")


@pytest.mark.slow
@pytest.mark.parametrize("name", STUDY_SETS)
def test_drop_never_shortens_an_optimal_plan_on_the_study_mazes(name):
    mazes = env.resolve_mazes(name)
    assert mazes
    for maze in mazes:
        plain, dropping = solve(maze), solve(maze, drop=True)
        assert plain.status == "solved" and dropping.status == "solved", maze.id
        assert dropping.optimal_actions == plain.optimal_actions, maze.id


DECOY = "study/r1_D2_8x8_corridor_wrong_ky_inactive_sb_sg_kr_1"  # kY is its wrong-colour key


def decoy_taken(maze):
    """The state after walking onto the yellow decoy key and taking it."""
    s, events = play(maze, [RIGHT, FORWARD, FORWARD, PICKUP])
    assert events[-1] == "pickup" and maze.keys[s.carrying].id == "kY"
    return s


def test_a_decoy_key_is_final_without_drop_and_recoverable_with_it():
    maze = env.resolve_maze(DECOY)
    s = decoy_taken(maze)
    assert action_distance(maze, s) is None  # R1: no swap, no drop, the red key can never be taken
    d = action_distance(maze, s, drop=True)
    assert d is not None and d == 1 + action_distance(maze, step(maze, s, DROP)[0], drop=True)
    # the distance table with the DROP edge agrees with a fresh search from that state
    assert d == solve(maze, s, drop=True).optimal_actions == reference_solve(maze, s, drop=True).optimal_actions
    assert DistanceTable(maze, drop=True).action_distance(initial_state(maze)) == solve(maze).optimal_actions


def test_distractor_safety_fails_for_a_decoy_key_only_without_drop():
    maze = env.resolve_maze(DECOY)
    plain = {(r.check, r.object_id): r.passed for r in run_checks(maze)}
    dropping = {(r.check, r.object_id): r.passed for r in run_checks(maze, drop=True)}
    assert plain[("distractor_safety", "kY")] is False
    assert dropping == {("reachable", None): True, ("mechanism_necessity", None): True,
                        ("chain_ordering", None): True, ("distractor_safety", None): True}
