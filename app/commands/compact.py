"""``gridbench compact RUN``: pack a run's per-episode files into a few large Parquet files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from env.errors import BadInput

if TYPE_CHECKING:
    from traces import CompactionResult, RunStore


@contextmanager
def compacting(console: Console) -> Iterator[Callable[[str, int, int], None]]:
    """A compaction's progress (``traces.compact``'s ``progress``) as a bar per table on ``console``,
    shown only once a compaction reports."""
    columns = [TextColumn("compacting {task.description:<8}"), BarColumn(bar_width=24), MofNCompleteColumn(),
               TextColumn("files"), TimeRemainingColumn()]
    # started on the first report: a run's own live display has ended by then
    bar = Progress(*columns, console=console, transient=True)
    tasks: dict[str, TaskID] = {}

    def progress(table: str, done: int, total: int) -> None:
        if not tasks:
            bar.start()
        if table not in tasks:
            tasks[table] = bar.add_task(table, total=total)
        bar.update(tasks[table], completed=done, total=total)

    try:
        yield progress
    finally:
        if tasks:
            bar.stop()


def compact_with_progress(store: RunStore, console: Console) -> CompactionResult:
    """Compact ``store`` with a bar per table on ``console``; returns the ``CompactionResult``."""
    from traces import compact

    with compacting(console) as progress:
        return compact(store, progress=progress)


def summary_line(store: RunStore, result: CompactionResult) -> str:
    if not result.changed:
        return (f"{store.display()}: already compact ({result.files.get('episodes', 0)} episodes files, "
                f"{result.files.get('steps', 0)} steps files)")
    rows = result.rows
    return (f"{store.display()}: packed {result.episodes} episodes"
            + (f" and rewrote {result.rewritten} compacted files" if result.rewritten else "")
            + f" into {result.files['episodes']} episodes files ({rows.get('episodes', 0)} rows written) and "
            f"{result.files['steps']} steps files ({rows.get('steps', 0)} rows written)")


def compact_command(
    run_dir: str = typer.Argument(..., help="a run: its folder (results/<run>) or its s3:// or gs:// URI"),
) -> None:
    """Pack a run's per-episode files into a few large Parquet files (safe to rerun or to kill)."""
    from traces import EPISODES_DIR, MANIFEST, open_store

    store = open_store(run_dir, "RUN")
    if not store.exists(MANIFEST) and not store.is_dir(EPISODES_DIR):
        raise BadInput(store.display(), "", "no such run (neither manifest.json nor episodes/ is there)")
    result = compact_with_progress(store, Console(stderr=True))
    typer.echo(summary_line(store, result))


def register(app: typer.Typer) -> None:
    app.command("compact")(compact_command)
