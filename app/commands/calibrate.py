"""``gridbench calibrate SWEEP``: measure before spending (docs/cluster.md, *Calibrating before spending*).

A cheap model's sample run gives queries per episode, a one-maze probe of each of the sweep's
called arms gives its tokens (and USD) per query; their products project the sweep's spend under
three scenarios and suggest a ``--max-cost`` (``orchestrator.calibration``). It first shows what
it will spend at most, and it calls a paid model only under ``--max-cost``, which caps the sample
and the probe together.
"""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, JustifyMethod
from rich.table import Table

from env.errors import BadInput

if TYPE_CHECKING:
    from orchestrator.calibration import Calibration
    from orchestrator.estimate import ModelEstimate
    from orchestrator.sweep import Sweep
    from traces import RunStore


def _usd(v: float | None) -> str:
    """Small sums keep four decimals (a probe's cents), larger ones two."""
    if v is None:
        return "unknown"
    return f"${v:,.4f}" if v < 1 else f"${v:,.2f}"


def _paid(s: Sweep) -> bool:
    """The sweep calls a model that bills (at a provider, not served by the sweep)."""
    return any(m.billed for m in s.models)


def _plan(runs: list[tuple[str, Sweep, RunStore]]) -> list[tuple[str, ModelEstimate]]:
    """Per run and arm: what the episodes still to run will cost (``orchestrator.estimate``)."""
    from app.progress import ProgressBar
    from orchestrator.estimate import estimate, observed
    from traces import completed_ids

    out = []
    with ProgressBar("estimating the cost") as bar:
        for label, s, store in runs:
            done = completed_ids(store, include_errors=False)
            todo = [e for e in s.episodes() if e.episode_id not in done]
            out += [(label, row) for row in estimate(todo, observed(store), bar.update)]
    return out


def _bound(plan: list[tuple[str, ModelEstimate]]) -> float | None:
    costs = [row.cost_max for _, row in plan if row.price_source != "built-in (free)"]
    return None if None in costs else sum(c for c in costs if c is not None)


def _plan_table(plan: list[tuple[str, ModelEstimate]], max_cost: float | None) -> Table:
    table = Table(title="what calibrate runs and may spend (upper bound: every call at the step cap and its output "
                        "cap)")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("run", "left"), ("arm", "left"), ("episodes to run", "right"), ("calls <=", "right"),
        ("upper bound", "right"), ("typical", "right"), ("tier", "left"), ("typical from", "left"))
    for col, justify in columns:
        table.add_column(col, justify=justify, overflow="fold")
    for label, e in plan:
        table.add_row(label, e.name, str(e.episodes), f"{e.calls_max:,}", _usd(e.cost_max), _usd(e.cost_typical),
                      e.tier, e.typical_source)
    bound = _bound(plan)
    table.add_row("all", "", str(sum(e.episodes for _, e in plan)), f"{sum(e.calls_max for _, e in plan):,}",
                  _usd(bound), "", "", f"--max-cost {max_cost:,.2f} caps both runs" if max_cost else "", style="bold")
    return table


def _profile_table(cal: Calibration) -> Table:
    table = Table(title=f"tokens per query: the one-maze probe ({cal.probe['maze_id']})")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("arm", "left"), ("condition", "left"), ("episodes", "right"), ("queries", "right"), ("input", "right"),
        ("of it cached", "right"), ("output", "right"), ("of it reasoning", "right"), ("USD/query", "right"),
        ("tier", "left"), ("price", "left"))
    for col, justify in columns:
        table.add_column(col, justify=justify, overflow="fold")
    for p in cal.profiles:
        d = p.to_dict()
        table.add_row(p.arm, p.condition, str(p.episodes), str(p.calls), f"{d['input_per_query']:,.1f}",
                      f"{d['cached_per_query']:,.1f}", f"{d['output_per_query']:,.1f}",
                      f"{d['reasoning_per_query']:,.1f}",
                      "unknown" if p.usd_per_query is None else f"${p.usd_per_query:.6f}", p.tier, p.price_source)
    return table


def _projection_table(cal: Calibration) -> Table:
    q = cal.queries_per_episode
    table = Table(title=f"projected spend of {cal.sweep} (USD per query x queries per episode: mean {q.mean:.1f}, "
                        f"p90 {q.p90:.1f}, cap: each episode's step cap)")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("arm", "left"), ("episodes", "right"), ("queries ~ (mean)", "right"), ("at mean", "right"),
        ("at p90", "right"), ("at cap", "right"), ("suggested max_cost", "right"))
    for col, justify in columns:
        table.add_column(col, justify=justify, overflow="fold")
    for p in cal.projections:
        table.add_row(p.arm, str(p.episodes), f"{p.queries['mean']:,.0f}", _usd(p.usd["mean"]), _usd(p.usd["p90"]),
                      _usd(p.usd["cap"]), "unknown" if p.suggested_max_cost is None else f"{p.suggested_max_cost:,.2f}")

    def total(scenario: str) -> float | None:
        values = [p.usd[scenario] for p in cal.projections]
        return None if None in values else sum(v for v in values if v is not None)

    suggested = cal.suggested_max_cost
    table.add_row("all", str(sum(p.episodes for p in cal.projections)),
                  f"{sum(p.queries['mean'] for p in cal.projections):,.0f}", _usd(total("mean")), _usd(total("p90")),
                  _usd(total("cap")), "unknown" if suggested is None else f"--max-cost {suggested:,.2f}", style="bold")
    return table


def _command_line(sweep: str, sample: str, probe_maze: str | None, out: str, address: str | None,
                  max_cost: float | None, preflight: bool) -> list[str]:
    cmd = ["gridbench", "calibrate", sweep]
    for flag, value in (("--sample", sample), ("--probe-maze", probe_maze), ("--out", out), ("--address", address),
                        ("--max-cost", None if max_cost is None else str(max_cost))):
        if value is not None:
            cmd += [flag, value]
    return cmd if preflight else [*cmd, "--no-preflight"]


def _spent(outcome: Any) -> float:
    return sum(float(v.get("spent") or 0.0) for v in outcome.ledger.values())


def calibrate_command(
    sweep: str = typer.Argument(..., help="the sweep to calibrate: a sweep file or a shipped sweep's name (frontier, ...)"),
    sample: str = typer.Option("calibrate", "--sample", help="the sweep whose cheap model measures queries per "
                               "episode (default: the shipped `calibrate`)"),
    probe_maze: str | None = typer.Option(None, "--probe-maze", help="the maze each arm is probed on (default: the "
                                          "sample's maze of median optimal length)"),
    out: str = typer.Option("results", "--out", help="where the runs and results' calibration/<sweep>.json go"),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address (default: an embedded local Ray)"),
    max_cost: float | None = typer.Option(None, "--max-cost", help="USD the sample and the probe may spend together "
                                          "(required when they call a paid model)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would run and its upper bound, and exit"),
    json_out: bool = typer.Option(False, "--json", help="print the calibration (or with --dry-run the plan) as JSON"),
    preflight: bool = typer.Option(True, "--preflight/--no-preflight", help="check each called arm's endpoint, key "
                                   "and model before the first episode"),
) -> None:
    """Measure queries per episode (a cheap sample) and tokens per query (a one-maze probe of each
    arm), then project what SWEEP will cost and suggest a --max-cost."""
    from app.progress import building_twins
    from env.sets import resolve_maze
    from orchestrator.calibration import probe_maze as median_maze
    from orchestrator.calibration import probe_sweep
    from orchestrator.sweep import load_sweep
    from traces import open_store

    if max_cost is not None and not max_cost > 0:
        raise BadInput("--max-cost", "", f"must be a number of USD > 0 (got {max_cost})")
    target = load_sweep(sweep)
    sampled = load_sweep(sample, max_cost=max_cost)
    with building_twins() as progress:
        target.build_twins(progress)
        sampled.build_twins(progress)
    try:
        maze = resolve_maze(probe_maze) if probe_maze else median_maze(sampled.mazes)
    except BadInput as err:
        raise BadInput("--probe-maze", "", err.line()) from None
    probe = probe_sweep(target, maze, f"{target.name}-probe", None)
    if not probe.models:
        raise BadInput(target.source, "models", "no called model to probe (every arm is built in)")
    root = open_store(out, "--out")
    stores = {"sample": root.child(sampled.run_name), "probe": root.child(probe.run_name)}
    for store in stores.values():
        store.check_location()
    stdout = Console() if sys.stdout.isatty() else Console(width=200)
    plan = _plan([("sample", sampled, stores["sample"]), ("probe", probe, stores["probe"])])
    paid = _paid(sampled) or _paid(probe)
    if dry_run and json_out:
        print(json.dumps({"sweep": target.name, "sample": sampled.name, "probe_maze": maze.id,
                          "plan": [{"run": label, **row.to_dict()} for label, row in plan],
                          "upper_bound": _bound(plan), "max_cost": max_cost}, indent=2))
        return
    shown = Console(stderr=True) if json_out else stdout
    shown.print(_plan_table(plan, max_cost))
    shown.print(f"sample: {sampled.name}, {len(sampled.episodes())} episodes; probe: every called arm of {target.name} "
                f"on {maze.id}" + ("" if probe_maze else " (the sample's maze of median optimal length)"),
                markup=False, highlight=False, soft_wrap=True)
    if dry_run:
        return
    if paid and max_cost is None:
        bound = _bound(plan)
        raise BadInput("--max-cost", "", f"calibrate calls a paid model (upper bound {_usd(bound)}): give the most it "
                       "may spend, e.g. --max-cost " + (f"{math.ceil(bound)}" if bound else "USD"))
    sampled.check_keys()
    probe.check_keys()
    if preflight:
        from orchestrator.preflight import check_called, summary

        for s in (sampled, probe):
            for line in summary(check_called(s)):
                Console(stderr=True).print(line, markup=False, highlight=False, soft_wrap=True)
    command = _command_line(sweep, sample, probe_maze, out, address, max_cost, preflight)
    runs_out = Console(stderr=True) if json_out else stdout
    try:
        code = _run_both(sampled, probe, stores, address, command, runs_out, max_cost, preflight)
    except KeyboardInterrupt:
        import shlex

        print(f"resume with the same command: {shlex.join(command)}", file=sys.stderr)
        raise
    if code:
        raise typer.Exit(code)
    cal = _measure(target, sampled, probe, maze, stores, command)
    from orchestrator.calibration import save

    where = save(root, cal)
    unmeasured = [p.arm for p in cal.projections if p.usd["mean"] is None]
    for arm in unmeasured:  # no finished probe episode (its errors are above) or no price
        print(f"gridbench: {arm}: projection unknown (no finished probe episode, or no price known)", file=sys.stderr)
    if json_out:
        print(json.dumps(cal.to_dict(), indent=2))
        if unmeasured:
            raise typer.Exit(1)
        return
    q = cal.queries_per_episode
    stdout.print(f"queries per episode: mean {q.mean:.2f}, p90 {q.p90:.2f}, max {q.max} over {q.episodes} finished "
                 f"episodes of {sampled.name} ({stores['sample'].display()})", markup=False, highlight=False)
    stdout.print(_profile_table(cal))
    stdout.print(_projection_table(cal))
    for name, why in cal.scenarios.items():
        stdout.print(f"{name}: {why}", markup=False, highlight=False)
    if cal.suggested_max_cost is not None:
        stdout.print(f"suggested: gridbench run {sweep} --max-cost {cal.suggested_max_cost:.2f} (the cap scenario, "
                     "rounded up to the cent)", markup=False, highlight=False)
    stdout.print(f"calibration: {where}; `gridbench run {sweep} --dry-run` takes its typical figure from it",
                 markup=False, highlight=False, soft_wrap=True)
    if unmeasured:
        raise typer.Exit(1)


def _run_both(sampled: Sweep, probe: Sweep, stores: dict[str, RunStore], address: str | None, command: list[str],
              console: Console, max_cost: float | None, preflight: bool) -> int:
    """The sample, then the probe with what ``max_cost`` leaves; one Ray for both. Returns the
    exit code: 0, or 1 when the sample did not finish (its queries per episode would be biased)."""
    from dataclasses import replace

    from app.commands.run import execute, show_result
    from orchestrator.connect import connect, disconnect

    started = connect(address)  # one Ray for both runs
    try:
        # the arms of both runs were checked before the sample started
        result = execute(sampled, stores["sample"], command, address=address, preflight=preflight, arms_checked=True)
        show_result(sampled, stores["sample"], result, console, command)
        outcome = result.outcome
        if outcome.stop is not None:
            return outcome.exit_code
        if outcome.unfinished or outcome.episodes is None or not len(outcome.episodes):
            print("gridbench: the sample did not finish (budget reached): rerun with a higher --max-cost; no call "
                  "is paid twice", file=sys.stderr)
            return 1
        left = None if max_cost is None else max_cost - _spent(outcome)
        if left is not None and left <= 0:
            print(f"gridbench: the sample spent all of --max-cost {max_cost:.2f}: rerun with a higher one to probe",
                  file=sys.stderr)
            return 1
        probe = replace(probe, max_cost=left)
        result = execute(probe, stores["probe"], command, address=address, preflight=preflight, arms_checked=True)
        show_result(probe, stores["probe"], result, console, command)
        return result.outcome.exit_code if result.outcome.stop is not None else 0
    finally:
        if started:
            disconnect()


def _measure(target: Sweep, sampled: Sweep, probe: Sweep, maze: Any, stores: dict[str, RunStore],
             command: list[str]) -> Calibration:
    """The calibration from the two runs' finished episodes (every invocation's)."""
    from episodes.episode import gridbench_version
    from orchestrator.calibration import Calibration, QueriesPerEpisode, finished, now, profiles, project
    from traces import read_episodes

    sample_eps = read_episodes(stores["sample"], {e.episode_id for e in sampled.episodes()})
    probe_eps = read_episodes(stores["probe"], {e.episode_id for e in probe.episodes()})
    try:
        qpe = QueriesPerEpisode.of(sample_eps)
    except ValueError:
        print("gridbench: every episode of the sample ended in error (above): nothing to measure", file=sys.stderr)
        raise typer.Exit(1) from None
    measured = profiles(target, probe_eps)
    done = finished(sample_eps)
    sample = {"sweep": sampled.name, "source": sampled.source, "run": stores["sample"].display(),
              "spent_usd": float(sample_eps["cost_usd"].sum()),
              "episodes": [{"episode_id": r.episode_id, "maze_id": r.maze_id, "arm": r.model_name, "calls": int(r.calls)}
                           for r in done.itertuples()]}
    probe_info = {"run": stores["probe"].display(), "maze_id": maze.id, "maze_checksum": maze.checksum,
                  "spent_usd": float(probe_eps["cost_usd"].sum()) if len(probe_eps) else 0.0,
                  "episodes": [str(i) for i in finished(probe_eps)["episode_id"]] if len(probe_eps) else []}
    return Calibration(target.name, target.source, now(), gridbench_version(), command, sample, probe_info, qpe,
                       measured, project(target.episodes(), qpe, measured))


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_command)
