"""How fast are 3D frames next to 2D ones, and how cold is the first?

    python bench/render3d_speed.py [--steps 200] [--rounds 3] [--cold-runs 3] [--quick]

Throughput: steps per second of one step of the reference dynamics + the frame a model is shown +
PNG encoding, for the 2D frame (``minigrid``, 32 px per cell) and each 3D camera at resolution
``grid`` (the same pixels: 32 per cell of the larger side), on a study maze of 8x8 (256 px),
10x10 (320 px) and 14x14 (448 px). Both draw every frame afresh: the 3D frame cache is emptied
before each step (a run's prompts hit it whenever a state recurs, so a real episode is faster).
The same random actions drive every arm; rounds alternate between the arms and the best round
counts. Rates are per CPU second of this process, all its threads counted (Mesa's software
renderer draws on several): that is what a frame costs a shared machine, and other processes on
it distort it little. The wall-clock rates are shown too. Goal: the 3D rate at least half the 2D
rate at 256 px, for every camera.

Cold start: a fresh Python process per measurement, no ``MUJOCO_GL`` and no display set: the
first 3D frame (importing MuJoCo, the process's GL context, the maze's scene, the frame), then
the first frame of a second maze (its scene compiled in the warm context).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

from env import initial_state, png_bytes, resolve_maze, step  # noqa: E402
from env.render import MINIGRID, RenderSettings, frame  # noqa: E402
from env.render3d import CAMERAS  # noqa: E402
from env.render3d.renderer import renderer  # noqa: E402

MAZES = {8: "study/r1_M2_8x8_corridor_sg_0", 10: "study/r1_M2_10x10_corridor_sg_1",
         14: "study/r1_D2_14x14_dense_wrong_ky_kr_inactive_sb_sg_1"}
RATIO_GOAL = 0.5
GOAL_SIDE = 256


def arms() -> dict[str, RenderSettings]:
    out = {"2d": MINIGRID}
    out.update({camera: RenderSettings(backend="mujoco3d", camera=camera) for camera in CAMERAS})
    return out


def run_steps(maze, actions: list[int], render: RenderSettings) -> tuple[float, float]:
    """Steps per CPU second and per wall second of step + frame + PNG, every frame drawn afresh."""
    s = initial_state(maze)
    forget = renderer().forget_frames if render.is_3d else (lambda: None)
    c0, t0 = time.process_time(), time.perf_counter()
    for a in actions:
        s, event = step(maze, s, a)
        forget()
        png_bytes(frame(maze, s, 32, "distinct", render))
        if event == "goal":
            s = initial_state(maze)
    return len(actions) / (time.process_time() - c0), len(actions) / (time.perf_counter() - t0)


def throughput(size: int, steps: int, rounds: int) -> dict:
    maze = resolve_maze(MAZES[size])
    actions = np.random.default_rng(size).integers(0, 5, size=steps).tolist()
    settings = arms()
    for render in settings.values():  # warm every arm: the scene compiled, the tiles drawn
        run_steps(maze, actions[:20], render)
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in settings}
    for _ in range(rounds):
        for name, render in settings.items():
            rates[name].append(run_steps(maze, actions, render))
    side = settings["top_down"].side(maze)
    return {"size": size, "side": side, **{name: max(r[0] for r in rs) for name, rs in rates.items()},
            "wall": {name: max(r[1] for r in rs) for name, rs in rates.items()}}


COLD_SNIPPET = """
import json, sys, time
t = time.perf_counter()
sys.path.insert(0, {root!r})
from env import initial_state, resolve_maze
from env.render3d import frame3d
a, b = resolve_maze({first!r}), resolve_maze({second!r})
t1 = time.perf_counter()
frame3d(a, initial_state(a), "first_person")
t2 = time.perf_counter()
frame3d(b, initial_state(b), "first_person")
t3 = time.perf_counter()
print(json.dumps({{"first_ms": (t2 - t1) * 1e3, "second_maze_ms": (t3 - t2) * 1e3, "imports_ms": (t1 - t) * 1e3}}))
"""


def cold() -> dict:
    code = COLD_SNIPPET.format(root=str(ROOT), first=MAZES[8], second=MAZES[10])
    environ = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "PYOPENGL_PLATFORM")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="steps per timed round")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per arm and size")
    ap.add_argument("--cold-runs", type=int, default=3, help="fresh processes for the cold start")
    ap.add_argument("--quick", action="store_true", help="the 8x8 maze only, 100 steps, 2 rounds, 2 cold runs")
    args = ap.parse_args()
    sizes = [8] if args.quick else sorted(MAZES)
    if args.quick:
        args.steps, args.rounds, args.cold_runs = 100, 2, 2
    console = Console()
    rows, colds = [], []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("throughput", total=len(sizes))
        for size in sizes:
            rows.append(throughput(size, args.steps, args.rounds))
            progress.advance(task)
        task = progress.add_task("cold start (fresh processes)", total=args.cold_runs)
        for _ in range(args.cold_runs):
            colds.append(cold())
            progress.advance(task)

    cameras = list(CAMERAS)
    table = Table(title=f"steps per CPU second of step + frame + PNG, every frame drawn afresh "
                        f"(best of {args.rounds} x {args.steps} steps); wall-clock ratio after the slash")
    for col in ("maze", "side px", "2d", *cameras, *(f"{c}/2d" for c in cameras)):
        table.add_column(col, justify="right")
    for r in rows:
        ratios = {c: r[c] / r["2d"] for c in cameras}
        wall = {c: r["wall"][c] / r["wall"]["2d"] for c in cameras}
        table.add_row(f"{r['size']}x{r['size']}", str(r["side"]), f"{r['2d']:.0f}", *(f"{r[c]:.0f}" for c in cameras),
                      *(f"{ratios[c]:.2f} / {wall[c]:.2f}" for c in cameras))
        for c in cameras:
            goal = r["side"] == GOAL_SIDE
            record(f"3D {c} steps/CPU-s vs 2D, {r['side']} px", f">= {RATIO_GOAL}" if goal else "",
                   f"{r[c]:.0f} vs {r['2d']:.0f}", ratios[c], ratios[c] >= RATIO_GOAL if goal else None)
    console.print(table)

    cold_table = Table(title=f"cold start, no MUJOCO_GL and no display (median of {args.cold_runs} fresh processes)")
    for col in ("measure", "ms"):
        cold_table.add_column(col, justify="right")
    for key, label in (("imports_ms", "imports (env, two mazes)"),
                       ("first_ms", "first 3D frame: MuJoCo, GL context, scene, frame"),
                       ("second_maze_ms", "first frame of a second maze (its scene)")):
        value = statistics.median(c[key] for c in colds)
        cold_table.add_row(label, f"{value:.0f}")
        if key != "imports_ms":
            record(f"3D cold start: {label}", "", f"{value:.0f} ms", None, None)
    console.print(cold_table)


if __name__ == "__main__":
    main()
