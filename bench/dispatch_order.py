"""The order episodes start in: the sweep's own (the driver's before) beside longest expected first.

    python bench/dispatch_order.py [--draws N] [--latency S] [--seed N]

A called arm plays a maze set 4 times (no Ray, no model): the driver's real ``Scheduler`` and
``Pending`` (``testing.dispatch``) start its episodes as the arm's ``max_concurrency`` (the slots)
allows, each episode taking simulated time. An episode's turns are drawn like the study's: a
maze's difficulty for the arm ``f ~ Beta(2, 3)`` (mean 0.4), each episode ``cap x f x
lognormal(0, 0.25)`` turns, at least 1 and at most its step cap (3 x the maze's optimal length),
so a mean of about 70 turns on the study's mazes (its models made 37 to 64 queries an episode);
each turn takes ``--latency`` seconds x ``lognormal(0, 0.5)``. Per slot count (4, 16, 64) it
reports, for both orders: the makespan, its lower bound max(total work / slots, the longest
episode), their ratio, and the tail (from the first moment a slot had nothing left to start to
the end); the mean over ``--draws`` draws, the worst ratio beside it.

Workloads:
- ``study, first run``: the shipped ``main`` sweep's mazes (the study's 50, listed shortest
  first, so the sweep's order starts the longest episodes last); nothing finished, so the expected
  length is the step cap;
- ``eval, first run``: the eval set (listed in no order of length);
- ``study, rerun``: repeats 0 and 1 finished in an earlier invocation; the rerun's expected
  lengths are what they took (``orchestrator.estimate.Lengths``);
- ``study, unrelated``: each episode's turns drawn with no regard to its maze (the same
  distribution, shuffled): the step cap then says nothing of an episode's length; reported, no goal.

Goal (the first three workloads, each slot count, means over the draws): longest first within
1.1x of the lower bound, and no slower than the sweep's order.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from orchestrator.estimate import Lengths  # noqa: E402
from orchestrator.sweep import EpisodeSpec, parse_sweep  # noqa: E402
from testing.dispatch import Timeline, queued, simulate  # noqa: E402

SLOTS = (4, 16, 64)
REPEATS = 4
GOAL = 1.1


def sweep(mazes: str, slots: int) -> list[EpisodeSpec]:
    """One called arm (never called here) on ``mazes``, ``REPEATS`` times, the study's final cell."""
    return parse_sweep({
        "name": "dispatch", "mazes": mazes, "repeats": REPEATS, "protocol": {"preset": "study-final"},
        "models": [{"name": "arm", "model": "openai/simulated", "api_base": "http://127.0.0.1:9/v1",
                    "max_concurrency": slots}]}, "dispatch.yaml").episodes()


def draw_turns(specs: list[EpisodeSpec], caps: Lengths, rng: np.random.Generator, unrelated: bool) -> dict[str, int]:
    """Each episode's turns (see the module)."""
    difficulty = {s.maze.checksum: rng.beta(2, 3) for s in specs}
    turns = {}
    for s in specs:
        cap = caps.step_cap(s)
        turns[s.episode_id] = int(np.clip(round(cap * difficulty[s.maze.checksum] * rng.lognormal(0, 0.25)), 1, cap))
    if unrelated:
        ids = list(turns)
        turns = dict(zip(ids, rng.permutation(list(turns.values())).tolist(), strict=True))
    return turns


def seconds_of(turns: dict[str, int], latency: float, rng: np.random.Generator) -> dict[str, float]:
    return {i: float(rng.lognormal(0, 0.5, n).sum() * latency) for i, n in turns.items()}


@dataclass
class Row:
    workload: str
    slots: int
    listed: list[Timeline]  # in the sweep's order
    longest: list[Timeline]

    def mean(self, side: str, figure: Callable[[Timeline], float]) -> float:
        return statistics.fmean(figure(t) for t in getattr(self, side))

    def ratio(self, side: str) -> float:
        return self.mean(side, lambda t: t.makespan / t.bound)

    def worst(self, side: str) -> float:
        return max(t.makespan / t.bound for t in getattr(self, side))

    @property
    def met(self) -> bool:
        return self.ratio("longest") <= GOAL and self.mean("longest", _makespan) <= self.mean("listed", _makespan)


def _makespan(t: Timeline) -> float:
    return t.makespan


def run(workload: str, mazes: str, slots: int, draws: int, latency: float, seed: int) -> Row:
    specs = sweep(mazes, slots)
    caps = Lengths()
    row = Row(workload, slots, [], [])
    for d in range(draws):
        rng = np.random.default_rng([seed, d])
        turns = draw_turns(specs, caps, rng, unrelated=workload.endswith("unrelated"))
        seconds = seconds_of(turns, latency, rng)
        todo, lengths = specs, Lengths()
        if workload.endswith("rerun"):  # repeats 0 and 1 ran in an earlier invocation
            done = [s for s in specs if s.repeat < 2]
            todo = [s for s in specs if s.repeat >= 2]
            lengths = Lengths((s, turns[s.episode_id]) for s in done)
        row.listed.append(simulate(queued(todo, None), seconds, slots))
        row.longest.append(simulate(queued(todo, lengths), seconds, slots))
    return row


def hours(s: float) -> str:
    return f"{s / 3600:.1f} h"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=10, help="draws of the episodes' lengths per workload")
    ap.add_argument("--latency", type=float, default=30.0, help="mean seconds a turn")
    ap.add_argument("--seed", type=int, default=41)
    args = ap.parse_args()
    workloads = (("study, first run", "study"), ("eval, first run", "eval"), ("study, rerun", "study"),
                 ("study, unrelated", "study"))
    rows = [run(name, mazes, slots, args.draws, args.latency, args.seed)
            for name, mazes in workloads for slots in SLOTS]
    table = Table(title=f"makespan of one arm's episodes, the sweep's order vs longest first (mean of {args.draws} "
                        f"draws, {args.latency:.0f} s a turn)")
    for col in ("workload", "slots", "episodes", "lower bound", "sweep's order", "longest first", "sweep's / bound",
                "longest first / bound (worst)", "tail, sweep's order", "tail, longest first"):
        table.add_column(col, justify="left" if col == "workload" else "right")
    for r in rows:
        table.add_row(r.workload, str(r.slots), str(len(r.listed[0].spans)), hours(r.mean("listed", lambda t: t.bound)),
                      hours(r.mean("listed", _makespan)), hours(r.mean("longest", _makespan)),
                      f"{r.ratio('listed'):.2f}", f"{r.ratio('longest'):.2f} ({r.worst('longest'):.2f})",
                      hours(r.mean("listed", lambda t: t.tail)), hours(r.mean("longest", lambda t: t.tail)))
        judged = not r.workload.endswith("unrelated")
        record(f"makespan / lower bound, longest first, {r.workload}, {r.slots} slots",
               f"<= {GOAL}x, <= the sweep's order" if judged else "(reported)",
               f"{r.ratio('longest'):.2f}x (sweep's order {r.ratio('listed'):.2f}x)", r.ratio("longest"),
               r.met if judged else None)
    # piped output keeps whole rows instead of rich's 80-column fallback
    (Console() if sys.stdout.isatty() else Console(width=200)).print(table)


if __name__ == "__main__":
    main()
