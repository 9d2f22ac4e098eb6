"""``gridbench export RUN --out DIR``: a run as a Hugging Face dataset folder (docs/export.md)."""

from __future__ import annotations

import typer

from app.progress import ProgressBar


def export_command(
    run_dir: str = typer.Argument(..., help="a run: its folder (results/<run>) or its s3:// or gs:// URI"),
    out: str = typer.Option(..., "--out", help="the dataset folder to write (local; must not exist, or be empty)"),
    force: bool = typer.Option(False, "--force", help="replace an earlier export at --out"),
    unsealed: bool = typer.Option(False, "--unsealed",
                                  help="export a run on a sealed set, whose traces show its mazes (refused without it)"),
) -> None:
    """Write a run as a Hugging Face dataset folder: Parquet shards of its episodes and steps, a dataset card
    (README.md: the run, the schema, the mazes' licence and provenance, how to load it) and the run's manifest.

    The folder reads back as the run: `gridbench report DIR` gives the report of the run itself. It is written
    in a temporary folder beside DIR and renamed into place whole.
    """
    from traces import export_run

    with ProgressBar("exporting rows") as bar:
        result = export_run(run_dir, out, force=force, unsealed=unsealed, progress=bar.update)
    files = sum(len(v) for v in result.shards.values())
    typer.echo(f"{result.rows['episodes']} episodes and {result.rows['steps']} steps in {files} shards, "
               f"license {result.licence} -> {result.folder}")


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
