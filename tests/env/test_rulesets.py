"""The two rulesets rule by rule (docs/maze-format.md#rulesets): each rule of the issue's table run
in both where it exists in both, each multinet-r1-only mechanism run under multinet-r1 and refused
in a minigrid maze; MazeEnv, frames, the text map and the oracle follow the maze's ruleset."""

from __future__ import annotations

import dataclasses
import random
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from maze_strategies import atlas_frame, make, obj, random_r1_maze
from test_dynamics import run_both

from env import BadInput, MazeEnv, initial_state, maze_from_dict, render_state, step, text_projection, tiles
from env.minigrid_env import build_grid
from env.oracle import StateSpace, distance_table, reference_solve, solve, tile_distance
from env.state import DOOR_LOCKED, DOOR_OPEN

L, R, F, P, T, D = range(6)
R1 = "multinet-r1"


def both(rows, **letters):
    """The same layout under each ruleset."""
    return make(rows, **letters), make(rows, ruleset=R1, **letters)


# ---- rules that exist in both rulesets: (name, rows, objects, actions, minigrid events, r1 events) ----

KEY_ROW = ["#######", "#Ak..G#", "#######"]
TWO_KEYS = ["#########", "#Akj...G#", "#########"]
KEY_DOOR = ["#######", "#Akd.G#", "#######"]

BOTH = [
    ("a key blocks (minigrid) or is walked over (r1)", KEY_ROW, {"k": obj("key")}, [F],
     ["bump"], ["moved"]),
    ("pickup takes the key in front (minigrid) or underfoot (r1)", KEY_ROW, {"k": obj("key")}, [P, F, P],
     ["pickup", "moved", "noop"], ["noop", "moved", "pickup"]),
    ("pickup while carrying swaps (minigrid), does nothing (r1)", TWO_KEYS,
     {"k": obj("key", "red"), "j": obj("key", "blue")}, [P, F, P, F, P],
     ["pickup", "moved", "swap", "bump", "swap"], ["noop", "moved", "pickup", "moved", "noop"]),
    ("the matching key unlocks; r1 uses it up", KEY_DOOR, {"k": obj("key"), "d": obj("door", state="locked")},
     [F, P, F, T, F, F, F], ["bump", "pickup", "moved", "door_unlocked", "moved", "moved", "goal"],
     ["moved", "pickup", "bump", "door_unlocked", "moved", "moved", "goal"]),
    ("a key of another colour does not unlock", KEY_DOOR,
     {"k": obj("key", "red"), "d": obj("door", "blue", state="locked")}, [P, F, T, F],
     ["pickup", "moved", "noop", "bump"], ["noop", "moved", "noop", "bump"]),
    ("toggle on an open door closes it (minigrid), does nothing (r1)", ["######", "#Ad.G#", "######"],
     {"d": obj("door", state="open")}, [T, F], ["door_closed", "bump"], ["noop", "moved"]),
    ("toggle flips the switch underfoot; OR over the gate's switches",
     ["########", "#Ast.gG#", "########"],
     {"s": obj("switch", "blue", controls=["g"]), "t": obj("switch", "red", controls=["g"]), "g": obj("gate")},
     [F, T, F, T, T, F, F, F], ["moved", "switch_on", "moved", "switch_on", "switch_off", "moved", "moved", "goal"],
     ["moved", "switch_on", "moved", "switch_on", "switch_off", "moved", "moved", "goal"]),
    ("a switch underfoot takes toggle from the door in front", ["#######", "#Asd.G#", "#######"],
     {"s": obj("switch"), "d": obj("door", state="locked")}, [F, T], ["moved", "switch_on"],
     ["moved", "switch_on"]),
    ("a gate cannot be toggled", ["######", "#Ag.G#", "######"], {"g": obj("gate")}, [T, F],
     ["noop", "bump"], ["noop", "bump"]),
    ("done changes nothing", KEY_ROW, {"k": obj("key")}, [D, D], ["noop", "noop"], ["noop", "noop"]),
]


@pytest.mark.parametrize("name,rows,letters,actions,minigrid,r1", BOTH, ids=[c[0] for c in BOTH])
def test_rule_in_both_rulesets(name, rows, letters, actions, minigrid, r1):
    mg, r1_maze = both(rows, **letters)
    assert run_both(mg, actions)[0] == minigrid
    assert run_both(r1_maze, actions)[0] == r1


def test_key_consumption_is_per_maze():
    rows, letters = KEY_DOOR, {"k": obj("key"), "d": obj("door", state="locked")}
    used = make(rows, ruleset=R1, **letters)
    kept = make(rows, ruleset=R1, rules={"key_consumption": False}, **letters)
    for maze, carrying in ((used, -1), (kept, 0)):
        _, s, _ = run_both(maze, [F, P, T])
        assert s.doors == (DOOR_OPEN,) and s.carrying == carrying and s.keys == (None,)
        assert (s.keys[0] is None and s.carrying != 0) == (carrying < 0)  # used up: neither on the floor nor held
    _, s, _ = run_both(make(rows, **letters), [P, F, T])
    assert s.carrying == 0  # minigrid keeps every key


# ---- multinet-r1 only ----------------------------------------------------------------------------------

R1_ONLY = [
    ("one-shot: on once, never off; toggle then does nothing at all",
     ["#######", "#Asg.G#", "#######"], {"s": obj("switch", controls=["g"], switch_type="one_shot"), "g": obj("gate")},
     [F, T, T, F, F, F], ["moved", "switch_on", "noop", "moved", "moved", "goal"]),
    ("hold: on exactly while stood on; toggle does nothing",
     ["########", "#Ash.gG#", "########"], {"s": obj("switch", controls=["g"], switch_type="hold"),
                                             "h": obj("switch", "red"), "g": obj("gate")},
     [F, T, F, F, F], ["moved", "noop", "moved", "moved", "bump"]),
    ("a gate open from the start stays open", ["#######", "#Asg.G#", "#######"],
     {"s": obj("switch", controls=["g"]), "g": obj("gate", open=True)}, [F, T, T, F, F, F],
     ["moved", "switch_on", "switch_off", "moved", "moved", "goal"]),
    ("a teleporter sends you to its other end, and back", ["#########", "#At....G#", "#########"],
     {"t": obj("teleporter", "purple", to=[5, 1])}, [F, F, L, L, F],
     ["teleported", "moved", "turned", "turned", "teleported"]),
    ("a one-way teleporter does not send you back", ["#########", "#At....G#", "#########"],
     {"t": obj("teleporter", "purple", to=[5, 1], bidirectional=False)}, [F, F, L, L, F],
     ["teleported", "moved", "turned", "turned", "moved"]),
    ("hazards and blocks are never entered", ["########", "#Ah.b.G#", "########"],
     {"h": {"kind": "hazard"}, "b": obj("block", "grey")}, [F, T, P], ["bump", "noop", "noop"]),
    ("a kill cell puts everything back as it was at the start", ["#######", "#Akx.G#", "#######"],
     {"k": obj("key"), "x": {"kind": "kill"}}, [F, P, F], ["moved", "pickup", "reset"]),
    ("a frozen tile swallows the next freeze_steps actions, done included", ["#######", "#Af..G#", "#######"],
     {"f": {"kind": "frozen"}}, [F, D, L, F, F, F], ["moved", "frozen", "frozen", "moved", "moved", "goal"]),
]


@pytest.mark.parametrize("name,rows,letters,actions,r1", R1_ONLY, ids=[c[0] for c in R1_ONLY])
def test_multinet_r1_mechanism(name, rows, letters, actions, r1):
    maze = make(rows, ruleset=R1, rules={"freeze_steps": 2}, **letters)
    events, final, _ = run_both(maze, actions)
    assert events == r1
    if "kill" in name:
        assert final == initial_state(maze)
    if "teleporter" in name:
        assert final.pos == ((2, 1) if "and back" in name else (5, 1))
    with pytest.raises(BadInput) as err:  # none of it exists under minigrid
        make(rows, **letters)
    assert err.value.field.startswith("objects[") and "multinet-r1" in err.value.message


def test_hold_switch_state_follows_the_agent():
    maze = make(["########", "#Ash.gG#", "########"], ruleset=R1,
                s=obj("switch", controls=["g"], switch_type="hold"), h=obj("switch", "red"), g=obj("gate"))
    s = initial_state(maze)
    seen = []
    for a in (F, F, L, L, F):
        s, _ = step(maze, s, a)
        seen.append((s.pos, s.switches[0], maze.gates_open(s.switches)[0]))
    assert seen == [((2, 1), True, True), ((3, 1), False, False), ((3, 1), False, False),
                    ((3, 1), False, False), ((2, 1), True, True)]


@pytest.mark.parametrize("field,doc_change,message", [
    ("start.dir", lambda d: d["start"].update(dir="north"), "always starts facing east"),
    ("objects[0].state", lambda d: d["objects"][0].update(state="closed"), "locked' or 'open"),
])
def test_multinet_r1_format_rules(field, doc_change, message):
    d = make(["######", "#Ad.G#", "######"], ruleset=R1, d=obj("door", state="open")).to_dict()
    doc_change(d)
    with pytest.raises(BadInput) as err:
        maze_from_dict(d, "m.json")
    assert err.value.field == field and message in err.value.message and "\n" not in str(err.value)


def test_minigrid_refuses_rules_and_objects_on_the_start_and_r1_takes_them():
    d = make(KEY_ROW, ruleset=R1, k=obj("key")).to_dict()
    d["objects"][0]["pos"] = [1, 1]
    assert maze_from_dict(d, "r1.json").keys[0].pos == (1, 1)
    mg = {k: v for k, v in d.items() if k != "ruleset"}
    with pytest.raises(BadInput) as err:
        maze_from_dict(mg, "mg.json")
    assert err.value.field == "objects[0].pos"
    with pytest.raises(BadInput) as err:
        maze_from_dict({**make(KEY_ROW, k=obj("key")).to_dict(), "rules": {"key_consumption": True}}, "mg.json")
    assert err.value.field == "rules"


def test_the_default_ruleset_leaves_content_and_checksum_as_they_were():
    m = make(KEY_ROW, k=obj("key"))
    explicit = maze_from_dict({**m.to_dict(), "ruleset": "minigrid"}, "x")
    assert "ruleset" not in m.to_dict() and '"ruleset"' not in m.to_json()
    assert explicit.checksum == m.checksum
    r1 = make(KEY_ROW, ruleset=R1, k=obj("key"))
    assert r1.checksum != m.checksum and r1.to_json().splitlines()[3] == '  "ruleset": "multinet-r1",'
    assert maze_from_dict(r1.to_dict(), "again").checksum == r1.checksum


# ---- MazeEnv, frames, text --------------------------------------------------------------------------------


def test_gym_env_checker_passes_on_a_multinet_r1_maze():
    maze = make(KEY_DOOR, ruleset=R1, k=obj("key"), d=obj("door", state="locked"))
    wrapped = gym.make("gridbench/Maze-v0", maze=maze.to_dict(), render_mode="rgb_array", tile_size=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        check_env(wrapped.unwrapped)
    e = wrapped.unwrapped
    assert isinstance(e, MazeEnv) and e.maze.ruleset == R1
    e.reset()
    for a in (F, P, T, F, F):
        e.step(a)
    _, reward, terminated, _, info = e.step(F)
    assert terminated and reward == 1.0 and info["event"] == "goal" and info["keys"] == {"k": None}
    assert e.carrying is None and np.array_equal(e.render(), render_state(maze, e.state, 16))


def _tile(frame, cell, size):
    x, y = cell
    return frame[y * size:(y + 1) * size, x * size:(x + 1) * size]


def test_the_agent_is_drawn_over_a_key_it_stands_on_and_a_used_key_is_gone():
    size = 16
    maze = make(KEY_DOOR, ruleset=R1, k=obj("key"), d=obj("door", state="locked"))
    atlas, rows = tiles.tile_atlas(size)
    s, _ = step(maze, initial_state(maze), F)
    col = tiles.AGENT_DIRS.index(0)
    want = atlas[rows["key-yellow"] * size:(rows["key-yellow"] + 1) * size, col * size:(col + 1) * size]
    assert np.array_equal(_tile(render_state(maze, s, size), (2, 1), size), want)
    for a in (P, T):
        s, _ = step(maze, s, a)
    grid, _ = build_grid(maze, s)
    assert s.carrying < 0 and not any(type(c).__name__ == "Key" for c in grid.grid)
    assert "K" not in "".join(text_projection(maze, s).splitlines()[1:4])


@pytest.mark.parametrize("ruleset", ["minigrid", R1])
def test_switch_frames_study_draws_on_and_off_alike(ruleset):
    maze = make(["#######", "#As.gG#", "#######"], ruleset=ruleset, s=obj("switch", controls=["g"]), g=obj("gate"))
    off = initial_state(maze)  # the agent beside the switch: standing on it, it hides the disc's core
    on = dataclasses.replace(off, switches=(True,))
    cell = (2, 1)
    for look, alike in (("study", True), ("distinct", False)):
        a, b = (_tile(render_state(maze, s, 16, look), cell, 16) for s in (off, on))
        assert np.array_equal(a, b) == alike
    # gridbench's own frames are today's frames: the default is the minigrid glyph
    if ruleset == "minigrid":
        assert type(build_grid(maze, on)[0].get(*cell)).__name__ == "Switch"
    else:
        assert type(build_grid(maze, on)[0].get(4, 1)).__name__ == "Door"  # the study drew gates as grey doors


@pytest.mark.parametrize("look", ["distinct", "study"])
def test_a_multinet_r1_frame_is_its_cells_tiles_from_the_atlas(look):
    size = 8
    maze = make(["##########", "#Aksgt.hG#", "#.bxf..#.#", "##########"], ruleset=R1,
                k=obj("key"), s=obj("switch", "white", controls=["g"]), g=obj("gate"),
                t=obj("teleporter", "purple", to=[6, 2]), h={"kind": "hazard"}, b=obj("block", "red"),
                x={"kind": "kill"}, f={"kind": "frozen"})
    rng = random.Random(3)
    s = initial_state(maze)
    for _ in range(40):
        frame = atlas_frame(maze, s, size, look)
        assert np.array_equal(frame, render_state(maze, s, size, look))
        s, _ = step(maze, s, rng.choice((L, R, F, F, P, T)))


def test_the_text_map_names_r1_cells_by_their_look_only_where_they_are():
    plain = text_projection(make(KEY_ROW, ruleset=R1, k=obj("key")), initial_state(make(KEY_ROW, k=obj("key"))))
    assert "ring" not in plain and "lava" not in plain
    maze = make(["########", "#Ath.fG#", "########"], ruleset=R1, t=obj("teleporter", "purple", to=[4, 1]),
                h={"kind": "hazard"}, f={"kind": "frozen"})
    text = text_projection(maze, initial_state(maze))
    assert " 1 #>O~O=G#" in text and "O ring   ~ lava   = frosted tile" in text
    assert "purple ring at (2, 1); purple ring at (4, 1); lava cell at (3, 1); frosted tile at (5, 1)." in text
    on_key = make(KEY_ROW, ruleset=R1, k=obj("key"))
    assert "standing on the yellow key" in text_projection(on_key, step(on_key, initial_state(on_key), F)[0])


# ---- the oracle under multinet-r1 ------------------------------------------------------------------------

def test_oracle_tables_and_distances_follow_the_r1_rulebook_on_random_mazes():
    rng = random.Random(2026)
    solved = explicit = 0
    for _ in range(120):
        maze = random_r1_maze(rng)
        sol, ref = solve(maze), reference_solve(maze)
        assert (sol.status, sol.optimal_actions) == (ref.status, ref.optimal_actions)
        space = StateSpace(maze)
        explicit += space.explicit
        if sol.status != "solved":
            continue
        solved += 1
        table = distance_table(maze)
        s = initial_state(maze)
        assert table.action_distance(s) == sol.optimal_actions
        for _ in range(60):
            a = rng.randrange(6)
            nxt, _ = step(maze, s, a)
            assert space.successor(s, a) == nxt
            d = table.action_distance(nxt)
            if d is not None:
                assert tile_distance(maze, nxt.pos) <= d
            s = nxt
        s = initial_state(maze)
        for a in sol.plan:  # the plan is a real path to the goal
            s = step(maze, s, a)[0]
        assert s.pos == maze.goal
    assert solved > 80 and explicit > 20


def test_an_r1_door_locks_again_only_through_a_reset():
    maze = make(["#########", "#Akd.x.G#", "#########"], ruleset=R1, k=obj("key"), d=obj("door", state="locked"),
                x={"kind": "kill"})
    events, s, _ = run_both(maze, [F, P, T, F, F, F])
    assert events == ["moved", "pickup", "door_unlocked", "moved", "moved", "reset"]
    assert s.doors == (DOOR_LOCKED,) and s.keys == ((2, 1),) and s.pos == (1, 1)
