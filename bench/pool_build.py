"""How long building the maze pool takes, on one process and on every core.

Builds the same recipe (``pool_recipe(count, seed)``) with one worker and with one worker per
core, checks both give the same mazes, and prints seconds, mazes per second, the parallel
speed-up, the acceptance rate, and the time for the study's 214 mazes (measured with ``--full``,
else extrapolated from ``--count``) against the goal of 5 minutes.

    python bench/pool_build.py [--count 60] [--seed 2026] [--full]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from env.generator.maze_pool import build_pool  # noqa: E402

GOAL_S = 300.0
STUDY_POOL = 214


def timed(count: int, seed: int, workers: int):
    t0 = time.perf_counter()
    built = build_pool(count, seed, workers)
    return time.perf_counter() - t0, built


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--full", action="store_true", help="also build all 214 mazes on every core")
    args = ap.parse_args(argv)
    cores = os.cpu_count() or 1
    one_s, one = timed(args.count, args.seed, 1)
    all_s, every = timed(args.count, args.seed, cores)
    same = [m.checksum for m in one.mazes] == [m.checksum for m in every.mazes]
    st = every.stats
    t = Table(title=f"pool build: {args.count} mazes, seed {args.seed}")
    for col in ("workers", "seconds", "mazes/s", "speed-up vs 1"):
        t.add_column(col, justify="right")
    t.add_row("1", f"{one_s:.1f}", f"{args.count / one_s:.2f}", "1.00")
    t.add_row(str(cores), f"{all_s:.1f}", f"{args.count / all_s:.2f}", f"{one_s / all_s:.2f}")
    console = Console()
    console.print(t)
    if args.full:
        full_s, full = timed(STUDY_POOL, args.seed, cores)
        how = "measured"
        errors = len(full.errors)
    else:
        full_s = all_s * STUDY_POOL / args.count
        how = f"extrapolated from {args.count}"
        errors = len(every.errors)
    console.print(f"same mazes on 1 and {cores} workers: {same}; acceptance {st.accepted}/{st.candidates} "
                  f"= {st.acceptance:.0%} of candidates checked ({st.unplaced} layouts without a placement)")
    console.print(f"{STUDY_POOL} mazes on {cores} cores: {full_s:.0f} s ({how}); goal <= {GOAL_S:.0f} s: "
                  f"ratio {full_s / GOAL_S:.2f}")
    record("pool build, 214 mazes on all cores", f"<= {GOAL_S:.0f} s", f"{full_s:.0f} s ({how})",
           full_s / GOAL_S, full_s <= GOAL_S and same and not errors)
    record("pool build parallel speed-up", f"{cores} workers vs 1", f"{one_s / all_s:.2f}x", one_s / all_s, None)
    return 0 if same and not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
