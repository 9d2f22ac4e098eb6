"""Deterministic runs whose reports are kept as golden files, and the comparison against them.

Each case builds one or more run folders (built-in agents played with ``run_episode``, or
traces fabricated with ``tracefab``) and reports them together. The golden files under
``golden/<case>/`` are that report's ``metrics.json`` and every CSV table, written by the
report code of the day they were captured; ``test_report_golden.py`` rebuilds the runs,
reports them with today's code and compares. Rewrite them (only for an intended change, said in
the commit message and docs/report.md) with::

    python tests/analysis/golden.py --write
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
GOLDEN = HERE / "golden"
MAZES = HERE.parents[0] / "orchestrator" / "mazes"
# floats may differ in their last bits when sums are taken in another order
REL, ABS = 1e-9, 1e-12

from test_failure import KEYS, QUARTERS, THINK, WALLS  # noqa: E402
from tracefab import demo_run, episode_row, play, room_maze, write_run  # noqa: E402


def builtin_runs(root: Path) -> list[Path]:
    """Built-in agents on the test mazes under two conditions (the random agent's seed differs)."""
    from agents import Protocol, build_agent
    from env import resolve_mazes
    from episodes.episode import run_episode
    from traces import EpisodeIdentity, write_episode, write_manifest

    out = root / "builtin"
    mazes = resolve_mazes(str(MAZES))
    protocol = Protocol.preset("gridbench-final")
    for condition, seed in (("baseline", 1), ("reseeded", 2)):
        for m in mazes:
            for name in ("oracle", "random", "explorer"):
                agent = build_agent(f"builtin/{name}", protocol, seed=seed)
                identity = EpisodeIdentity(run="builtin", episode_id=f"{name}-{m.id}-{condition}", model_name=name,
                                           model=f"builtin/{name}", condition=condition, repeat=0, maze_id=m.id)
                write_episode(out, asyncio.run(run_episode(m, agent, protocol, identity)))
    write_manifest(out, run="builtin", sweep={"name": "builtin"}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["golden"]})
    return [out]


def hand_runs(root: Path) -> list[Path]:
    """The hand-built episodes of test_failure.py (every verb, a live switch, wall bumps,
    quarters), and one that only turns and sends an invalid reply."""
    import env.oracle

    maze = env.resolve_maze("example")
    episodes, steps = [], []
    for name, actions, kw in (("keys", KEYS, {}), ("walls", WALLS, {}),
                              ("quarters", QUARTERS, {"reasoning_tokens": THINK}),
                              ("spinner", ["left", None, "left", "left"], {"reasoning_tokens": [5, 9, 5, 7]}),
                              ("oracle", env.oracle.optimal_actions(maze).plan_names, {})):
        row, st = play(maze, actions, model_name=name, **kw)
        episodes.append(row)
        steps += st
    return [write_run(root / "hand", episodes, steps)]


def demo_runs(root: Path) -> list[Path]:
    """Two runs of biased random agents, reported together: budgets that differ, reasoning
    counts, repeats, a blank run column, a maze the report cannot find, an error episode."""
    from env import resolve_mazes

    mazes = [*resolve_mazes(str(MAZES)), room_maze(6)]
    a = demo_run(root / "demo-a", mazes, {"walker": (1, 1, 6, 1, 1, 0.1), "turner": (4, 4, 2, 1, 1, 0.1)},
                 repeats=2, seed=3, budgets={"walker": {"thinking_budget": 64000, "max_output_tokens": 70000},
                                             "turner": {"reasoning_effort": "high", "max_output_tokens": 70000}})
    lost = room_maze(7, maze_id="lost-room")  # not in the run's manifest nor in any set
    rows, steps = [], []
    for i, (m, acts) in enumerate([(lost, ["forward"] * 9 + ["right"] + ["forward"] * 9),
                                   (lost, ["forward", "forward", "left", "forward"] * 6),
                                   (mazes[-1], ["forward"] * 4 + ["right"] + ["forward"] * 4)]):
        row, st = play(m, acts, run="", model_name="walker", episode_id=f"b-{i}",
                       reasoning_tokens=[7 * (j % 5) for j in range(len(acts))])
        rows.append(row)
        steps += st
    rows.append(episode_row(run="", model_name="walker", maze_id=lost.id, episode_id="b-error", termination="error",
                            error_class="Timeout", steps=0))
    b = write_run(root / "demo-b", rows, steps)
    return [a, b]


def nosteps_runs(root: Path) -> list[Path]:
    """Episode rows with no steps at all (fabricated outcomes), and one error episode."""
    rows = []
    for i, (model, maze, side, opt, solved, prog, closest) in enumerate([
            ("A", "m1", 8, 20, True, 1.0, 0), ("A", "m2", 10, 40, False, 0.5, 12), ("A", "m3", 14, 55, False, 0.2, 30),
            ("B", "m1", 8, 20, False, 0.4, 8), ("B", "m2", 10, 40, False, 0.3, 20), ("B", "m3", 14, 80, True, 1.0, 0)]):
        rows.append(episode_row(model_name=model, maze_id=maze, grid_width=side, grid_height=side,
                                grid=f"{side}x{side}", optimal_actions=opt, n_keys=i % 2, n_doors=i % 2,
                                n_switches=int(i % 3 > 0), n_gates=int(i % 3 > 0), solved=solved, progress_action=prog,
                                progress_tile=min(1.0, prog + 0.1), closest_action=closest,
                                termination="solved" if solved else "stall", d_end_action=closest + i))
    rows.append(episode_row(model_name="B", maze_id="m2", repeat=1, termination="error", progress_action=None))
    return [write_run(root / "nosteps", rows, [])]


CASES: dict[str, Callable[[Path], list[Path]]] = {
    "builtin": builtin_runs, "hand": hand_runs, "demo": demo_runs, "nosteps": nosteps_runs}


def report_outputs(report: Path) -> dict[str, str]:
    """The files a golden comparison reads: metrics.json and every CSV table, as text."""
    return {p.name: p.read_text() for p in sorted(report.iterdir()) if p.suffix in (".json", ".csv")}


def build(case: str, root: Path) -> dict[str, str]:
    from analysis.report import build_report

    runs = CASES[case](root)
    build_report(runs, root / "report")
    return report_outputs(root / "report")


def _same_number(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL, abs_tol=ABS)


def json_differences(want, got, where: str = "") -> list[str]:
    """Where two parsed JSON documents differ: ints, strings and structure exactly, floats within
    the tolerance."""
    if isinstance(want, dict) and isinstance(got, dict):
        if list(want) != list(got):
            return [f"{where}: keys {list(want)} != {list(got)}"]
        return [d for k in want for d in json_differences(want[k], got[k], f"{where}.{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{where}: {len(want)} items != {len(got)}"]
        return [d for i, (w, g) in enumerate(zip(want, got, strict=True)) for d in json_differences(w, g, f"{where}[{i}]")]
    if isinstance(want, float) and isinstance(got, float):
        return [] if _same_number(want, got) else [f"{where}: {want!r} != {got!r}"]
    if type(want) is not type(got) or want != got:
        return [f"{where}: {want!r} != {got!r}"]
    return []


def _float(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def csv_differences(want: str, got: str, name: str) -> list[str]:
    """Cell by cell: equal text, or both non-integer numbers within the tolerance."""
    w_rows, g_rows = list(csv.reader(io.StringIO(want))), list(csv.reader(io.StringIO(got)))
    if len(w_rows) != len(g_rows):
        return [f"{name}: {len(w_rows)} lines != {len(g_rows)}"]
    out = []
    for i, (w, g) in enumerate(zip(w_rows, g_rows, strict=True)):
        if len(w) != len(g):
            out.append(f"{name} line {i}: {w} != {g}")
            continue
        for j, (a, b) in enumerate(zip(w, g, strict=True)):
            fa, fb = _float(a), _float(b)
            integer = a.lstrip("-").isdigit() or b.lstrip("-").isdigit()
            if a != b and (integer or fa is None or fb is None or not _same_number(fa, fb)):
                out.append(f"{name} line {i} column {w_rows[0][j] if j < len(w_rows[0]) else j}: {a!r} != {b!r}")
    return out


def differences(want: dict[str, str], got: dict[str, str]) -> list[str]:
    if set(want) != set(got):
        return [f"files: {sorted(set(want) ^ set(got))} in one report only"]
    out = []
    for name in want:
        if name.endswith(".json"):
            out += json_differences(json.loads(want[name]), json.loads(got[name]), name)
        else:
            out += csv_differences(want[name], got[name], name)
    return out


def write_goldens() -> None:
    import shutil
    import tempfile

    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            files = build(case, Path(tmp))
        target = GOLDEN / case
        old = report_outputs(target) if target.is_dir() else {}
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        kept = 0
        for name, text in files.items():
            # a file equal within the tolerance keeps its old text: a rewrite shows only what changed
            same = name in old and not differences({name: old[name]}, {name: text})
            (target / name).write_text(old[name] if same else text)
            kept += same
        print(f"{case}: {len(files)} files, {len(files) - kept} rewritten")


def read_golden(case: str) -> dict[str, str]:
    return report_outputs(GOLDEN / case)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/analysis/golden.py --write")
    write_goldens()
