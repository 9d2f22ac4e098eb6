"""``gridbench report RUN_DIR [RUN_DIR ...]``: every analysis of the study as a report folder."""

from __future__ import annotations

from pathlib import Path

import typer


def report(
    run_dirs: list[Path] = typer.Argument(..., help="run folders (results/<run>); several share one report"),
    out: Path | None = typer.Option(None, "--out", help="report folder (default: RUN_DIR/report for one run, "
                                                        "./report for several)"),
) -> None:
    """Write report.md, report.html (self-contained), figures (PNG), tables (CSV) and metrics.json."""
    # analysis is imported here, not at module level: only this command needs pandas and matplotlib
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from analysis.load import load_runs

    target = out or (run_dirs[0] / "report" if len(run_dirs) == 1 else Path("report"))
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), transient=True) as bar:
        task = bar.add_task("reading traces")
        traces = load_runs(run_dirs)
        bar.update(task, description="computing tables")
        # matplotlib, scipy and statsmodels load only once the runs have been read
        from analysis.report import write_report

        metrics = write_report(traces, target, progress=lambda what: bar.update(task, description=f"drawing {what}"))
    head = metrics["headline"]
    typer.echo(f"{head['episodes']} episodes, {head['solves']} solved, "
               f"{len(metrics['figures'])} figures, {len(metrics['tables'])} tables -> {target}")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
