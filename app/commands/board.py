"""``gridbench board RUN... --out DIR``: a verified board across runs (docs/board.md)."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import typer

from app.progress import ProgressBar
from env.errors import BadInput

VERDICTS_FILE = "verdicts.json"


def writable_folder(out: str) -> Path:
    """``--out`` as a local folder that exists and can be written, or bad input naming it."""
    from traces import is_uri

    if is_uri(out):
        raise BadInput(out, "--out", "must be a local folder (copy the board to object storage afterwards)")
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(out, "--out", f"cannot be created ({e.strerror or e})") from None
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(out, "--out", "is not a writable folder")
    return folder


def board_command(
    run_dirs: list[str] = typer.Argument(..., help="runs: folders (results/<run>), s3:// or gs:// URIs, or "
                                                   "exported dataset folders (gridbench export)"),
    out: str = typer.Option(..., "--out", help="the board's folder (local); a board written there before lends "
                                               "its verdicts: only new or changed episodes are replayed"),
    workers: int | None = typer.Option(None, "--workers", min=1, help="processes replaying episodes "
                                                                      "(default: one per CPU)"),
    gpu_hour_usd: float | None = typer.Option(None, "--gpu-hour-usd", min=0.0, metavar="USD",
                                              help="price of one GPU-hour, for the arms a run served itself"),
) -> None:
    """Write a static board of every arm across the runs: each episode replayed from its recorded actions
    (an arm is verified when all of its episodes reproduce), scores on the mazes the arms share with paired
    tests, provenance, sealed sets apart, two arms side by side, and board.json."""
    import pandas as pd

    from analysis.board import board, labelled, run_names
    from analysis.load import load_runs
    from app.web.board import write_site
    from episodes.verify import verify_runs
    from traces import ERROR, run_seal

    traces = load_runs(run_dirs)  # bad runs and sealed entries fail here, before anything is written
    for d in run_dirs:
        run_seal(d)
    folder = writable_folder(out)
    with ProgressBar("verifying episodes") as bar:
        checked = verify_runs(run_dirs, folder / VERDICTS_FILE, workers=workers, progress=bar.update)
    verdicts = pd.DataFrame([{"run": run, "episode_id": eid, **asdict(v)} for (run, eid), v in checked.verdicts.items()])
    payload = board(traces, verdicts, gpu_hour_usd=gpu_hour_usd)
    run_dirs_by_name = {name: d for d in run_dirs for name in run_names(d)}
    everything, _ = labelled(traces)
    write_site(folder, payload, everything[everything["termination"] != ERROR], run_dirs_by_name)
    every = payload["arms"] + payload["sealed"]
    verified = sum(a["verified"] for a in every)
    typer.echo(f"{len(every)} arms ({len(payload['sealed'])} sealed), {verified} verified; "
               f"{checked.replayed} episodes replayed, {len(checked.verdicts) - checked.replayed} verdicts reused "
               f"-> {folder / 'index.html'}")
    for a in every:
        for f in a["not_reproduced"]:
            typer.echo(f"not reproduced: {a['arm']}: run {f['run']} episode {f['episode_id']} departs at step "
                       f"{f['step']} ({f['column']})", err=True)


def register(app: typer.Typer) -> None:
    app.command("board")(board_command)
