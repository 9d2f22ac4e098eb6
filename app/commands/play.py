"""``gridbench play MAZE|SET``: a person plays in the browser; the games become traces."""

from __future__ import annotations

import asyncio
import getpass
from pathlib import Path

import typer

from env.names import name_chars


def _default_name() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        return "player"
    # 40 leaves room for the run name play-<name>-<time>, itself a name
    return name_chars(user, fill="")[:40] or "player"


def play(
    mazes: list[str] = typer.Argument(..., help="maze files, ids, set/id or a named set, played in this order"),
    name: str | None = typer.Option(None, "--name", help="the player's name: traces record model human/NAME"),
    protocol: str = typer.Option("gridbench-final", "--protocol", help="protocol preset: what the player is shown"),
    switch_frames: str = typer.Option("distinct", "--switch-frames",
                                      help="distinct, or study: switches drawn the same on and off, as the "
                                           "study's R1 frames showed them"),
    backend: str = typer.Option("minigrid", "--backend", help="minigrid (2D frames) or mujoco3d"),
    camera: str | None = typer.Option(None, "--camera", help="mujoco3d: top_down, first_person or first_person_narrow"),
    resolution: str | None = typer.Option(None, "--resolution", help="mujoco3d: grid (32 px per cell) or pixels a side"),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="port on 127.0.0.1 (0: any free port)"),
    out: Path = typer.Option(Path("results"), "--out", help="folder that holds runs"),
    run: str | None = typer.Option(None, "--run", help="run name (default play-NAME-<time>); an existing run is extended"),
) -> None:
    """Play mazes in the browser, seeing exactly what a model sees; each finished maze is saved."""
    from agents.protocol import resolve_protocol
    from app.sealed import sealed_line
    from app.web.play import default_run_name
    from app.web.play import play as play_mazes
    from env import resolve_mazes
    from env.names import check_name
    from env.sets import sealed_of

    player = check_name("--name", "", name if name is not None else _default_name(), "player name")
    from env.render import check_renderable, render_from_options

    render = render_from_options(backend, camera, resolution)
    preset = resolve_protocol({"preset": protocol, "switch_frames": switch_frames, "render": render}, "--protocol")
    resolved = resolve_mazes(list(mazes))
    sealed = sealed_of(list(mazes))  # as a sweep finds it: the run then records the set's commitment
    for m in resolved:
        check_renderable(m, render, m.id)
    # the default run name holds the player's: a name too long for it is refused as --name
    run_name = check_name("--run" if run else "--name", "", run or default_run_name(player), "run name")
    run_dir = out / run_name

    def ready(url: str) -> None:
        typer.echo(f"open {url} in a browser to play {len(resolved)} maze(s) as human/{player}", err=False)
        if sealed:
            typer.echo(sealed_line(sealed))

    result = asyncio.run(play_mazes(resolved, name=player, protocol=preset, run_dir=run_dir, port=port,
                                    on_ready=ready, sealed=sealed))
    solved = sum(1 for e in result.written if e.termination == "solved")
    typer.echo(f"{'stopped: ' if result.stopped else ''}wrote {len(result.written)} episode(s), "
               f"{solved} solved, to {result.run_dir}")


def register(app: typer.Typer) -> None:
    app.command("play")(play)
