"""A run at scale: trace loads, compaction, report and viewer, per episode at three sizes.

    python bench/scale.py [--quick] [--sizes 3000 30000 150000] [--per-episode-max N] [--base RUN] [--keep DIR]

The built-in agents (oracle, random, explorer) play the 214-maze pool 5 times (3,210 real
episodes, about 200k steps; ``bench/synthetic.py``); runs of 3,000, 30,000 and 150,000 episodes
(about 9.3M steps) are copies of them under new ids. At each size, every heavy step in a child
process of its own (its wall time, and its peak RSS: the child's ``VmHWM`` when it ends; a
``gridbench`` command runs in ``bench/cli_child.py``, which imports only what the ``gridbench``
script does):

1. today's layout, one file per episode and table as the driver writes them: ``pd.read_parquet``
   of both tables and both tables through ``trace_dataset`` to pandas;
2. ``gridbench compact`` of that run;
3. on the compacted run: the same four loads (the best of ``--repeats``: other work on a shared
   machine only ever slows a load down), ``gridbench report``, ``gridbench view`` (files written)
   and the viewer's index opened in headless Chromium (``bench/viewer_speed.py``'s ``browse``:
   navigation to the first rows drawn, median of ``--loads``).

Up to ``--baseline-max`` episodes (default: the smallest size) the report also runs on the
per-episode files before compaction, and, when ``--baseline-ref`` names a commit, on the compacted
run with that commit's report code (its ``analysis`` package taken from git, first on the child's
path), side by side. That package must still import with today's others, or the comparison is
reported as not run. There is no default: the commit it used to name (2f47007c7b3f, the last before
the report streamed the steps through DuckDB) reads runs through ``orchestrator.traces``, since
moved, and until 2026-12-07 the child put the repository ahead of it on the path, so that the
"baseline" it reported was today's code.

Sizes above ``--per-episode-max`` (default 30,000: building and compacting 300,000 small files
at 150,000 would add about 18 minutes, past ``bench/run_all.py``'s limit per script, and their
loads would not fit in 24 GB anyway; 0 for no limit), or whose per-episode files would not fit
on the disk, skip 1 and 2: the compacted run is written directly by the synthesizer. A load that would not fit in
the memory available (judged from the previous size's peak per row, 4 GiB kept free) is left out
and the memory it would need is reported. The times of what was skipped or left out are
extrapolated per episode from the largest size that measured them, marked ``~``.

Goals on a 2-core, 24 GB machine, at 150,000 episodes: the episodes table of the compacted run
loads in <= 1 s (both readers); ``report`` takes <= 5 min with a peak RSS <= 4 GB; ``view``
writes <= 20 files and its index opens in <= 2 s; and every cost per episode is flat: the
largest size's at most 1.25x the middle size's (the smallest pays mostly fixed costs:
interpreter start, imports, figures), apart from the time of loading the whole steps table into
pandas, which is shown with its ratio but not judged (``FLAT_REPORTED`` says why). Besides the
sizes, ``report`` runs once on the base's own 3,210 episodes (written compacted, as a copy): its peak
RSS <= 500 MB is judged whenever the base is the built-in one (not with ``--quick``). The other
goals are judged only at those sizes (150,000 episodes,
and 30,000 for the middle one); smaller runs (``--quick``: 200, 1,000 and 2,000 episodes of a
60-episode base, a few minutes) report the same figures without judging them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_results import record  # noqa: E402
from cli_child import peak_rss  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from traces import EPISODES_DIR, STEPS_DIR  # noqa: E402

if TYPE_CHECKING:  # the children measured here import no more than what they measure
    from synthetic import Base

SIZES = (3_000, 30_000, 150_000)
QUICK_SIZES = (200, 1_000, 2_000)
GOAL_SIZE, FLAT_MID_SIZE = 150_000, 30_000
# episodes per file when the synthesizer writes the compacted shape itself (a size whose
# per-episode files are not built): about what compaction's parts hold at 150k episodes
EPISODES_PER_FILE = 50_000
# the report code before it streamed the steps (pandas over the whole steps table)
DISK_MARGIN = 10 * 2**30  # left free for everyone else on the disk
MEMORY_MARGIN = 4 * 2**30  # and in memory (the machine is shared)
# the report of the base's own episodes (3,210 real ones, compacted): the peak RSS it may reach
SMALL_REPORT_RSS = 500 * 10**6
EPISODES_LOAD_S, REPORT_S, REPORT_RSS, VIEW_FILES, INDEX_OPENS_S, FLAT = 1.0, 300.0, 4 * 10**9, 20, 2.0, 1.25
READERS = ("pandas", "trace_dataset")
LAYOUTS = {"files": "one file per episode", "compacted": "compacted"}
console = Console(stderr=True)


# ---- child processes ------------------------------------------------------------------------------------
def child_load(run: str, reader: str, table: str, repeats: int) -> None:
    """Load one table of ``run`` into pandas ``repeats`` times; print the best time, rows, peak RSS."""
    import pandas as pd

    from traces import trace_dataset

    times, rows = [], 0
    for _ in range(repeats):
        t = time.perf_counter()
        frame = pd.read_parquet(Path(run) / table) if reader == "pandas" else trace_dataset(run, table).to_table().to_pandas()
        times.append(time.perf_counter() - t)
        rows = len(frame)
        del frame
    print(json.dumps({"seconds": min(times), "rows": rows, "rss": peak_rss()}))


def _env(first: Path | None = None) -> dict[str, str]:
    path = (str(first) if first else None, str(ROOT), os.environ.get("PYTHONPATH"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def load(run: Path, reader: str, table: str, repeats: int) -> dict:
    cmd = [sys.executable, __file__, "--child-load", str(run), reader, table, str(repeats)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    if done.returncode != 0:
        raise RuntimeError(f"{reader} load of {run / table} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def gridbench(*argv: str, analysis: Path | None = None) -> dict:
    """``gridbench ARGV`` in a child process: wall seconds (the whole process, as a user waits for
    it) and the child's peak RSS; ``analysis`` puts another ``analysis`` package first on the path."""
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        t = time.perf_counter()
        # a child of its own that imports only what ``gridbench`` imports (not this module's libraries)
        done = subprocess.run([sys.executable, str(Path(__file__).with_name("cli_child.py")), result.name, *argv],
                              capture_output=True, text=True, env=_env(analysis))
        wall = time.perf_counter() - t
        if done.returncode != 0:
            raise RuntimeError(f"gridbench {' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        return {"seconds": wall, "rss": json.loads(Path(result.name).read_text())["rss"]}


# ---- one size ------------------------------------------------------------------------------------------
def baseline_analysis(ref: str, into: Path) -> Path | None:
    """The ``analysis`` package of commit ``ref``, extracted under ``into`` (None without git)."""
    try:
        data = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "analysis"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        console.print(f"[yellow]no baseline report: git archive {ref} failed ({e})")
        return None
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=data.stdout, check=True)
    return into


def per_episode_fits(work: Path, episodes: int, bytes_per_episode: float) -> bool:
    # a small file takes whole 4 KiB blocks: two files per episode
    need = episodes * (bytes_per_episode + 2 * 4096)
    return shutil.disk_usage(work).free - need > DISK_MARGIN


def measure_size(base: Base, work: Path, n: int, *, per_episode: bool, previous: dict | None, repeats: int,
                 loads: int, compare_reports: bool, baseline: Path | None) -> dict:
    from synthetic import describe, synthesize
    from viewer_speed import browse

    run = work / f"run-{n}"
    shutil.rmtree(run, ignore_errors=True)
    row: dict = {"episodes": n, "per_episode": per_episode}
    t = time.perf_counter()
    if per_episode:
        row["steps"] = synthesize(base, run, n)
        files = describe(run)
        row["files"], row["files bytes"] = files["files"], files["bytes"]
        console.print(f"[bold]{n:,} episodes[/], {row['steps']:,} steps: {files['files']:,} per-episode files "
                      f"({files['bytes'] / 2**20:.0f} MiB) written in {time.perf_counter() - t:.0f} s")
        _loads(run, "files", row, previous, 1)
        if compare_reports:
            got = gridbench("report", str(run), "--out", str(work / f"report-{n}"))
            row["files report"], row["files report rss"] = got["seconds"], got["rss"]
            console.print(f"  gridbench report of the per-episode files: {got['seconds']:.0f} s, "
                          f"peak RSS {got['rss'] / 2**20:.0f} MiB")
        got = gridbench("compact", str(run))
        row["compact"], row["compact rss"] = got["seconds"], got["rss"]
        console.print(f"  gridbench compact: {got['seconds']:.0f} s, peak RSS {got['rss'] / 2**20:.0f} MiB")
    else:
        row["steps"] = synthesize(base, run, n, episodes_per_file=EPISODES_PER_FILE)
        console.print(f"[bold]{n:,} episodes[/], {row['steps']:,} steps: written compacted by the synthesizer "
                      f"in {time.perf_counter() - t:.0f} s (no per-episode files at this size)")
    files = describe(run)
    row["compacted files"], row["compacted bytes"] = files["files"], files["bytes"]
    _loads(run, "compacted", row, previous, repeats)
    out = work / f"report-{n}"
    got = gridbench("report", str(run), "--out", str(out))
    row["report"], row["report rss"] = got["seconds"], got["rss"]
    console.print(f"  gridbench report: {got['seconds']:.0f} s, peak RSS {got['rss'] / 2**20:.0f} MiB")
    if compare_reports and baseline is not None:
        try:
            got = gridbench("report", str(run), "--out", str(out), analysis=baseline)
        except RuntimeError as e:  # old report code need not import with today's packages
            why = str(e).strip().splitlines()[-1]
            console.print(f"[yellow]  gridbench report, the report code of --baseline-ref: did not run ({why})")
            record(f"scale: gridbench report, {n:,} episodes: the code of --baseline-ref", "(reported)",
                   f"did not run: {why}", None, None)
        else:
            row["baseline report"], row["baseline report rss"] = got["seconds"], got["rss"]
            console.print(f"  gridbench report, the report code before it streamed: {got['seconds']:.0f} s, "
                          f"peak RSS {got['rss'] / 2**20:.0f} MiB")
    shutil.rmtree(out, ignore_errors=True)
    view = work / f"view-{n}"
    shutil.rmtree(view, ignore_errors=True)
    got = gridbench("view", str(run), "--out", str(view))
    written = [p for p in view.rglob("*") if p.is_file()]
    row["view"], row["view rss"] = got["seconds"], got["rss"]
    row["view files"], row["view bytes"] = len(written), sum(p.stat().st_size for p in written)
    console.print(f"  gridbench view: {got['seconds']:.0f} s, {len(written)} files, peak RSS {got['rss'] / 2**20:.0f} MiB")
    times = browse(view, n, loads)
    row["index opens"], row["episode opens"] = times["index"], times["open"]
    console.print(f"  Chromium: index opens in {times['index']:.3f} s, an episode from it in {times['open']:.3f} s")
    return row


def small_report(base: Base, work: Path) -> bool:
    """``gridbench report`` of the base's episodes, each once, written compacted: its peak RSS
    against ``SMALL_REPORT_RSS``, recorded; True when met."""
    from synthetic import synthesize

    run, out = work / "run-base", work / "report-base"
    n = base.episodes.num_rows
    steps = synthesize(base, run, n, episodes_per_file=EPISODES_PER_FILE, progress=False)
    try:
        got = gridbench("report", str(run), "--out", str(out))
    finally:
        shutil.rmtree(run, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    ok = got["rss"] <= SMALL_REPORT_RSS
    console.print(f"[bold]{n:,} episodes[/] (the base, compacted), {steps:,} steps: gridbench report "
                  f"{got['seconds']:.0f} s, peak RSS {got['rss'] / 2**20:.0f} MiB ({got['rss'] / 1e6:.0f} MB)")
    record(f"scale: gridbench report peak RSS, the base's {n:,} episodes compacted ({steps:,} steps)",
           f"<= {SMALL_REPORT_RSS / 1e6:g} MB", f"{got['rss'] / 1e6:.0f} MB", got["rss"] / SMALL_REPORT_RSS, ok)
    return ok


def _loads(run: Path, layout: str, row: dict, previous: dict | None, repeats: int) -> None:
    """The four loads of one layout into ``row``. A load that would not fit in the memory available
    now (judged from the previous size's peak per row: a per-episode file's metadata stays in
    memory while the table is read, about 170 kB each) is left out, and said so."""
    for reader in READERS:
        for table in (EPISODES_DIR, STEPS_DIR):
            key = f"{layout} {reader} {table}"
            unit = "episodes" if table == EPISODES_DIR else "steps"
            if previous and f"{key} rss" in previous:
                need = previous[f"{key} rss"] / previous[unit] * row[unit]
                if need > available_memory() - MEMORY_MARGIN:
                    console.print(f"[yellow]  {LAYOUTS[layout]}, {reader} {table}: left out, it would need about "
                                  f"{need / 2**30:.1f} GiB ({available_memory() / 2**30:.1f} GiB available)")
                    row.setdefault("left out", {})[key] = need
                    continue
            got = load(run, reader, table, repeats)
            want = row[unit]
            if got["rows"] != want:
                raise RuntimeError(f"{run / table}: {got['rows']} rows loaded, {want} written")
            row[key], row[f"{key} rss"] = got["seconds"], got["rss"]
            console.print(f"  {LAYOUTS[layout]}, {reader} {table}: {got['seconds']:.3f} s, "
                          f"peak RSS {got['rss'] / 2**20:.0f} MiB")


def available_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


# ---- figures ---------------------------------------------------------------------------------------------
# (key in a size's row, what it is, unit): s seconds, B bytes, n a count
FIGURES = [
    *[(f"files {r} {t}", f"one file per episode: {r} {t} load", "s") for r in READERS for t in (EPISODES_DIR, STEPS_DIR)],
    *[(f"files {r} {t} rss", f"one file per episode: {r} {t} load, peak RSS", "B")
      for r in READERS for t in (EPISODES_DIR, STEPS_DIR)],
    ("files", "one file per episode: files", "n"),
    ("compact", "gridbench compact: wall", "s"),
    ("compact rss", "gridbench compact: peak RSS", "B"),
    *[(f"compacted {r} {t}", f"compacted: {r} {t} load", "s") for r in READERS for t in (EPISODES_DIR, STEPS_DIR)],
    *[(f"compacted {r} {t} rss", f"compacted: {r} {t} load, peak RSS", "B")
      for r in READERS for t in (EPISODES_DIR, STEPS_DIR)],
    ("compacted files", "compacted: files", "n"),
    ("report", "gridbench report: wall", "s"),
    ("report rss", "gridbench report: peak RSS", "B"),
    ("files report", "gridbench report of the per-episode files: wall", "s"),
    ("files report rss", "gridbench report of the per-episode files: peak RSS", "B"),
    ("baseline report", "gridbench report, the code of --baseline-ref (before it streamed): wall", "s"),
    ("baseline report rss", "gridbench report, the code of --baseline-ref: peak RSS", "B"),
    ("view", "gridbench view: wall", "s"),
    ("view rss", "gridbench view: peak RSS", "B"),
    ("view files", "gridbench view: files written", "n"),
    ("view bytes", "gridbench view: bytes written", "B"),
    ("index opens", "viewer index opens in Chromium", "s"),
    ("episode opens", "an episode opened from the index", "s"),
]
EXTRAPOLATED = {f"files {r} {t}" for r in READERS for t in (EPISODES_DIR, STEPS_DIR)} | {"files", "compact",
                                                                                           "compact rss"}
# per-episode costs that must not grow with the run (counts of files and the browser's times are judged whole)
FLAT_FIGURES = [k for k, _, unit in FIGURES if unit in "sB" and k not in ("index opens", "episode opens", "view bytes")]
# Shown with their ratio, not judged: the whole steps table turned into pandas objects (9.3M rows,
# about 8 GB at 150k) is memory-bound work of pyarrow and pandas, not of gridbench, and its cost
# per row rises with the heap (measured apart: the Arrow read 1.3x, the conversion to Python
# objects 1.9x per step from 30k to 150k). gridbench's own readers of the steps (report, view,
# compaction) stream them and are judged.
FLAT_REPORTED = {f"compacted {r} {STEPS_DIR}" for r in READERS}


def extrapolate(rows: dict[int, dict]) -> None:
    """Fill the per-episode layout's figures a size did not measure (its files not built, or a
    load left out for memory) from the largest size that did: its cost per episode times the
    size. ``guessed`` maps each such figure to the size it came from."""
    for n, r in rows.items():
        for key in EXTRAPOLATED - r.keys():
            measured = [m for m, x in rows.items() if key in x and key not in x.get("guessed", {})]
            if not measured:
                continue
            src = rows[max(measured)]
            # compaction streams: its memory does not follow the size
            r[key] = src[key] if key == "compact rss" else src[key] * n / src["episodes"]
            r.setdefault("guessed", {})[key] = src["episodes"]


def show(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.3f} s" if value < 10 else f"{value:.0f} s"
    if unit == "B":
        return f"{value / 2**20:,.0f} MiB"
    return f"{value:,.0f}"


def per_episode(value: float, unit: str, n: int) -> str:
    if unit == "s":
        per = value / n * 1000
        return f"{per:.3f} ms" if per < 1 else f"{per:.2f} ms"
    if unit == "B":
        return f"{value / n / 1024:.1f} kB"
    return f"{value / n:.4g}"


def cell(r: dict, key: str, unit: str) -> str:
    if key not in r:
        return "–"
    mark = "~" if key in r.get("guessed", {}) else ""
    return f"{mark}{show(r[key], unit)} ({mark}{per_episode(r[key], unit, r['episodes'])})"


def summarize(rows: dict[int, dict], sizes: list[int], baseline_ref: str) -> bool:
    """Print the table and record every figure; True when every judged goal is met."""
    big, mid = sizes[-1], sizes[-2] if len(sizes) > 1 else sizes[-1]
    judge_goals, judge_flat = big >= GOAL_SIZE, mid >= FLAT_MID_SIZE and big > mid
    r = rows[big]
    out = Console() if sys.stdout.isatty() else Console(width=220)
    table = Table(title=f"a run at scale: each figure and its cost per episode (in brackets); flat: {big:,} "
                        f"vs {mid:,} per episode; ~ extrapolated")
    table.add_column("figure")
    for n in sizes:
        table.add_column(f"{n:,} episodes ({rows[n]['steps']:,} steps)", justify="right")
    table.add_column("flat", justify="right")
    for key, label, unit in FIGURES:
        if key.startswith("baseline") and not any(key in rows[n] for n in sizes):
            continue  # no --baseline-ref: nothing was compared
        flat = _flat(rows, key, big, mid) if key in FLAT_FIGURES else None
        table.add_row(label, *[cell(rows[n], key, unit) for n in sizes], "" if flat is None else f"{flat:.2f}")
    out.print(table)
    for n in sizes:
        x = rows[n]
        if x.get("guessed"):
            why = "per-episode files not built" if not x["per_episode"] else "left out for memory"
            froms = sorted(set(x["guessed"].values()))
            out.print(f"~ at {n:,} episodes ({why}): not measured; the cost per episode at "
                      f"{' and '.join(f'{m:,}' for m in froms)} episodes times the size")
        for key, need in x.get("left out", {}).items():
            label = next(lab for k, lab, _ in FIGURES if k == key)
            out.print(f"{label} at {n:,} episodes: left out, it would need about {need / 2**30:.0f} GiB of memory")
            record(f"scale: {label}, {n:,} episodes", "(reported)",
                   f"left out: would need about {need / 2**30:.0f} GiB", None, None)

    met = True

    def goal(figure: str, goal_text: str, shown: str, value: float, limit: float) -> None:
        nonlocal met
        ok = value <= limit
        met = met and (ok or not judge_goals)
        record(figure, goal_text if judge_goals else f"({goal_text} at {GOAL_SIZE:,})", shown,
               value / limit if judge_goals else None, ok if judge_goals else None)

    where = f"{big:,} episodes ({r['steps']:,} steps)"
    for reader in READERS:
        s = r[f"compacted {reader} {EPISODES_DIR}"]
        goal(f"scale: episodes table load, compacted, {reader}, {where}", f"<= {EPISODES_LOAD_S:g} s", f"{s:.3f} s",
             s, EPISODES_LOAD_S)
    goal(f"scale: gridbench report wall, {where}", f"<= {REPORT_S / 60:g} min", f"{r['report']:.0f} s",
         r["report"], REPORT_S)
    goal(f"scale: gridbench report peak RSS, {where}", f"<= {REPORT_RSS / 1e9:g} GB", f"{r['report rss'] / 1e9:.2f} GB",
         r["report rss"], REPORT_RSS)
    goal(f"scale: gridbench view files written, {where}", f"<= {VIEW_FILES}", str(r["view files"]), r["view files"],
         VIEW_FILES)
    goal(f"scale: viewer index opens in Chromium, {where}", f"<= {INDEX_OPENS_S:g} s", f"{r['index opens']:.3f} s",
         r["index opens"], INDEX_OPENS_S)

    for key, label, unit in FIGURES:
        if key not in FLAT_FIGURES or key not in r:
            continue
        flat = _flat(rows, key, big, mid)
        guessed = {n for n in sizes if key in rows[n].get("guessed", {})}
        shown = " / ".join(f"{'~' if n in guessed else ''}{per_episode(rows[n][key], unit, n)}" for n in sizes)
        measured_both = not guessed & {mid, big}
        judged = judge_flat and measured_both and flat is not None and key not in FLAT_REPORTED
        met = met and (not judged or flat <= FLAT)
        record(f"scale: {label} per episode at {' / '.join(f'{n:,}' for n in sizes)}"
               + ("" if measured_both else " (~ extrapolated)"),
               f"<= {FLAT}x ({big:,} vs {mid:,})" if judged else "(reported)", shown, flat,
               flat <= FLAT if judged else None)
    for n in sizes:
        x = rows[n]
        for key, what in (("files report", "compacted vs one file per episode"),
                          ("baseline report", f"today's code vs {baseline_ref}'s, compacted")):
            if key in x:
                record(f"scale: gridbench report, {n:,} episodes: {what}", "(reported)",
                       f"{x['report']:.1f} s, {x['report rss'] / 1e9:.2f} GB vs {x[key]:.1f} s, "
                       f"{x[key + ' rss'] / 1e9:.2f} GB", x["report"] / x[key], None)
    built = [n for n in sizes if rows[n]["per_episode"]]
    if built:  # side by side, at the largest size measured in both layouts
        x = rows[max(built)]
        for reader in READERS:
            for t in (EPISODES_DIR, STEPS_DIR):
                a, b = x.get(f"files {reader} {t}"), x.get(f"compacted {reader} {t}")
                if a and b:
                    record(f"scale: {reader} {t} load, {x['episodes']:,} episodes: one file per episode vs compacted",
                           "(reported)", f"{a:.2f} s vs {b:.3f} s", a / b, None)
    return met


def _flat(rows: dict[int, dict], key: str, big: int, mid: int) -> float | None:
    if key not in rows[big] or key not in rows[mid] or not rows[mid][key]:
        return None
    return (rows[big][key] / big) / (rows[mid][key] / mid)


# ---- the bench ---------------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"a 60-episode base and sizes {QUICK_SIZES}")
    ap.add_argument("--sizes", type=int, nargs="+", help=f"run sizes in episodes (default {SIZES})")
    ap.add_argument("--per-episode-max", type=int, default=FLAT_MID_SIZE,
                    help=f"largest size built as per-episode files (default {FLAT_MID_SIZE}; 0: every size that "
                         "fits the disk)")
    ap.add_argument("--repeats", type=int, default=3, help="loads of each compacted table (the best counts)")
    ap.add_argument("--baseline-ref", help="git ref of report code to run side by side with today's (its analysis "
                    "package must still import with today's others; default: no comparison)")
    ap.add_argument("--baseline-max", type=int, help="largest size the baseline report runs on (default: the smallest)")
    ap.add_argument("--loads", type=int, default=3, help="browser loads of each viewer (the median counts)")
    ap.add_argument("--base", type=Path, help="a run to copy (default: play the built-in agents on the pool)")
    ap.add_argument("--keep", type=Path, help="work here and keep the base and the compacted runs")
    ap.add_argument("--child-load", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_load:
        run, reader, table, repeats = args.child_load
        child_load(run, reader, table, int(repeats))
        return 0

    sizes = sorted(args.sizes or (QUICK_SIZES if args.quick else SIZES))
    work = args.keep or Path(tempfile.mkdtemp(prefix="gridbench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    started = time.perf_counter()
    try:
        from synthetic import Base, describe, play_base

        base_dir = args.base
        if base_dir is None:
            base_dir = work / "base"
            if not (base_dir / "manifest.json").is_file():
                from env import resolve_mazes

                shutil.rmtree(base_dir, ignore_errors=True)
                mazes = resolve_mazes("pool")
                play_base(base_dir, mazes[:20] if args.quick else mazes, 1 if args.quick else 5)
        base = Base.load(base_dir)
        size = describe(base_dir)
        console.print(f"base: {base.episodes.num_rows:,} episodes, {base.steps.num_rows:,} steps")
        bytes_per_episode = size["bytes"] / base.episodes.num_rows
        baseline_max = args.baseline_max if args.baseline_max is not None else sizes[0]
        baseline = (baseline_analysis(args.baseline_ref, work / "baseline")
                    if args.baseline_ref and baseline_max else None)
        small_met = args.quick or args.base is not None or small_report(base, work)
        rows: dict[int, dict] = {}
        previous = None
        for n in sizes:
            build = (not args.per_episode_max or n <= args.per_episode_max) and \
                per_episode_fits(work, n, bytes_per_episode)
            if not build and (not args.per_episode_max or n <= args.per_episode_max):
                console.print(f"[yellow]{n:,} episodes: per-episode files would not fit on the disk; extrapolated")
            rows[n] = measure_size(base, work, n, per_episode=build, previous=rows.get(previous),
                                   repeats=args.repeats, loads=args.loads, compare_reports=n <= baseline_max,
                                   baseline=baseline)
            previous = n
            if args.keep is None:
                shutil.rmtree(work / f"run-{n}", ignore_errors=True)
            shutil.rmtree(work / f"view-{n}", ignore_errors=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    extrapolate(rows)
    met = summarize(rows, sizes, args.baseline_ref or "") and small_met
    (Console() if sys.stdout.isatty() else Console(width=220)).print(f"{(time.perf_counter() - started) / 60:.0f} min in all; load average (1, 5, 15 min) "
                  f"{' '.join(f'{x:.1f}' for x in load_before)} at the start, "
                  f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
