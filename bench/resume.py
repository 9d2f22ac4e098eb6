"""What per-step durability buys and what it costs, side by side in one run.

    python bench/resume.py [--turn K] [--latency S]

(a) Calls wasted by a kill: one LLM episode on a long eval maze against the scripted
    OpenAI-compatible server, whose model actor is SIGKILLed while it waits for turn ``K``'s
    answer. The driver continues the episode from its journal; the server counts the calls it
    answered per turn. Wasted = answered calls - steps of the finished episode. Goal: 0. Beside
    it, the same kill with the journal ignored (the episode starts over, as before step-level
    durability): K - 1 calls wasted.
(b) Its price on the latency-bound figure of ``bench/orchestrator_overhead.py``: 32 concurrent
    episodes at 200 ms a call through the openai client, their span against the ideal
    (calls x latency / concurrency). Goal: <= 1.15x. Beside it, the same run with no journal at
    all, so the ratio of the two is what durability adds.
(c) A 429 storm: 16 episodes, ``max_concurrency: 8``, against a server that takes 2 requests at
    a time (429 with Retry-After beyond that) for the whole run, beside the same episodes at
    ``max_concurrency: 2`` against a server with no limit: what the adapted concurrency should
    reach. Goal: wall time within 1.3x, and no episode in error.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray  # noqa: E402
import yaml  # noqa: E402
from bench_results import record  # noqa: E402
from orchestrator_overhead import ScriptedProcess, latency_ratio, latency_sweep  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from env.sets import set_entries  # noqa: E402
from orchestrator.actors import Resume  # noqa: E402
from orchestrator.connect import connect  # noqa: E402
from orchestrator.driver import Driver  # noqa: E402
from orchestrator.sweep import load_sweep  # noqa: E402
from testing.scripted_server import ScriptedServer  # noqa: E402

console = Console(stderr=True)


class Forgetful(Driver):
    """The driver as it was before step-level durability: an episode always starts over."""

    def _resume(self, spec):
        return Resume()


class Unjournaled(Driver):
    """No journal at all: steps reach the run folder only when their episode ends."""

    def _start_journal(self, specs, todo):
        return None


def wasted_calls(driver_class: type[Driver], turn: int, work: Path) -> tuple[int, int]:
    """(calls wasted, steps of the episode) when the model actor dies waiting for ``turn``."""
    maze = min((e for e in set_entries("eval") if e["optimal_actions"] >= 40), key=lambda e: e["optimal_actions"])
    pids: list[int] = []
    killed: list[int] = []

    def kill(request):
        if request.step == turn and not killed:
            killed.append(pids[-1])
            os.kill(pids[-1], signal.SIGKILL)
            return "drop"
        return None

    with ScriptedServer(mode="oracle", maze=maze["id"], on_request=kill) as srv:
        path = work / f"{driver_class.__name__}.yaml"
        path.write_text(yaml.safe_dump({
            "name": path.stem, "mazes": [f"eval/{maze['id']}"],
            "protocol": {"observation": "text", "history_frames": 0, "thinking": False, "icl_example": False,
                         "stall_window": 200},
            "models": [{"name": "scripted", "model": "openai/scripted", "api_base": srv.url, "client": "openai",
                        "price": {"input": 0.0, "output": 0.0}, "max_concurrency": 1}]}))
        outcome = driver_class(load_sweep(path), work / path.stem,
                               on_dispatch=lambda spec, actor, n: pids.append(ray.get(actor.pid.remote()))).execute()
        answered = sum(1 for r in srv.chat_requests if r.answered)
    steps = int(outcome.episodes["steps"].sum())
    assert killed and outcome.errors == 0, outcome.episodes[["termination", "error_message"]]
    return answered - steps, steps


def latency_span(driver_class: type[Driver], url: str, work: Path, latency: float, concurrency: int) -> float:
    sweep = latency_sweep(url, "openai", concurrency)
    run_dir = work / f"b-{driver_class.__name__}"
    outcome = driver_class(sweep, run_dir).execute()
    _, span, ideal = latency_ratio(run_dir, outcome, latency, concurrency)
    return span / ideal


def storm_wall(work: Path, capacity: int | None, concurrency: int, latency: float = 0.1) -> tuple[float, int, list]:
    """(wall seconds, error episodes, concurrency history) of 16 oracle-played episodes."""
    import time

    mazes = [f"eval/{e['id']}" for e in sorted(set_entries("eval"), key=lambda e: e["optimal_actions"])
             if e["optimal_actions"] >= 20][:8]
    with ScriptedServer(mode="oracle", mazes=mazes, latency=latency, capacity=capacity, retry_after=0.2) as srv:
        name = f"storm-{capacity}-{concurrency}"
        path = work / f"{name}.yaml"
        path.write_text(yaml.safe_dump({
            "name": name, "mazes": mazes, "repeats": 2,
            "protocol": {"observation": "text", "history_frames": 0, "thinking": False, "icl_example": False,
                         "stall_window": 200},
            "models": [{"name": "scripted", "model": "openai/scripted", "api_base": srv.url, "client": "openai",
                        "price": {"input": 0.0, "output": 0.0}, "max_concurrency": concurrency}]}))
        t0 = time.monotonic()
        outcome = Driver(load_sweep(path), work / name).execute()
        return time.monotonic() - t0, outcome.errors, [limit for _, limit, _ in outcome.concurrency["scripted"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turn", type=int, default=20, help="the turn whose call the kill interrupts")
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "scripted-no-key")
    connect(num_cpus=2)
    table = Table(title="per-step durability and rate limits")
    for col in ("figure", "gridbench", "beside it", "goal"):
        table.add_column(col)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        console.print(f"(a) an actor killed at turn {args.turn}, resumed from its journal and, beside it, started over")
        wasted, steps = wasted_calls(Driver, args.turn, work)
        wasted_before, _ = wasted_calls(Forgetful, args.turn, work)
        table.add_row(f"calls wasted by a kill at turn {args.turn} ({steps}-step episode)", str(wasted),
                      str(wasted_before), "0")
        record(f"calls wasted by a kill at turn {args.turn}", "0", f"{wasted} (started over: {wasted_before})",
               float(wasted), wasted == 0)
        console.print(f"(b) {args.concurrency} episodes at {args.latency * 1000:.0f} ms a call, with and without the journal")
        with ScriptedProcess(args.latency, "forward,left,forward,right") as srv:
            durable = latency_span(Driver, srv.url, work, args.latency, args.concurrency)
            bare = latency_span(Unjournaled, srv.url, work, args.latency, args.concurrency)
        table.add_row("latency-bound span / ideal", f"{durable:.2f}x", f"{bare:.2f}x", "<= 1.15x")
        record("latency-bound with per-step durability vs calls x latency / concurrency", "<= 1.15x",
               f"{durable:.2f}x (no journal: {bare:.2f}x)", durable, durable <= 1.15)
        console.print("(c) a 429 storm at capacity 2 with max_concurrency 8, beside max_concurrency 2 and no storm")
        storm, errors, limits = storm_wall(work, capacity=2, concurrency=8)
        calm, _, _ = storm_wall(work, capacity=None, concurrency=2)
        table.add_row("429 storm: wall time vs the adapted concurrency without a storm",
                      f"{storm:.1f} s ({errors} errors; limit {' -> '.join(map(str, limits))})", f"{calm:.1f} s",
                      "<= 1.3x, 0 errors")
        record("429 storm wall time vs a storm-free run at the adapted concurrency", "<= 1.3x, 0 errors",
               f"{storm:.1f} s vs {calm:.1f} s, {errors} errors", storm / calm, storm / calm <= 1.3 and errors == 0)
    ray.shutdown()
    Console().print(table)


if __name__ == "__main__":
    main()
