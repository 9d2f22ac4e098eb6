"""``gridbench view RUN_DIR``: write the static HTML trace viewer of a run."""

from __future__ import annotations

from pathlib import Path

import typer


def view(
    run_dir: Path = typer.Argument(..., help="a run folder (results/<run>)"),
    out: Path | None = typer.Option(None, "--out", help="where to write the bundle (default RUN_DIR/view)"),
) -> None:
    """Write a static HTML viewer of a run: an episode index and one page per episode."""
    from orchestrator.web.viewer import build_view

    summary = build_view(run_dir, out)
    typer.echo(f"wrote {summary.episodes} episode pages and {summary.frames_drawn} new frames; "
               f"open {summary.out_dir / 'index.html'}")
    if summary.without_frames:
        typer.echo(f"{len(summary.without_frames)} episodes have no frames: their mazes are not in "
                   "the run's manifest", err=True)


def register(app: typer.Typer) -> None:
    app.command("view")(view)
