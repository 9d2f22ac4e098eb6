"""The compiled oracle and generator against the plain Python searches, side by side in one run.

    python bench/long_horizons.py [--quick] [--timeout 300]

Each case runs in a fresh process once with the compiled kernels and once with
``GRIDBENCH_ORACLE=python`` (the plain searches, which are the code as it was before the kernels);
the kernels are compiled (or loaded from numba's cache) before the clock starts. Printed per case:
seconds and peak memory (RSS) of each, and the ratio. The cases (issue 42's):

* the oracle (``solve`` and the full distance table) on the worst maze of the pool, on the worst
  of ``study-m7m10`` (explicit mazes: ``env.oracle.explicit``'s kernels), on a generated 40x40 maze, and on a
  generated 64x64 maze with an 8-step chain;
* the generator: a ``rooms`` maze with a 4-step ``mixed_sequence`` and one decoy of each kind at
  14x14, two of each at 24x24, three of each at 40x40, and a ``perfect`` 64x64 maze with an
  8-step ``mixed_sequence`` and two of each (past the recipes: the scaled verification,
  docs/generator.md "Large mazes");
* the cold build of the ``attribution`` sweep's twins (250 twins of the study's 50 mazes).

Goals: the oracle 20x on the worst pool and ``study-m7m10`` mazes, and the 64x64 maze solved
(and tabled) in under 5 s; the 40x40 maze generated in under 10 s; the attribution cold build in
under 15 s. ``--quick`` leaves out the plain runs
longer than a minute (their ratios are then not measured). A plain run past ``--timeout``
seconds is stopped and its ratio reported as a lower bound.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_results import record  # noqa: E402

# side: (topology, chain steps, decoys of each kind), issue 42's; at 64x64 a rooms layout's 8-step
# candidates with two decoys of each kind mostly pass the scaled cap in the necessity check
# (docs/generator.md, "Large mazes"), so that case is laid out on a perfect maze
GENERATOR_CASES = {14: ("rooms", 4, 1), 24: ("rooms", 4, 2), 40: ("rooms", 4, 3), 64: ("perfect", 8, 2)}
SLOW_PLAIN = {"generate-40", "generate-64", "attribution"}  # left out by --quick


def _gen_params(side: int):
    from env.generator import GenParams

    topology, steps, n = GENERATOR_CASES[side]
    return GenParams(width=side, height=side, topology=topology, chain="mixed_sequence", mechanisms=steps,
                     decoy_keys=n, decoy_switches=n, deadends=n)


def _worst(name: str):
    """The maze of a set the plain oracle takes longest on (decided once, in the parent)."""
    from env import resolve_mazes

    mazes = resolve_mazes([name])
    os.environ["GRIDBENCH_ORACLE"] = "python"
    _oracle(mazes[0])  # imports and first-call costs out of the way
    timed = []
    for m in mazes:
        t0 = time.perf_counter()
        _oracle(m)
        timed.append((time.perf_counter() - t0, m.id))
    del os.environ["GRIDBENCH_ORACLE"]
    return max(timed)[1]


# the mazes generated for the oracle cases: (side, chain, steps, decoys of each kind, first sub-seed).
# The 64x64 one starts at sub-seed 5 of seed 1, the maze this case has always timed: since the
# scaled verification (docs/generator.md, "Large mazes") seed 1 accepts sub-seed 0, whose
# reachable states pass the distance table's 500,000 cap
GENERATED = {"generated-40": (40, "mixed_sequence", 4, 1, 0), "generated-64": (64, "mixed_sequence", 8, 0, 5)}


def _generated(name: str, folder: Path) -> str:
    """Generate an oracle case's maze once (compiled), into a file both engines' processes read."""
    from env import save_maze
    from env.generator import GenParams, generate

    side, chain, steps, n, first = GENERATED[name]
    params = GenParams(width=side, height=side, topology="perfect" if side > 40 else "rooms", chain=chain,
                       mechanisms=steps, decoy_keys=n, decoy_switches=n, deadends=n)
    path = folder / f"{name}.json"
    save_maze(generate(params, seed=1, maze_id=name, first_attempt=first).maze, path)
    return str(path)


def _oracle(maze) -> None:
    from env.oracle import DistanceTable, solve
    from env.oracle.space import state_space

    state_space.cache_clear()
    solve(maze, cache=False)
    DistanceTable(maze)


def run_case(case: str, arg: str) -> dict:
    """In the child: warm the kernels, then time the case once (the oracle: best of three)."""
    from env import jit, resolve_maze

    if jit.enabled():
        jit.warm()  # compiled, or loaded from numba's cache, before the clock starts
    t0 = time.perf_counter()
    if case == "oracle":
        maze = resolve_maze(arg)
        arg = maze.id
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            _oracle(maze)
            best = min(best, time.perf_counter() - t0)
        seconds = best
    elif case == "generate":
        from env.generator import generate

        g = generate(_gen_params(int(arg)), seed=1)
        seconds = time.perf_counter() - t0
        arg = f"{arg}: {g.optimal_actions} actions, {g.stats.candidates} candidates"
    else:
        import yaml

        from env import resolve_mazes
        from orchestrator.sweep_variants import parse_variants, with_twins

        spec = yaml.safe_load((ROOT / "orchestrator/sweeps/attribution.yaml").read_text())
        with tempfile.TemporaryDirectory() as cache:
            twins = with_twins(resolve_mazes([spec["mazes"]]), parse_variants(spec["variants"], "attribution"),
                               Path(cache))
        seconds = time.perf_counter() - t0
        arg = f"{sum(len(v) - 1 for v in twins.of.values())} twins"
    return {"seconds": seconds, "peak_mb": _peak_mb(), "what": arg}


def _peak_mb() -> float:
    """This process's peak resident memory: VmHWM, which starts afresh at exec (ru_maxrss carries the
    parent's peak into a child on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(case: str, arg: str, engine: str, timeout: float) -> dict | None:
    env = {**os.environ, "GRIDBENCH_ORACLE": engine, "PYTHONPATH": str(ROOT)}
    try:
        r = subprocess.run([sys.executable, __file__, "--child", case, arg], capture_output=True, text=True,
                           env=env, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None
    if r.returncode != 0:
        raise RuntimeError(f"{case} {arg} ({engine}) failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="leave out the plain runs longer than a minute")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a plain run may take")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(run_case(*args.child)))
        return 0

    from rich.console import Console
    from rich.table import Table

    console = Console()
    folder = Path(tempfile.mkdtemp())
    cases = [("oracle", _worst("pool"), 20.0, None), ("oracle", _worst("study-m7m10"), 20.0, None),
             ("oracle", _generated("generated-40", folder), None, None),
             ("oracle", _generated("generated-64", folder), None, 5.0)]
    cases += [("generate", str(side), None, 10.0 if side == 40 else None) for side in GENERATOR_CASES]
    cases += [("attribution", "study", None, 15.0)]
    table = Table(title="compiled kernels against the plain searches (one run, each in its own process)")
    for col in ("case", "compiled s", "plain s", "ratio", "compiled MB", "plain MB"):
        table.add_column(col, justify="left" if col == "case" else "right")
    failed = 0
    for case, arg, ratio_goal, seconds_goal in cases:
        key = f"{case}-{arg}" if case == "generate" else case
        fast = child(case, arg, "compiled", args.timeout * 4)  # compiled even without a cache yet
        assert fast is not None
        plain = None if args.quick and key in SLOW_PLAIN else child(case, arg, "python", args.timeout)
        label = f"{case} {fast['what']}"
        plain_s = "not run" if plain is None and args.quick and key in SLOW_PLAIN else (
            f"> {args.timeout:.0f}" if plain is None else f"{plain['seconds']:.3f}")
        ratio = None if plain is None else plain["seconds"] / fast["seconds"]
        if plain is None and not (args.quick and key in SLOW_PLAIN):
            ratio_shown = f"> {args.timeout / fast['seconds']:.1f}x"
            low = args.timeout / fast["seconds"]
        else:
            ratio_shown = "" if ratio is None else f"{ratio:.1f}x"
            low = ratio
        table.add_row(label, f"{fast['seconds']:.3f}", plain_s, ratio_shown, f"{fast['peak_mb']:.0f}",
                      "" if plain is None else f"{plain['peak_mb']:.0f}")
        if ratio_goal is not None:
            met = low is not None and low >= ratio_goal
            record(f"{label}: compiled vs plain", f">= {ratio_goal:.0f}x", ratio_shown or "not run", low, met)
            failed += not met
        if seconds_goal is not None:
            met = fast["seconds"] < seconds_goal
            record(f"{label}: compiled", f"< {seconds_goal:.0f} s", f"{fast['seconds']:.1f} s",
                   seconds_goal / fast["seconds"], met)
            failed += not met
        if ratio_goal is None and seconds_goal is None:
            record(f"{label}: compiled vs plain", "", ratio_shown or "not run", low, None)
    console.print(table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
