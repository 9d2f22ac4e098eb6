"""``gridbench report RUN_DIR [RUN_DIR ...]``: every analysis of the study as a report folder."""

from __future__ import annotations

import os

import typer

# Arrow's allocator for this process: pyarrow reads it once, when it loads (below, in the command;
# a user's own setting wins). The C library's malloc gives large blocks back to the system once they
# are freed, where pyarrow's default (mimalloc) keeps them: the scans of the traces (the episodes,
# the steps into DuckDB, the discovery timelines' steps) no longer leave their memory behind, about
# 50 MB of the report's peak RSS (docs/report.md, *Memory and time*).
ARROW_ALLOCATOR = ("ARROW_DEFAULT_MEMORY_POOL", "system")


def report(
    run_dirs: list[str] = typer.Argument(..., help="runs: folders (results/<run>) or s3:// / gs:// URIs; "
                                                   "several share one report"),
    out: str | None = typer.Option(None, "--out", help="report folder or URI (default: RUN_DIR/report for one "
                                                       "run, ./report for several)"),
    gpu_hour_usd: float | None = typer.Option(
        None, "--gpu-hour-usd", min=0.0, metavar="USD",
        help="price of one GPU-hour: costs each model a run served itself (its replicas x GPUs per replica x "
             "the hours its episodes were in flight) in USD, beside the hosted models' USD in the cost table"),
) -> None:
    """Write report.md, report.html (self-contained), figures (PNG), tables (CSV) and metrics.json."""
    os.environ.setdefault(*ARROW_ALLOCATOR)
    # analysis is imported here, not at module level: only this command needs pandas and matplotlib
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from analysis.load import load_runs
    from app.sealed import warn_if_sealed
    from traces import open_store

    stores = [open_store(d, "RUN_DIR") for d in run_dirs]
    warn_if_sealed(run_dirs, "the report")
    target = open_store(out, "--out") if out else (stores[0].child("report") if len(stores) == 1
                                                    else open_store("report"))
    # a report for object storage is written to a local folder first, then uploaded
    folder = target.local_dir()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), transient=True) as bar:
        task = bar.add_task("reading traces")
        traces = load_runs(run_dirs)
        bar.update(task, description="reading steps")
        from analysis.steps import annotate

        # no episode to report (all ended in error): no steps to read, and write_report says so
        steps = annotate(traces) if not traces.episodes.empty else None
        bar.update(task, description="computing tables")
        # matplotlib, scipy and statsmodels load only once the steps are in DuckDB: the memory the
        # scan took for a while and theirs, held to the end, never add up (docs/report.md)
        from analysis.report import write_report

        metrics = write_report(traces, folder, progress=lambda what: bar.update(task, description=f"drawing {what}"),
                               steps=steps, gpu_hour_usd=gpu_hour_usd)
        if not target.local:
            bar.update(task, description=f"uploading to {target.display()}")
            target.put_folder(folder, last=("report.html", "report.md"))
    head = metrics["headline"]
    where = str(folder) if target.local else f"{target.display()} (local copy: {folder})"
    # the models' counts; built-in agents are references, counted apart (docs/report.md)
    refs = head.get("references") or {}
    apart = (" (references apart: " + ", ".join(f"{arm} {r['solves']}/{r['episodes']}" for arm, r in refs.items())
             + ")") if refs else ""
    typer.echo(f"{head['episodes']} episodes, {head['solves']} solved{apart}, "
               f"{len(metrics['figures'])} figures, {len(metrics['tables'])} tables -> {where}")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
