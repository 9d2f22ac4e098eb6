"""How fast is MazeEnv next to native Minigrid, and how cold is the first frame?

    python bench/env_speed.py [--steps 600] [--rounds 5] [--cold-runs 3]

Throughput: steps per second of one step + the full top-down frame + PNG encoding, for MazeEnv
and for Minigrid's own DoorKeyEnv at 8x8, 10x10 and 14x14. DoorKey is the native env with the
same ingredients (walls, a key, a locked door, a goal), and every size exists for it. For a fair
race our maze is the very same DoorKey layout converted to gridbench.maze/1, both envs draw
without the view-cone highlight (gridbench frames have none), and both get the same random
action sequence, so they draw the same tiles and only the dynamics differ. (Minigrid's own
``render`` still computes the agent's view mask when the highlight is off; MazeEnv skips it.) Rounds
alternate between the two envs so load from other processes hits both alike; the best round
counts. Goal: ours/native >= 0.9 at every size.

Cold first frame: a fresh Python process per measurement, first frame of the DESIGN example
maze (it shows every object kind) drawn by Minigrid's own cold path, against MazeEnv's first
frame after its once-per-process pre-warm. Goal: under 20 ms after pre-warm.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from minigrid.core.world_object import Door, Goal, Key, Wall  # noqa: E402
from minigrid.envs import DoorKeyEnv  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

from env import DIRECTIONS, MazeEnv, maze_from_dict, png_bytes  # noqa: E402
from env.minigrid_env import TO_MINIGRID  # noqa: E402

SIZES = (8, 10, 14)
TILE = 32
RATIO_GOAL = 0.9
COLD_GOAL_MS = 20.0


def doorkey_as_maze(native: DoorKeyEnv, size: int) -> dict:
    """The layout ``native`` just generated, written as a gridbench maze."""
    grid = native.grid
    rows, objects, goal = [], [], None
    for y in range(grid.height):
        row = ""
        for x in range(grid.width):
            cell = grid.get(x, y)
            row += "#" if isinstance(cell, Wall) else "."
            if isinstance(cell, Goal):
                goal = [x, y]
            elif isinstance(cell, Key):
                objects.append({"id": "k1", "kind": "key", "color": cell.color, "pos": [x, y]})
            elif isinstance(cell, Door):
                state = "locked" if cell.is_locked else ("open" if cell.is_open else "closed")
                objects.append({"id": "d1", "kind": "door", "color": cell.color, "pos": [x, y], "state": state})
        rows.append(row)
    return {
        "format": "gridbench.maze/1",
        "id": f"doorkey-{size}x{size}",
        "grid": rows,
        "start": {"pos": [int(v) for v in native.agent_pos], "dir": DIRECTIONS[int(native.agent_dir)]},
        "goal": goal,
        "objects": objects,
    }


def run_steps(env, actions: list[int], to_env) -> float:
    """Steps per second of step + frame + PNG over ``actions`` (reset on the goal)."""
    env.reset(seed=0)
    t0 = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(to_env(a))
        png_bytes(env.render())
        if terminated or truncated:
            env.reset(seed=0)
    return len(actions) / (time.perf_counter() - t0)


def throughput(size: int, steps: int, rounds: int) -> dict:
    # Minigrid would truncate at 10 x size^2 steps and diverge from ours, which never truncates
    native = DoorKeyEnv(size=size, max_steps=10**9, render_mode="rgb_array", tile_size=TILE, highlight=False)
    native.reset(seed=0)
    maze = maze_from_dict(doorkey_as_maze(native, size), f"doorkey-{size}x{size}")
    ours = MazeEnv(maze, render_mode="rgb_array", tile_size=TILE)
    ours.reset(seed=0)
    native.reset(seed=0)
    same_frame = bool(np.array_equal(ours.render(), native.render()))
    actions = np.random.default_rng(size).integers(0, 6, size=steps).tolist()
    # warm both tile caches and code paths before timing
    run_steps(ours, actions[:50], int)
    run_steps(native, actions[:50], TO_MINIGRID.__getitem__)
    ours_rates, native_rates = [], []
    for _ in range(rounds):
        ours_rates.append(run_steps(ours, actions, int))
        native_rates.append(run_steps(native, actions, TO_MINIGRID.__getitem__))
    return {
        "size": size,
        "ours": max(ours_rates),
        "native": max(native_rates),
        "same_frame": same_frame,
    }


COLD_SNIPPET = """
import json, sys, time
sys.path.insert(0, {root!r})
import env
from env import MazeEnv
mode = {mode!r}
if mode == "without":
    e = MazeEnv("example", render_mode=None, tile_size={tile})
    e.reset(seed=0)
    t = time.perf_counter()
    e.grid.render({tile}, e.agent_pos, e.agent_dir, None)  # Minigrid's own cold path
    print(json.dumps({{"first_frame_ms": (time.perf_counter() - t) * 1e3}}))
else:
    t = time.perf_counter()
    e = MazeEnv("example", render_mode="rgb_array", tile_size={tile})  # pre-warms once
    build_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    env.prewarm({tile})
    again_ms = (time.perf_counter() - t) * 1e3
    e.reset(seed=0)
    t = time.perf_counter()
    e.render()
    print(json.dumps({{"first_frame_ms": (time.perf_counter() - t) * 1e3,
                       "build_ms": build_ms, "again_ms": again_ms}}))
"""


def cold(mode: str) -> dict:
    root = str(Path(__file__).resolve().parents[1])
    code = COLD_SNIPPET.format(root=root, mode=mode, tile=TILE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def prewarm_cost() -> float:
    """Pre-warm alone, in a fresh process: constructor with rendering minus without."""
    root = str(Path(__file__).resolve().parents[1])
    code = (
        f"import sys, time, json; sys.path.insert(0, {root!r}); import env\n"
        f"t = time.perf_counter(); env.prewarm({TILE}); print(json.dumps((time.perf_counter() - t) * 1e3))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600, help="steps per timed round")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per env and size")
    ap.add_argument("--cold-runs", type=int, default=3, help="fresh processes per cold measurement")
    args = ap.parse_args()
    console = Console()

    rows, cold_without, cold_with, warm_cost = [], [], [], []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("throughput", total=len(SIZES))
        for size in SIZES:
            rows.append(throughput(size, args.steps, args.rounds))
            progress.advance(task)
        task = progress.add_task("cold first frame (fresh processes)", total=3 * args.cold_runs)
        for _ in range(args.cold_runs):
            cold_without.append(cold("without")["first_frame_ms"])
            progress.advance(task)
            cold_with.append(cold("with"))
            progress.advance(task)
            warm_cost.append(prewarm_cost())
            progress.advance(task)

    table = Table(title=f"step + full frame + PNG, tile {TILE} px (best of {args.rounds} x {args.steps} steps)")
    for col in ("size", "MazeEnv steps/s", "DoorKeyEnv steps/s", "ours/native", f"goal >= {RATIO_GOAL}",
                "same first frame"):
        table.add_column(col, justify="right")
    for r in rows:
        ratio = r["ours"] / r["native"]
        table.add_row(
            f"{r['size']}x{r['size']}", f"{r['ours']:.0f}", f"{r['native']:.0f}", f"{ratio:.2f}",
            "met" if ratio >= RATIO_GOAL else "NOT met", "yes" if r["same_frame"] else "no",
        )
    console.print(table)

    with_ms = statistics.median(c["first_frame_ms"] for c in cold_with)
    cold_table = Table(title=f"cold first frame, example maze (median of {args.cold_runs} fresh processes)")
    for col in ("measure", "ms", f"goal < {COLD_GOAL_MS:.0f} ms"):
        cold_table.add_column(col, justify="right")
    cold_table.add_row("first frame, Minigrid's cold tiles", f"{statistics.median(cold_without):.1f}", "")
    cold_table.add_row("first frame after pre-warm", f"{with_ms:.2f}", "met" if with_ms < COLD_GOAL_MS else "NOT met")
    cold_table.add_row("pre-warm itself (once per process)", f"{statistics.median(warm_cost):.1f}", "")
    cold_table.add_row("MazeEnv constructor incl. pre-warm", f"{statistics.median(c['build_ms'] for c in cold_with):.1f}", "")
    cold_table.add_row("second pre-warm call (no-op)", f"{statistics.median(c['again_ms'] for c in cold_with):.3f}", "")
    console.print(cold_table)


if __name__ == "__main__":
    main()
