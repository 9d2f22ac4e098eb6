"""How `gridbench report` scales with the size of a run: wall time and peak memory per episode.

    python bench/report_scale.py [--quick] [--sizes 3210 30000 150000] [--baseline-ref REF]

A real run of the built-in agents (oracle, random, explorer) on the maze pool (214 mazes x 5
repeats: 3,210 episodes, about 200k steps) is the base; ``synthesize_run`` copies its episodes
under new ids and a new run name until a run has the asked number of episodes (same shapes: the
same steps per episode, events, texts and mazes), 5,000 episodes to a Parquet file as a
compacted run stores them. The base itself (one file per episode, as ``gridbench run`` writes)
and each synthesized size are reported in their own process (``gridbench report``), wall time
and peak RSS (its ``VmHWM``, sampled) taken. The report code of ``--baseline-ref`` (default: the
last commit before the report streamed the steps) runs beside it on the sizes it can hold in
memory (``--baseline-max``), from a copy of that commit's ``analysis/`` package.

Goals on a 2-core, 24 GB machine: 150k episodes (about 10M steps) in <= 5 min with a peak RSS
<= 4 GB, and a flat cost per episode: the largest size's cost per episode at most 1.2x the
smallest's. ``--quick`` builds a small base (20 mazes, 1 repeat) and reports 60 and 600 episodes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from orchestrator.traces import EPISODES_DIR, MANIFEST, STEPS_DIR, read_manifest, trace_dataset  # noqa: E402

console = Console(stderr=True)
AGENTS = ("oracle", "random", "explorer")
# the report code before it streamed the steps (pandas over the whole steps table)
BASELINE_REF = "2f47007c7b3f"
WALL_GOAL_S = 300.0
RSS_GOAL = 4 * 1024**3
FLAT_GOAL = 1.2
EPISODES_PER_FILE = 5_000


def builtin_run(out: Path, mazes: list, repeats: int, run: str = "base") -> Path:
    """The built-in agents on ``mazes``, ``repeats`` times each (the random agent reseeded per
    repeat), played with ``run_episode`` and written as the driver writes them."""
    from rich.progress import track

    from agents import Protocol, build_agent
    from orchestrator.episode import run_episode
    from orchestrator.records import EpisodeIdentity
    from orchestrator.traces import write_episode, write_manifest

    protocol = Protocol.preset("final")
    jobs = [(m, name, r) for r in range(repeats) for m in mazes for name in AGENTS]
    for m, name, r in track(jobs, description="playing the base run", console=console):
        agent = build_agent(f"builtin/{name}", protocol, seed=r)
        identity = EpisodeIdentity(run=run, episode_id=f"{name}-{m.id}-{r}", model_name=name, model=f"builtin/{name}",
                                   condition="baseline", repeat=r, maze_id=m.id)
        write_episode(out, asyncio.run(run_episode(m, agent, protocol, identity)))
    write_manifest(out, run=run, sweep={"name": run}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["bench/report_scale.py"]})
    return out


def synthesize_run(base: Path, out: Path, episodes: int, run: str | None = None,
                   episodes_per_file: int = EPISODES_PER_FILE) -> Path:
    """A run of ``episodes`` episodes made of copies of ``base``'s: copy ``k`` suffixes every
    episode id with ``~k`` and every row gets the run name ``run`` (default: the folder's name).
    The mazes, steps, events and texts are the base's, so the shapes are real; episodes and their
    steps are written ``episodes_per_file`` to a Parquet file (the steps of one episode stay in
    one file), as a compacted run stores them."""
    run = run or out.name
    base_eps = trace_dataset(base, EPISODES_DIR).to_table()
    base_steps = trace_dataset(base, STEPS_DIR).to_table()
    if base_eps.num_rows == 0:
        raise ValueError(f"{base}: no episodes to copy")
    for sub in (EPISODES_DIR, STEPS_DIR):
        (out / sub).mkdir(parents=True, exist_ok=True)
    order = pc.sort_indices(base_steps, [("episode_id", "ascending"), ("step", "ascending")])
    base_steps = base_steps.take(order)
    base_eps = base_eps.sort_by("episode_id")
    written, part = 0, 0
    while written < episodes:
        copy = written // base_eps.num_rows
        start = written % base_eps.num_rows
        take = min(episodes_per_file, episodes - written, base_eps.num_rows - start)
        eps = base_eps.slice(start, take)
        steps = base_steps.filter(pc.is_in(base_steps["episode_id"], eps["episode_id"]))
        for table, sub in ((eps, EPISODES_DIR), (steps, STEPS_DIR)):
            table = _renamed(table, run, f"~{copy}")
            pq.write_table(table, out / sub / f"part-{part:05d}.parquet", compression="zstd")
        written += take
        part += 1
    manifest = read_manifest(base) or {}
    manifest.update(run=run)
    (out / MANIFEST).write_text(json.dumps(manifest))
    return out


def _renamed(table: pa.Table, run: str, suffix: str) -> pa.Table:
    ids = pc.binary_join_element_wise(table["episode_id"], pa.scalar(suffix), "")
    table = table.set_column(table.schema.get_field_index("episode_id"), "episode_id", ids)
    runs = pa.array([run] * table.num_rows, pa.string())
    return table.set_column(table.schema.get_field_index("run"), "run", runs)


def baseline_analysis(ref: str, into: Path) -> Path | None:
    """The ``analysis`` package of commit ``ref``, extracted under ``into`` (None without git)."""
    try:
        data = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "analysis"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        console.print(f"[yellow]no baseline: git archive {ref} failed ({e})")
        return None
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=data.stdout, check=True)
    return into


def _peak_rss(pid: int) -> int | None:
    """The process's peak RSS so far (Linux ``VmHWM``), None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def measure_report(run: Path, out: Path, analysis_root: Path | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of ``gridbench report run --out out`` in a fresh process;
    ``analysis_root`` puts another ``analysis`` package first on the path.

    The peak is the child's own high-water mark, sampled until it exits: the ``wait4`` figure
    would start from this process's RSS, which a spawned child inherits as its first maximum."""
    path = [str(analysis_root)] if analysis_root else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT), os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "report", str(run), "--out", str(out)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _peak_rss(proc.pid) or 0)
        time.sleep(0.1)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"report of {run} failed ({proc.returncode}): {err.strip()[-2000:]}")
    return wall, peak


def _gb(n: float) -> str:
    return f"{n / 1024**3:.2f} GB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small base and two small sizes")
    ap.add_argument("--sizes", type=int, nargs="*", help="episodes per synthesized run")
    ap.add_argument("--base", type=Path, help="an existing run to copy (default: play the built-in agents)")
    ap.add_argument("--baseline-ref", default=BASELINE_REF, help="git ref of the report code to compare with")
    ap.add_argument("--baseline-max", type=int, default=None, help="largest size the baseline is run on")
    ap.add_argument("--keep", type=Path, help="build the runs here and keep them (default: a temporary folder)")
    args = ap.parse_args()
    sizes = args.sizes or ([60, 600] if args.quick else [3_210, 30_000, 150_000])
    baseline_max = args.baseline_max if args.baseline_max is not None else (600 if args.quick else 3_210)

    work = args.keep or Path(tempfile.mkdtemp(prefix="gridbench-report-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        base = args.base
        if base is None:
            from env import resolve_mazes

            mazes = resolve_mazes("pool")
            base = work / "base"
            if not (base / EPISODES_DIR).is_dir():
                builtin_run(base, mazes[:20] if args.quick else mazes, 1 if args.quick else 5)
        old = baseline_analysis(args.baseline_ref, work / "baseline") if baseline_max else None
        # the base as it was written (one file per episode), then the synthesized runs (compacted)
        runs = [("one file per episode", base)]
        for n in sizes:
            run = work / f"synth-{n}"
            if not (run / EPISODES_DIR).is_dir():
                console.print(f"synthesizing {n:,} episodes")
                synthesize_run(base, run, n)
            runs.append((f"{EPISODES_PER_FILE:,} episodes per file", run))
        for layout, run in runs:
            n = trace_dataset(run, EPISODES_DIR).count_rows()
            steps = trace_dataset(run, STEPS_DIR).count_rows()
            console.print(f"reporting {n:,} episodes ({steps:,} steps, {layout})")
            row = {"layout": layout, "episodes": n, "steps": steps, "old_wall": None, "old_rss": None}
            row["wall"], row["rss"] = measure_report(run, work / "report")
            if old is not None and n <= baseline_max:
                console.print(f"reporting {n:,} episodes with {args.baseline_ref}")
                row["old_wall"], row["old_rss"] = measure_report(run, work / "report-old", old)
            rows.append(row)
            for out in ("report", "report-old"):
                shutil.rmtree(work / out, ignore_errors=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)

    table = Table(title="gridbench report: cost per episode by run size")
    for col in ("trace files", "episodes", "steps", "wall s", "ms / episode", "peak RSS", "kB RSS / episode",
                f"{args.baseline_ref} wall s", f"{args.baseline_ref} peak RSS"):
        table.add_column(col, justify="right")
    for r in rows:
        old = r["old_wall"] is not None
        table.add_row(r["layout"], f"{r['episodes']:,}", f"{r['steps']:,}", f"{r['wall']:.1f}",
                      f"{1000 * r['wall'] / r['episodes']:.2f}", _gb(r["rss"]), f"{r['rss'] / 1024 / r['episodes']:.1f}",
                      f"{r['old_wall']:.1f}" if old else "", _gb(r["old_rss"]) if old else "")
    # piped output keeps whole rows instead of rich's 80-column fallback
    (Console() if sys.stdout.isatty() else Console(width=180)).print(table)

    synth = rows[1:]
    big, small = synth[-1], synth[0]
    flat = (big["wall"] / big["episodes"]) / (small["wall"] / small["episodes"])
    record(f"report cost per episode, {big['episodes']:,} vs {small['episodes']:,} episodes",
           f"<= {FLAT_GOAL}x", f"{flat:.2f}x", flat / FLAT_GOAL, flat <= FLAT_GOAL)
    if len(synth) > 2:  # the smallest size pays mostly fixed costs (imports, figures): the next one does not
        mid = synth[-2]
        ms = [1000 * r["wall"] / r["episodes"] for r in (big, mid)]
        record(f"report cost per episode, {big['episodes']:,} vs {mid['episodes']:,} episodes", "",
               f"{ms[0]:.2f} vs {ms[1]:.2f} ms", ms[0] / ms[1], None)
    goals = big["episodes"] >= 150_000
    met = flat <= FLAT_GOAL
    for figure, value, goal, shown in (("wall time", big["wall"], WALL_GOAL_S, f"{big['wall']:.0f} s"),
                                       ("peak RSS", big["rss"], RSS_GOAL, _gb(big["rss"]))):
        goal_text = (f"<= {WALL_GOAL_S:.0f} s" if figure == "wall time" else f"<= {_gb(RSS_GOAL)}") if goals else ""
        record(f"report {figure}, {big['episodes']:,} episodes ({big['steps']:,} steps)", goal_text, shown,
               value / goal if goals else None, value <= goal if goals else None)
        met = met and (not goals or value <= goal)
    for r in rows:
        if r["old_wall"] is not None:
            what = f"report vs {args.baseline_ref}, {r['episodes']:,} episodes, {r['layout']}"
            record(f"{what}: wall time", "", f"{r['wall']:.1f} s vs {r['old_wall']:.1f} s", r["wall"] / r["old_wall"], None)
            record(f"{what}: peak RSS", "", f"{_gb(r['rss'])} vs {_gb(r['old_rss'])}", r["rss"] / r["old_rss"], None)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
