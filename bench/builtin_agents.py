"""How far the knowledge-free explorer gets: mazes solved within the protocol's step cap.

Runs the built-in agents (oracle, explorer, random over several seeds) on the hand-written
mazes and on a seeded sample of generated mazes across chain patterns and distractors, and
prints one row per maze with the steps each needed as a ratio of the optimal count.

    python bench/builtin_agents.py [--generated 24] [--cap-factor 3] [MAZE-SPEC ...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

import env  # noqa: E402
from agents import Protocol, Turn, build_agent  # noqa: E402
from agents.types import PastStep  # noqa: E402
from env.oracle import solve  # noqa: E402


def play(model: str, maze: env.Maze, cap: int, seed: int = 0) -> int | None:
    """Steps ``model`` needed to reach the goal, or None if it did not within ``cap``."""
    agent = build_agent(model, Protocol(), seed=seed)
    state, history = env.initial_state(maze), []

    async def run() -> int | None:
        nonlocal state
        for n in range(1, cap + 1):
            d = await agent.act(Turn(maze, Protocol(), n, state, tuple(history), cap))
            nxt, event = env.step(maze, state, d.action)
            history.append(PastStep(n, d.action, event, state, nxt))
            state = nxt
            if event == "goal":
                return n
        return None

    return asyncio.run(run())


def generated_sample(count: int) -> list[env.Maze]:
    from env.generator import GenerationError, GenParams, generate

    shapes = [
        dict(chain="key_door"), dict(chain="switch_gate"), dict(chain="gate_behind_door"),
        dict(chain="door_behind_gate"), dict(chain="two_switches_one_gate"),
        dict(chain="mixed_sequence", mechanisms=3), dict(chain="key_door", decoy_keys=1),
        dict(chain="switch_gate", decoy_switches=1),
    ]
    topologies = ("rooms", "perfect", "open")
    out = []
    for i in range(count):
        shape = shapes[i % len(shapes)]
        params = GenParams(width=10, height=10, topology=topologies[i // len(shapes) % len(topologies)], **shape)
        try:
            out.append(generate(params, seed=1000 + i, maze_id=f"bench-{i:02d}-{shape['chain']}").maze)
        except (GenerationError, AttributeError):
            continue
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mazes", nargs="*", default=["hand"])
    ap.add_argument("--generated", type=int, default=24, help="generated mazes to add (0: none)")
    ap.add_argument("--cap-factor", type=float, default=3.0)
    ap.add_argument("--random-seeds", type=int, default=5)
    args = ap.parse_args()

    mazes = env.resolve_mazes(args.mazes)
    if args.generated:
        mazes += generated_sample(args.generated)
    table = Table(title=f"built-in agents: steps / optimal (cap = {args.cap_factor:g} x optimal)")
    for col in ("maze", "category", "chain", "optimal", "oracle", "explorer", "random solved"):
        table.add_column(col, justify="left" if col in ("maze", "category") else "right", no_wrap=col == "maze")
    solved = {"explorer": 0, "random": 0}
    ratios = []
    by_source: dict[str, list[int]] = {}
    for maze in track(mazes, description="playing"):
        optimal = solve(maze).optimal_actions
        if optimal is None:
            continue
        cap = max(1, int(args.cap_factor * optimal + 0.999999))
        oracle = play("builtin/oracle", maze, cap)
        explorer = play("builtin/explorer", maze, cap)
        randoms = [play("builtin/random", maze, cap, seed=s) for s in range(args.random_seeds)]
        random_solved = sum(r is not None for r in randoms)
        source = "hand" if (maze.meta and maze.meta.source == "hand") else "generated"
        by_source.setdefault(source, [0, 0])
        by_source[source][1] += 1
        if explorer is not None:
            solved["explorer"] += 1
            by_source[source][0] += 1
            ratios.append(explorer / optimal)
        solved["random"] += random_solved > 0
        chain = len(maze.meta.chain) if maze.meta else 0
        table.add_row(
            maze.id, maze.category, str(chain), str(optimal),
            f"{oracle / optimal:.2f}" if oracle else "-",
            f"{explorer / optimal:.2f}" if explorer else "not solved",
            f"{random_solved}/{len(randoms)}",
        )
    console = Console()
    console.print(table)
    for source, (won, total) in sorted(by_source.items()):
        console.print(f"explorer solved {won}/{total} {source} mazes within {args.cap_factor:g} x optimal")
    if ratios:
        console.print(f"explorer steps / optimal when solved: median {statistics.median(ratios):.2f}, "
                      f"max {max(ratios):.2f}")
    console.print(f"random (any of {args.random_seeds} seeds) solved {solved['random']}/{len(mazes)}")
    record("explorer solves within the step cap", "", f"{solved['explorer']}/{len(mazes)}",
           solved["explorer"] / max(1, len(mazes)), None)
    if ratios:
        record("explorer steps / optimal, median when solved", "", f"{statistics.median(ratios):.2f}",
               statistics.median(ratios), None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
