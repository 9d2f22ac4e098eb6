"""How fast do a run's tables load, per-episode files against compacted ones?

    python bench/trace_layout.py [--episodes 3000 30000] [--keep DIR]   (default: 3000 only, a minute)

Synthesizes runs of N episodes from real ones (built-in agents on the test mazes, played once
through ``run_episode``; each synthetic episode is a copy of one of them under a new random
episode id, in files laid out exactly as the driver writes them), then measures, side by side
in one process:

- ``pd.read_parquet(RUN/episodes)`` and ``pd.read_parquet(RUN/steps)``, and the same tables
  through ``orchestrator.traces.trace_dataset``, on the per-episode files;
- ``gridbench compact`` (in a child process, for its peak memory);
- the same four loads on the compacted run.

Prints one table with each time and the time per episode; the ratio per-episode/compacted is
what compaction buys. The goal (episodes table in <= 1 s at 150k episodes, per-episode costs flat
from 3k to 150k) is judged by bench/scale.py; these figures are reported, not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agents import Protocol  # noqa: E402
from agents.builtin import make_builtin  # noqa: E402
from env import resolve_mazes  # noqa: E402
from orchestrator.episode import run_episode  # noqa: E402
from orchestrator.records import EpisodeIdentity  # noqa: E402
from orchestrator.traces import episodes_table, steps_table, trace_dataset, write_manifest  # noqa: E402

MAZES = ROOT / "tests" / "orchestrator" / "mazes"


def templates() -> list[tuple[pa.Table, pa.Table]]:
    """Real episodes (episodes row, steps) of the built-in agents on the test mazes."""
    protocol = Protocol.preset("final")
    out = []
    for maze in resolve_mazes(str(MAZES)):
        for agent in ("oracle", "random", "explorer"):
            for seed in range(2):
                identity = EpisodeIdentity(run="bench", episode_id="x", model_name=agent, model=f"builtin/{agent}",
                                           condition="default", repeat=seed, maze_id=maze.id)
                result = asyncio.run(run_episode(maze, make_builtin(agent, seed=seed), protocol, identity))
                out.append((episodes_table([result.episode]), steps_table(result.steps)))
    return out


def synthesize(run: Path, n: int, pool: list[tuple[pa.Table, pa.Table]]) -> int:
    """Write ``n`` episodes' files (as the driver lays them out); returns the number of steps."""
    (run / "episodes").mkdir(parents=True)
    (run / "steps").mkdir(parents=True)
    steps = 0
    for i in range(n):
        eid = hashlib.sha256(f"bench-{i}".encode()).hexdigest()[:20]
        ep, st = pool[i % len(pool)]
        ep = ep.set_column(ep.schema.get_field_index("episode_id"), "episode_id", pa.array([eid]))
        st = st.set_column(st.schema.get_field_index("episode_id"), "episode_id", pa.array([eid] * st.num_rows))
        pq.write_table(st, run / "steps" / f"{eid}.parquet", compression="zstd")
        pq.write_table(ep, run / "episodes" / f"{eid}.parquet", compression="none")
        steps += st.num_rows
    write_manifest(run, run="bench", sweep={"name": "bench"}, mazes={}, invocation={"command": ["bench"]})
    return steps


def timed(fn) -> tuple[float, int]:
    t0 = time.perf_counter()
    rows = len(fn())
    return time.perf_counter() - t0, rows


def loads(run: Path) -> dict[str, tuple[float, int]]:
    return {
        "pandas episodes": timed(lambda: pd.read_parquet(run / "episodes")),
        "pandas steps": timed(lambda: pd.read_parquet(run / "steps")),
        "trace_dataset episodes": timed(lambda: trace_dataset(run, "episodes").to_table().to_pandas()),
        "trace_dataset steps": timed(lambda: trace_dataset(run, "steps").to_table().to_pandas()),
    }


def compact_child(run: Path) -> tuple[float, float]:
    """``gridbench compact`` in a child process: (seconds, that child's peak RSS in MiB)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "compact", str(run)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not every child's maximum
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"compact failed: {err[-2000:].decode(errors='replace')}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, nargs="+", default=[3000])
    ap.add_argument("--keep", type=Path, default=None, help="leave the runs in this folder")
    args = ap.parse_args()
    console = Console()
    pool = templates()
    table = Table(title="trace layout: load times, per-episode files vs compacted (one process, same disk)")
    for col in ("episodes", "steps", "read", "per-episode files", "compacted", "per episode (files / compacted)",
                "ratio"):
        table.add_column(col, justify="right" if col != "read" else "left")
    base = args.keep or Path(tempfile.mkdtemp(prefix="gb-layout-"))
    try:
        for n in args.episodes:
            run = base / f"run-{n}"
            shutil.rmtree(run, ignore_errors=True)
            t0 = time.perf_counter()
            n_steps = synthesize(run, n, pool)
            console.print(f"{n} episodes, {n_steps} steps synthesized in {time.perf_counter() - t0:.1f} s")
            before = loads(run)
            wall, peak = compact_child(run)
            files = sum(1 for _ in (run / "steps").iterdir()) + sum(1 for _ in (run / "episodes").iterdir())
            console.print(f"gridbench compact: {wall:.1f} s, peak RSS {peak:.0f} MiB, {files} files after")
            after = loads(run)
            for what in before:
                (t_b, rows_b), (t_a, rows_a) = before[what], after[what]
                assert rows_a == rows_b, (what, rows_a, rows_b)
                table.add_row(str(n), str(n_steps), what, f"{t_b:.2f} s", f"{t_a:.3f} s",
                              f"{t_b / n * 1e3:.3f} / {t_a / n * 1e3:.4f} ms", f"{t_b / t_a:.0f}x")
                record(f"{what} load, {n:,} episodes: per-episode files vs compacted", "(reported)",
                       f"{t_b:.2f} s vs {t_a:.3f} s", t_b / t_a, None)
            record(f"gridbench compact, {n:,} episodes ({n_steps:,} steps)", "(reported)",
                   f"{wall:.1f} s, peak RSS {peak:.0f} MiB", None, None)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    console.print(table)


if __name__ == "__main__":
    main()
