"""Lockstep batch rounds: how many rounds a batch arm takes against its floor, and what the
driver's broker spends on each round.

    python bench/batch_rounds.py [--episodes N] [--latency S] [--quick]

N episodes of a ``tier: batch`` Claude arm on N eval mazes, on a real local Ray, against the
scripted server's Message Batches fake (oracle answers; each batch stays in progress ``S``
seconds). The floor is the longest episode's calls: no arm can take fewer rounds than that.
Goal: rounds <= floor + 1 (the first round waits for every episode the driver starts at once, up
to ``round_wait_s`` after the last one joined: one round more only when an actor starts later). Beside
it, the broker's own time per round (gathering closed, submitting, journaling, handing the
answers back; not the provider's wait), and the wall time per round against the batch latency
plus one poll interval.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402
import ray  # noqa: E402
import yaml  # noqa: E402
from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402

from env.sets import set_entries  # noqa: E402
from orchestrator.driver import Driver  # noqa: E402
from orchestrator.sweep import load_sweep  # noqa: E402
from testing.scripted_server import ScriptedServer  # noqa: E402

console = Console(stderr=True)
POLL_S = 0.05


class Watched(Driver):
    """The driver, keeping its brokers' last progress (they end with the run)."""

    progress: dict[str, Any] = {}

    def _run(self) -> bool:
        graceful = super()._run()
        self.progress = {name: ray.get(b.progress.remote()) for name, b in self.scheduler.brokers.items()}
        return graceful


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds a batch stays in progress")
    ap.add_argument("--quick", action="store_true", help="4 episodes")
    args = ap.parse_args(argv)
    n = 4 if args.quick else args.episodes
    mazes = [f"eval/{e['id']}" for e in sorted(set_entries("eval"), key=lambda e: e["optimal_actions"])[:n]]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        with ScriptedServer(mode="oracle", mazes=mazes, batch_latency=args.latency) as srv, \
                tempfile.TemporaryDirectory() as tmp:
            sweep = Path(tmp) / "rounds.yaml"
            sweep.write_text(yaml.safe_dump({
                "name": "rounds", "mazes": mazes,
                "protocol": {"observation": "text", "history_frames": 0, "icl_example": False,
                             "stall_window": 200, "step_cap_factor": 3},
                "models": [{"name": "claude", "model": "anthropic/claude-opus-4-8", "api_base": srv.url,
                            "tier": "batch", "batch": {"poll_s": POLL_S, "round_wait_s": 2.0},
                            "price": {"input": 5e-6, "output": 25e-6}, "max_concurrency": n}]}))
            driver = Watched(load_sweep(sweep), Path(tmp) / "run")
            started = time.perf_counter()
            outcome = driver.execute()
            wall = time.perf_counter() - started
            steps = pd.read_parquet(Path(tmp) / "run" / "steps")
    finally:
        ray.shutdown()
    if outcome.exit_code:
        console.print(f"[red]the run failed: {outcome.errors} errors[/]")
        return 1
    progress = driver.progress["claude"]
    rounds = int(progress["rounds"])
    floor = int(steps.groupby("episode_id")["calls"].sum().max())
    overhead_ms = 1000 * progress["overhead_s"] / max(rounds, 1)
    per_round = wall / max(rounds, 1)
    console.print(f"{n} episodes, {len(steps)} steps, {progress['submitted']} requests in {rounds} rounds; "
                  f"floor (longest episode's calls) {floor}")
    console.print(f"broker's own time {overhead_ms:.1f} ms a round; wall {per_round:.2f} s a round against "
                  f"{args.latency + POLL_S:.2f} s of batch latency and one poll")
    record(f"batch rounds for {n} episodes vs the longest episode's calls", "<= floor + 1",
           f"{rounds} rounds, floor {floor}", rounds / floor, rounds <= floor + 1)
    record("batch broker's own time per round", "reported", f"{overhead_ms:.1f} ms", None, None)
    record("wall time per batch round vs batch latency + one poll", "reported",
           f"{per_round:.2f} s vs {args.latency + POLL_S:.2f} s", per_round / (args.latency + POLL_S), None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
