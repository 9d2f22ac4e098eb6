"""How fast is MazeEnv next to native Minigrid, and how cold is the first frame?

    python bench/env_speed.py [--steps 300] [--rounds 5] [--cold-runs 3]

Throughput: steps per second of one step + the full top-down frame + PNG encoding, for MazeEnv
and for Minigrid's own DoorKeyEnv at 8x8, 10x10 and 14x14. DoorKey is the native env with the
same ingredients (walls, a key, a locked door, a goal), and every size exists for it. For a fair
race our maze is the very same DoorKey layout converted to gridbench.maze/1, both envs draw
without the view-cone highlight (gridbench frames have none), and both get the same random
action sequence, so they draw the same tiles and only the dynamics differ. (Minigrid's own
``render`` still computes the agent's view mask when the highlight is off; MazeEnv skips it.) Rounds
alternate between the two envs, rates are per CPU second of this process (so other processes on
a shared machine distort them little; the wall-clock ratio is shown too) and the best round
counts. Goal: ours/native >= 0.9 at every size.

Cold first frame: a fresh Python process per measurement, first frame of the design example
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
from bench_results import record  # noqa: E402
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


def run_steps(env, actions: list[int], to_env) -> tuple[float, float]:
    """Steps per CPU second and per wall second of step + frame + PNG (reset on the goal)."""
    env.reset(seed=0)
    c0, t0 = time.process_time(), time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(to_env(a))
        png_bytes(env.render())
        if terminated or truncated:
            env.reset(seed=0)
    return len(actions) / (time.process_time() - c0), len(actions) / (time.perf_counter() - t0)


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
        "ours": max(r[0] for r in ours_rates),
        "native": max(r[0] for r in native_rates),
        "wall_ratio": max(r[1] for r in ours_rates) / max(r[1] for r in native_rates),
        "same_frame": same_frame,
    }


COLD_SNIPPET = """
import json, sys, time
sys.path.insert(0, {root!r})
import env
from env import MazeEnv
mode, tile = {mode!r}, {tile}
if mode == "without":
    e = MazeEnv("example", render_mode=None, tile_size=tile)
    e.reset(seed=0)
    draw = lambda: e.grid.render(tile, e.agent_pos, e.agent_dir, None)  # Minigrid's own cold path
elif mode == "prewarm":
    draw = lambda: env.prewarm(tile)
else:
    e = MazeEnv("example", render_mode="rgb_array", tile_size=tile)  # pre-warms once per process
    e.reset(seed=0)
    draw = e.render
c, t = time.process_time(), time.perf_counter()
draw()
print(json.dumps({{"wall_ms": (time.perf_counter() - t) * 1e3, "cpu_ms": (time.process_time() - c) * 1e3}}))
"""
COLD_MODES = {
    "without": "first frame, no pre-warm (Minigrid draws cold tiles)",
    "prewarm": "pre-warm itself (every tile, once per process)",
    "with": "first frame after MazeEnv's pre-warm",
}


def cold(mode: str) -> dict:
    """One measurement in a fresh Python process, so no tile is cached yet."""
    root = str(Path(__file__).resolve().parents[1])
    code = COLD_SNIPPET.format(root=root, mode=mode, tile=TILE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="steps per timed round")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per env and size")
    ap.add_argument("--cold-runs", type=int, default=3, help="fresh processes per cold measurement")
    args = ap.parse_args()
    console = Console()

    rows, colds = [], {mode: [] for mode in COLD_MODES}
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("throughput", total=len(SIZES))
        for size in SIZES:
            rows.append(throughput(size, args.steps, args.rounds))
            progress.advance(task)
        task = progress.add_task("cold first frame (fresh processes)", total=len(COLD_MODES) * args.cold_runs)
        for _ in range(args.cold_runs):
            for mode in COLD_MODES:
                colds[mode].append(cold(mode))
                progress.advance(task)

    table = Table(title=f"steps per CPU second of step + full frame + PNG at {TILE} px: MazeEnv (ours) "
                        f"vs DoorKeyEnv (native), best of {args.rounds} x {args.steps} steps")
    for col in ("size", "ours", "native", "ours/native", f">= {RATIO_GOAL}", "wall ratio", "same frame"):
        table.add_column(col, justify="right")
    for r in rows:
        ratio = r["ours"] / r["native"]
        table.add_row(
            f"{r['size']}x{r['size']}", f"{r['ours']:.0f}", f"{r['native']:.0f}", f"{ratio:.2f}",
            "met" if ratio >= RATIO_GOAL else "NOT met", f"{r['wall_ratio']:.2f}",
            "yes" if r["same_frame"] else "no",
        )
        record(f"env steps/CPU-s vs native Minigrid, {r['size']}x{r['size']}", f">= {RATIO_GOAL}",
               f"{r['ours']:.0f} vs {r['native']:.0f}", ratio, ratio >= RATIO_GOAL)
    console.print(table)

    cold_table = Table(title=f"cold first frame, example maze (median of {args.cold_runs} fresh processes)")
    for col in ("measure", "wall ms", "CPU ms", f"goal < {COLD_GOAL_MS:.0f} ms"):
        cold_table.add_column(col, justify="right")
    for mode, label in COLD_MODES.items():
        wall = statistics.median(m["wall_ms"] for m in colds[mode])
        cpu = statistics.median(m["cpu_ms"] for m in colds[mode])
        goal = ("met" if wall < COLD_GOAL_MS else "NOT met") if mode == "with" else ""
        if mode == "with":
            record("cold first frame (wall)", f"< {COLD_GOAL_MS:.0f} ms", f"{wall:.1f} ms", wall / COLD_GOAL_MS,
                   wall < COLD_GOAL_MS)
        cold_table.add_row(label, f"{wall:.1f}", f"{cpu:.1f}", goal)
    console.print(cold_table)


if __name__ == "__main__":
    main()
