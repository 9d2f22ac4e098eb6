"""How fast is the trace viewer on a run the size of the study's ablation (540 episodes)?

    python bench/viewer_speed.py [--mazes heldout] [--loads 5] [--keep DIR]

Makes a real 540-episode run (built-in oracle, random and explorer agents x 12 condition names
x mazes x repeats, through ``run_episode`` and ``write_episode``), builds its viewer twice
(cold: every frame drawn; warm: the frames are already there) and opens it in headless
Chromium (Debian's ``chromium``), timing from navigation start until the page script has
drawn everything (``body[data-ready]``), each load in a fresh browser context:

- the index of all 540 episodes: goal under 2 s;
- an episode page: goal under 1 s;
- one step forward (key press until the new frame has loaded): goal under 100 ms.

Prints one table with each measurement, its goal and the ratio measured/goal (< 1 meets it).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

from agents import ModelConfig, Protocol  # noqa: E402
from agents.builtin import make_builtin  # noqa: E402
from env import BadInput, resolve_mazes  # noqa: E402
from orchestrator.episode import run_episode  # noqa: E402
from orchestrator.records import EpisodeIdentity  # noqa: E402
from orchestrator.sweep import ModelEntry, episode_id  # noqa: E402
from orchestrator.traces import write_episode, write_manifest  # noqa: E402
from orchestrator.web.viewer import build_view  # noqa: E402

EPISODES = 540
AGENTS = ("oracle", "random", "explorer")
CONDITIONS = 12
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def make_run(run_dir: Path, maze_spec: str) -> float:
    try:
        mazes = resolve_mazes(maze_spec)
    except BadInput:
        mazes = resolve_mazes("example")
    protocol = Protocol.preset("final")
    work = []
    repeat = 0
    while len(work) < EPISODES:
        for agent in AGENTS:
            for c in range(CONDITIONS):
                for maze in mazes:
                    work.append((maze, agent, f"cond{c:02d}", repeat))
        repeat += 1
    work = work[:EPISODES]

    async def go(progress: Progress) -> None:
        task = progress.add_task("episodes", total=len(work))
        for maze, agent, condition, rep in work:
            entry = ModelEntry(config=ModelConfig.for_model(f"builtin/{agent}"))
            eid = episode_id(maze, entry, protocol, rep) + condition
            identity = EpisodeIdentity(run=run_dir.name, episode_id=eid, model_name=agent, model=entry.model,
                                       condition=condition, repeat=rep, maze_id=maze.id)
            result = await run_episode(maze, make_builtin(agent, seed=rep), protocol, identity)
            write_episode(run_dir, result)
            progress.advance(task)

    t0 = time.perf_counter()
    with Progress(transient=True) as progress:
        asyncio.run(go(progress))
    write_manifest(run_dir, run=run_dir.name, sweep={"name": "viewer-bench"},
                   mazes={m.checksum: m.to_dict() for m in mazes}, invocation={"command": "bench"})
    return time.perf_counter() - t0


def browser_times(view: Path, loads: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    pages = sorted((view / "episodes").glob("*.html"))
    rng = random.Random(0)
    out: dict[str, list[float]] = {"index": [], "episode": [], "step": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for i in range(loads):
            for kind, url in (("index", (view / "index.html").as_uri()), ("episode", rng.choice(pages).as_uri())):
                context = browser.new_context()
                page = context.new_page()
                page.goto(url)
                page.wait_for_selector("body[data-ready='1']")
                # the page notes when its first complete frame was painted (ms from navigation)
                out[kind].append(int(page.get_attribute("body", "data-ready-ms")) / 1000)
                if kind == "episode" and i == 0:
                    last = page.get_attribute("#slider", "max")
                    for _ in range(min(30, int(last))):
                        t = time.perf_counter()
                        page.keyboard.press("ArrowRight")
                        # polled from here: a page function would need eval, which the page's CSP refuses
                        while not page.eval_on_selector("#frame", "img => img.complete && img.naturalWidth > 0"):
                            pass
                        out["step"].append(time.perf_counter() - t)
                context.close()
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mazes", default="heldout", help="maze set (falls back to the example maze)")
    ap.add_argument("--loads", type=int, default=5, help="browser loads of each page kind")
    ap.add_argument("--keep", type=Path, default=None, help="keep the run and its viewer here")
    args = ap.parse_args()
    console = Console()
    root = args.keep or Path(tempfile.mkdtemp(prefix="viewer-bench-"))
    run_dir = root / "bench540"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_s = make_run(run_dir, args.mazes)
    t = time.perf_counter()
    cold = build_view(run_dir)
    cold_s = time.perf_counter() - t
    t = time.perf_counter()
    warm = build_view(run_dir)
    warm_s = time.perf_counter() - t
    times = browser_times(cold.out_dir, args.loads)
    size = sum(f.stat().st_size for f in cold.out_dir.rglob("*") if f.is_file())
    index_kb = (cold.out_dir / "index.html").stat().st_size / 1024

    table = Table(title=f"viewer of a {cold.episodes}-episode run (medians; Chromium {args.loads} loads each)")
    for col in ("measure", "measured", "goal", "measured / goal"):
        table.add_column(col, justify="right")
    for label, value, goal in (
        ("index opens (s)", statistics.median(times["index"]), 2.0),
        ("episode page opens (s)", statistics.median(times["episode"]), 1.0),
        ("one step forward (s)", statistics.median(times["step"]), 0.1),
    ):
        table.add_row(label, f"{value:.3f}", f"{goal:.3f}", f"{value / goal:.2f}")
        record(f"viewer: {label}", f"< {goal:g} s", f"{value:.3f} s", value / goal, value < goal)
    console.print(table)
    info = Table(title="building the bundle")
    for col in ("measure", "value"):
        info.add_column(col, justify="right")
    info.add_row("episodes run (s)", f"{run_s:.1f}")
    info.add_row("build, cold (s)", f"{cold_s:.1f}")
    info.add_row("frames drawn, cold", str(cold.frames_drawn))
    info.add_row("build, warm (s)", f"{warm_s:.1f}")
    info.add_row("frames drawn, warm", str(warm.frames_drawn))
    info.add_row("warm / cold", f"{warm_s / cold_s:.2f}")
    info.add_row("index.html (KiB)", f"{index_kb:.0f}")
    info.add_row("bundle (MiB)", f"{size / 2**20:.1f}")
    console.print(info)
    if args.keep is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
