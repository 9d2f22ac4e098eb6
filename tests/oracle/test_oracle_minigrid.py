"""Imported native Minigrid envs: the oracle's plan, replayed in the NATIVE env, ends at the goal."""

from __future__ import annotations

import pytest

import env
from env.importers import import_maze
from env.importers.minigrid import native_env
from env.minigrid_env import TO_MINIGRID
from env.oracle import solve

# At most one key in each of these envs, so no optimal plan can swap keys (native pickup
# refuses while carrying); each env is tried on several seeds.
CASES = [
    (env_id, seed)
    for env_id in ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-DoorKey-8x8-v0", "MiniGrid-MultiRoom-N2-S4-v0",
                   "MiniGrid-MultiRoom-N4-S5-v1", "MiniGrid-FourRooms-v0", "MiniGrid-SimpleCrossingS9N2-v0",
                   "MiniGrid-SimpleCrossingS11N5-v0")
    for seed in (0, 1, 2, 5)
]


@pytest.mark.parametrize(("env_id", "seed"), CASES)
def test_plan_of_imported_maze_terminates_native_env_on_its_last_action(env_id, seed):
    maze = import_maze(f"minigrid:{env_id}@{seed}")
    assert maze.meta.source == f"imported:minigrid:{env_id}@{seed}"
    sol = solve(maze)
    assert sol.status == "solved"
    assert sum(1 for a in sol.plan_names if a == "pickup") <= 1
    native = native_env(env_id, max_steps=10 * len(sol.plan) + 100)
    native.reset(seed=seed)
    try:
        for i, a in enumerate(sol.plan):
            _, reward, terminated, truncated, _ = native.step(TO_MINIGRID[a])
            assert not truncated
            assert terminated == (i == len(sol.plan) - 1), (env_id, seed, i, sol.plan_names[i])
        assert reward > 0  # terminated by reaching the goal (nothing else ends these envs)
    finally:
        native.close()


def test_doorkey_imports_its_key_door_pair_as_the_chain():
    m = import_maze("minigrid:MiniGrid-DoorKey-6x6-v0@4")
    assert [o.kind for o in m.objects] == ["key", "door"] and m.doors[0].state == "locked"
    assert m.meta.chain == (("k1", "d1"),)
    assert m == import_maze("minigrid:MiniGrid-DoorKey-6x6-v0@4")  # deterministic per seed


@pytest.mark.parametrize(("spec", "says"), [
    ("minigrid:MiniGrid-LavaCrossingS9N1-v0", "lava"),
    ("minigrid:MiniGrid-NoSuchThing-v0", "not a registered"),
    ("minigrid:CartPole-v1", "not a Minigrid"),
    ("minigrid:bad spec!", "minigrid:<EnvId>"),
    ("atari:Pong", "unknown maze source"),
])
def test_bad_specs_are_one_clear_bad_input(spec, says):
    with pytest.raises(env.BadInput) as err:
        import_maze(spec)
    assert says in str(err.value) and "\n" not in str(err.value)
