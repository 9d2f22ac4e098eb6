"""How the trace viewer scales with the run, side by side with the page-per-episode layout.

    python bench/viewer_speed.py [--quick] [--sizes N ...] [--loads 3] [--keep DIR]

Runs are synthesized from real episodes (``bench/synthetic.py``): the built-in agents (oracle,
random, explorer) play the held-out mazes through ``run_episode``; their rows are then copied, each
copy with a new episode id, and model names, conditions and repeats spread out for the list's
filters, into Parquet files of 10,000 episodes each (the shape of a compacted run), steps unchanged
(about 60 an episode). Sizes: 3k, 30k and 150k episodes
(``--quick``: 1k, 5k and 20k). At each size, each in a child process of its own:

- ``build_view``: wall time, time per episode, files written, bytes, the largest steps file, and
  the peak memory (max RSS) of the process;
- headless Chromium (Debian's ``chromium``, a fresh context for each load): the index from
  navigation to its first rendered rows (median of ``--loads``); an episode opened from the index
  (click to its first frame drawn); an episode's link opened cold (navigation to its first frame,
  the index data included); one step forward (key press to the new frame).

The previous layout (one HTML page per episode and one PNG per distinct state: the viewer at
``OLD_VIEWER_COMMIT``, taken from this repository's git history) is measured at the smallest size
only, as it is far too slow for the largest; its time and files per episode are extrapolated to the
largest size and printed as extrapolated. Copies share their states, so the old layout draws fewer
PNGs here than on a run of distinct episodes (a user's 3,210-episode run: 20,507 PNGs, 44 ms per
episode), which flatters it.

The viewer's goals at scale (files written, the index opening, a flat cost per episode) are judged
by ``bench/scale.py`` on the same runs as the report's; this script reports what is the viewer's
own: the earlier layout against today's, and opening, sorting, filtering and stepping in the browser.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from synthetic import play_base, synthesize  # noqa: E402

SIZES = (3_000, 30_000, 150_000)
QUICK_SIZES = (1_000, 5_000, 20_000)
EPISODES_PER_FILE = 10_000
OLD_VIEWER_COMMIT = "7481a21f7e3bac04fba5901015d6aabee1342fa9"  # the last one with a page per episode
OLD_VIEWER_FILES = (
    "viewer.py", "templates/index.html", "templates/episode.html", "static/index.js", "static/episode.js",
    "static/viewer.css", "static/play.js", "static/play.css",
)
console = Console(stderr=True)


# ---- runs ----------------------------------------------------------------------------------------------
def template_run(folder: Path) -> Path:
    """Real episodes: every built-in agent on every held-out maze, twice (random with two seeds)."""
    from env import BadInput, resolve_mazes

    try:
        mazes = resolve_mazes("heldout")
    except BadInput:
        mazes = resolve_mazes("example")
    return play_base(folder, mazes, 2, condition="final", progress=False)


def old_viewer(folder: Path) -> Path | None:
    """The page-per-episode viewer from git history, as a package ``gridbench_old_viewer`` in ``folder``."""
    package = folder / "gridbench_old_viewer"
    for name in OLD_VIEWER_FILES:
        got = subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD_VIEWER_COMMIT}:app/web/{name}"],
                             capture_output=True)
        if got.returncode != 0:
            return None
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(got.stdout)
    viewer = package / "viewer.py"
    # the run format it read has since moved to traces/: the same names, from there
    viewer.write_text(viewer.read_text()
                      .replace('resources.files("app.web")', 'resources.files("gridbench_old_viewer")')
                      .replace("from orchestrator.schema import", "from traces._schema import")
                      .replace("from orchestrator.traces import", "from traces import"))
    (package / "__init__.py").write_text("")
    return folder


# ---- child processes ----------------------------------------------------------------------------------
def child_build(run: str, out: str, old: str | None) -> None:
    """Build one viewer in this process and print what it cost as JSON."""
    if old:
        sys.path.insert(0, old)
        from gridbench_old_viewer.viewer import build_view
    else:
        from app.web.viewer import build_view
    t = time.perf_counter()
    build_view(run, out, progress=False)
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def build(run: Path, out: Path, old: Path | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child-build", str(run), str(out)] + (["--old", str(old)] if old else [])
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise RuntimeError(f"building {out} failed: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    files = [p for p in out.rglob("*") if p.is_file()]
    steps_files = [p for p in files if re.fullmatch(r"steps-\d+\.js", p.name)]
    result.update(files=len(files), bytes=sum(p.stat().st_size for p in files),
                  largest_steps_file=max((p.stat().st_size for p in steps_files), default=0),
                  pngs=sum(p.suffix == ".png" for p in files))
    return result


def child_browser(out: str, episodes: int, loads: int, old: bool) -> None:
    """Time the bundle in ``out`` in headless Chromium and print the times as JSON."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    index = (Path(out) / "index.html").as_uri()
    rng = random.Random(0)
    times: dict[str, list[float]] = {"index": [], "sort": [], "filter": [], "open": [], "cold": [], "step": []}
    ready_index = "body[data-ready='1']" if old else "body[data-ready='index']"
    ready_episode = "body[data-ready='1']" if old else "body[data-ready='episode']"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=args)
        for load in range(loads):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.goto(index)
            page.wait_for_selector(ready_index, timeout=120_000)
            # the page notes when its first rows were painted (ms from navigation)
            times["index"].append(int(page.get_attribute("body", "data-ready-ms")) / 1000)
            # both pages sort and filter in the event handler: the rows are there when it returns
            t = time.perf_counter()
            page.click("th[data-col='cost_usd']")
            times["sort"].append(time.perf_counter() - t)
            label = page.locator("#f-model_name option").nth(1).inner_text()
            t = time.perf_counter()
            page.select_option("#f-model_name", label=label)
            times["filter"].append(time.perf_counter() - t)
            row = rng.randrange(page.locator("#rows tr").count())
            t = time.perf_counter()
            page.click(f"#rows tr:nth-child({row + 1}) .c-maze_id a")
            page.wait_for_selector(ready_episode, timeout=120_000)
            times["open"].append(time.perf_counter() - t)
            if load == 0:
                for _ in range(min(30, int(page.get_attribute("#slider", "max")))):
                    label = page.inner_text("#step-label")
                    t = time.perf_counter()
                    page.keyboard.press("ArrowRight")
                    if old:  # the old page loads a PNG: polled from here (its CSP refuses page functions)
                        while not page.eval_on_selector("#frame", "img => img.complete && img.naturalWidth > 0"):
                            pass
                    elif page.inner_text("#step-label") == label:
                        raise AssertionError("the step did not change")
                    times["step"].append(time.perf_counter() - t)
            context.close()
            if not old:
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = context.new_page()
                page.goto(f"{index}#e={rng.randrange(episodes)}")
                page.wait_for_selector(ready_episode, timeout=120_000)
                times["cold"].append(int(page.get_attribute("body", "data-ready-ms")) / 1000)
                context.close()
        browser.close()
    print(json.dumps({k: statistics.median(v) if v else None for k, v in times.items()}))


def browse(out: Path, episodes: int, loads: int, old: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--child-browser", str(out), str(episodes), str(loads)] + (["--old"] if old else [])
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise RuntimeError(f"browsing {out} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- the bench ----------------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", help=f"run sizes in episodes (default {SIZES})")
    ap.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    ap.add_argument("--loads", type=int, default=3, help="browser loads of each size (the median counts)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the runs and their viewers here")
    ap.add_argument("--child-build", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--child-browser", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--old", nargs="?", const="1", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_build:
        return child_build(*args.child_build, args.old)
    if args.child_browser:
        out, episodes, loads = args.child_browser
        return child_browser(out, int(episodes), int(loads), bool(args.old))

    sizes = sorted(args.sizes or (QUICK_SIZES if args.quick else SIZES))
    root = args.keep or Path(tempfile.mkdtemp(prefix="viewer-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        template = template_run(root / "template")
        console.print(f"template run: {len(list((template / 'episodes').glob('*.parquet')))} real episodes "
                      f"in {time.perf_counter() - t:.1f} s")
        rows: dict[int, dict] = {}
        for size in sizes:
            run = root / f"run{size}"
            t = time.perf_counter()
            steps = synthesize(template, run, size, episodes_per_file=EPISODES_PER_FILE, vary_labels=True,
                               progress=False)
            console.print(f"{size} episodes, {steps} steps synthesized in {time.perf_counter() - t:.1f} s")
            built = build(run, root / f"view{size}")
            console.print(f"  built in {built['seconds']:.1f} s, {built['files']} files")
            rows[size] = {"episodes": size, "steps": steps, **built,
                          **browse(root / f"view{size}", size, args.loads)}
        small = sizes[0]
        old = None
        oldpkg = old_viewer(root / "old-viewer")
        if oldpkg is not None:
            built = build(root / f"run{small}", root / f"old-view{small}", oldpkg)
            console.print(f"old layout at {small}: built in {built['seconds']:.1f} s, {built['files']} files")
            old = {"episodes": small, "steps": rows[small]["steps"], **built,
                   **browse(root / f"old-view{small}", small, args.loads, old=True)}
        report(rows, old, sizes)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def report(rows: dict[int, dict], old: dict | None, sizes: list[int]) -> None:
    small, large = sizes[0], sizes[-1]
    out = Console() if sys.stdout.isatty() else Console(width=200)
    table = Table(title="gridbench view, by run size (browser times: medians)")
    heads = ("layout", "episodes", "steps", "build s", "ms / episode", "files", "MiB", "largest steps file MiB",
             "peak RSS MiB", "index opens s", "sort s", "filter s", "episode from index s", "episode link cold s",
             "step s")
    for h in heads:
        table.add_column(h, justify="right")

    def fmt(v, spec):
        return "–" if v is None else format(v, spec)

    def add(name, r, extrapolated=False):
        per = r["seconds"] / r["episodes"] * 1000
        table.add_row(name, f"{r['episodes']:,}", f"{r['steps']:,}", fmt(r["seconds"], ".1f"), f"{per:.2f}",
                      f"{r['files']:,}", f"{r['bytes'] / 2**20:.1f}", fmt(r.get("largest_steps_file", 0) / 2**20, ".1f"),
                      fmt(r.get("max_rss_mb"), ".0f"), fmt(r.get("index"), ".3f"), fmt(r.get("sort"), ".3f"),
                      fmt(r.get("filter"), ".3f"), fmt(r.get("open"), ".3f"),
                      fmt(r.get("cold"), ".3f"), fmt(r.get("step"), ".3f"))

    for size in sizes:
        add("canvas (new)", rows[size])
    if old is not None:
        add("page per episode (old)", old)
        scale = large / old["episodes"]
        table.add_row("old, extrapolated", f"{large:,}", "", f"{old['seconds'] * scale:.0f}",
                      f"{old['seconds'] / old['episodes'] * 1000:.2f}", f"{round(old['files'] * scale):,}",
                      f"{old['bytes'] * scale / 2**20:.0f}", "", "", "", "", "", "", "", "")
    out.print(table)

    r = rows[large]
    per_small = rows[small]["seconds"] / small
    per_large = r["seconds"] / large
    record(f"viewer: an episode opened from the index, {large:,} episodes", "(reported)", f"{r['open']:.3f} s",
           None, None)
    record(f"viewer: sort / filter the list, {large:,} episodes", "(reported)",
           f"{r['sort']:.3f} / {r['filter']:.3f} s", None, None)
    record("viewer: one step forward", "(reported)", f"{r['step']:.3f} s", None, None)
    lines = [f"files at {large:,}: {r['files']}; index opens in {r['index']:.3f} s; per episode "
             f"{per_large * 1000:.2f} ms at {large:,} vs {per_small * 1000:.2f} ms at {small:,} "
             f"(the goals are bench/scale.py's)"]
    if old is not None:
        per_old = old["seconds"] / old["episodes"]
        speedup = per_old / (rows[small]["seconds"] / small)
        lines.append(f"old layout at {small:,}: {old['files']:,} files, {per_old * 1000:.2f} ms per episode, "
                     f"{speedup:.1f}x the new one's time; extrapolated to {large:,}: "
                     f"{per_old * large:.0f} s and {round(old['files'] * large / small):,} files (not measured)")
        record(f"viewer: build time per episode, old layout vs new, {small:,} episodes", "(reported)",
               f"{per_old * 1000:.2f} vs {rows[small]['seconds'] / small * 1000:.2f} ms", speedup, None)
        record(f"viewer: old layout extrapolated to {large:,} episodes", "(reported)",
               f"{per_old * large:.0f} s, {round(old['files'] * large / small):,} files", None, None)
    else:
        lines.append(f"old layout not measured: commit {OLD_VIEWER_COMMIT[:10]} is not in this repository's history")
    for line in lines:
        out.print(line)


if __name__ == "__main__":
    main()
