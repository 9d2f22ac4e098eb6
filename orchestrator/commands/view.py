"""``gridbench view RUN_DIR``: write the static HTML trace viewer of a run."""

from __future__ import annotations

from pathlib import Path

import typer


def view(
    run_dir: Path = typer.Argument(..., help="a run folder (results/<run>)"),
    out: Path | None = typer.Option(None, "--out", help="where to write the bundle (default RUN_DIR/view)"),
) -> None:
    """Write a static HTML viewer of a run: an episode index, and every episode drawn in the browser."""
    from orchestrator.web.viewer import build_view, older_layout

    summary = build_view(run_dir, out)
    typer.echo(f"wrote the viewer of {summary.episodes} episodes ({summary.steps} steps) in "
               f"{len(summary.files)} files, {summary.bytes / 2**20:.1f} MiB; "
               f"open {summary.out_dir / 'index.html'}")
    if summary.without_frames:
        typer.echo(f"{len(summary.without_frames)} episodes have no frames: their mazes are not in "
                   "the run's manifest", err=True)
    for old in older_layout(summary.out_dir):
        typer.echo(f"{old} is left from an older viewer (a file per episode or frame) and is no longer "
                   "used: it may be deleted", err=True)


def register(app: typer.Typer) -> None:
    app.command("view")(view)
