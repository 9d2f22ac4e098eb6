"""``gridbench view RUN_DIR``: write the static HTML trace viewer of a run."""

from __future__ import annotations

import typer


def view(
    run_dir: str = typer.Argument(..., help="a run: its folder (results/<run>) or its s3:// or gs:// URI"),
    out: str | None = typer.Option(None, "--out", help="where to write the bundle: a folder or a URI "
                                                       "(default RUN_DIR/view)"),
) -> None:
    """Write a static HTML viewer of a run: an episode index, and every episode drawn in the browser."""
    from app.sealed import warn_if_sealed
    from app.web.viewer import build_view, older_layout
    from traces import open_store

    target = open_store(out, "--out") if out else open_store(run_dir, "RUN_DIR").child("view")
    warn_if_sealed([run_dir], "the viewer")
    # a bundle for object storage is built in a local folder first, then uploaded, the index last
    folder = target.local_dir()
    summary = build_view(run_dir, folder)
    if not target.local:
        target.put_folder(folder, last=("index.html",))
        typer.echo(f"uploaded to {target.display()}")
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
