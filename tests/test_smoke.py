import subprocess
import sys

import gymnasium as gym

import env
from env.oracle import solve


def test_design_example_needs_19_actions_and_the_env_agrees():
    maze = env.resolve_maze("example")
    sol = solve(maze)
    assert sol.status == "solved" and sol.optimal_actions == 19
    e = gym.make("gridbench/Maze-v0", maze="example", render_mode="rgb_array")
    e.reset()
    events = []
    for i, a in enumerate(sol.plan):
        _, _, terminated, _, info = e.step(a)
        events.append(info["event"])
        assert terminated == (i == len(sol.plan) - 1)
    assert events[-1] == "goal" and "door_unlocked" in events and "switch_on" in events


def test_cli_bad_maze_is_one_line_exit_2():
    r = subprocess.run([sys.executable, "-m", "app.cli", "maze", "show", "no-such-maze"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "no-such-maze" in r.stderr



def test_import_env_is_light_and_the_gym_id_comes_with_gymnasium_in_either_order():
    """``import env`` pulls in neither gymnasium nor Minigrid; gymnasium imported after it (or
    before, as the README does) knows ``gridbench/Maze-v0``."""
    make = "import gymnasium as gym\nprint(gym.make(env.ENV_ID, maze='example').reset()[1]['event'])\n"
    env_first = ("import sys, env, env.maze, env.state, env.errors\n"
                 "assert not {'gymnasium', 'minigrid'} & set(sys.modules)\n") + make
    gymnasium_first = "import gymnasium\nimport env\n" + make
    for code in (env_first, gymnasium_first):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip() == "start", r.stderr
