"""``gridbench maze ...``: render, solve and check mazes, import them from elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from env import initial_state, png_bytes, render_state, resolve_mazes, text_projection

maze_app = typer.Typer(help="Render, solve, check and import mazes.", no_args_is_help=True)


@maze_app.command("show")
def show(
    maze: list[str] = typer.Argument(..., help="maze file, id, set/id or named set"),
    png: Path | None = typer.Option(None, "--png", help="write the start frame as PNG (a folder when several mazes)"),
    text: bool = typer.Option(False, "--text", help="print the text projection"),
    tile_size: int = typer.Option(32, "--tile-size", min=4, max=128),
) -> None:
    """Render mazes at their start state: PNG frames and/or the text projection."""
    mazes = resolve_mazes(list(maze))
    if png is None and not text:
        text = True
    for m in mazes:
        s = initial_state(m)
        if text:
            if len(mazes) > 1:
                typer.echo(f"== {m.id} ({m.width}x{m.height})")
            typer.echo(text_projection(m, s))
        if png is not None:
            out = png / f"{m.id}.png" if len(mazes) > 1 or png.is_dir() else png
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(f".{out.name}.tmp")  # renamed when complete: never half a PNG
            tmp.write_bytes(png_bytes(render_state(m, s, tile_size)))
            os.replace(tmp, out)
            typer.echo(f"wrote {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(maze_app, name="maze")
