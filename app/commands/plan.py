"""``gridbench plan RUN --delta D``: how many mazes and repeats would separate two arms that differ
by D in action progress, from the run's own variance."""

from __future__ import annotations

import typer


def plan(
    run_dirs: list[str] = typer.Argument(..., help="runs (folders or URIs) whose variance to plan from"),
    delta: float = typer.Option(..., "--delta", help="the difference in mean action progress to detect, in (0, 1]"),
    power: float = typer.Option(0.8, "--power", help="the chance of detecting it, in (0, 1)"),
    alpha: float = typer.Option(0.05, "--alpha", help="the test's level, in (0, 1) (the report's: 0.05)"),
) -> None:
    """Mazes needed per number of repeats for a two-sided paired test of two arms (docs/report.md)."""
    # analysis is imported here: only this command and `report` need pandas, scipy and statsmodels
    from analysis.load import load_runs
    from analysis.ranking import plan as planned

    traces = load_runs(run_dirs, resolve_mazes=False)
    table, var = planned(traces, delta, power, alpha)
    typer.echo(f"variance of action progress, pooled over {var['pairs']} pair(s) of arms on "
               f"{var['mazes_seen']} original mazes: between mazes {var['between']:.4g} (of the paired difference), "
               f"within a maze {var['within']:.4g} (over repeats; the run has up to {var['repeats_seen']})")
    if var["repeats_seen"] < 2:
        typer.echo("no maze was run twice: the within-maze variance is unknown and counted in the between-maze "
                   "one, so more repeats are planned as buying nothing")
    typer.echo(f"to detect a difference of {delta:g} with power {power:g} at alpha {alpha:g} (two-sided, "
               "one pair of arms; for k pairs under Holm pass --alpha 0.05/k):")
    typer.echo("repeats  mazes  episodes per arm")
    for row in table.itertuples():
        typer.echo(f"{row.repeats:>7}  {row.mazes:>5}  {row.episodes_per_arm:>16}")


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
