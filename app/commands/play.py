"""``gridbench play MAZE|SET``: a person plays in the browser; the games become traces.
``--serve``: many people at once, each maze to its quota of participants (``app.web.play_service``)."""

from __future__ import annotations

import asyncio
import getpass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from env.names import name_chars

if TYPE_CHECKING:
    from agents.protocol import Protocol
    from env import Maze


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
    port: int = typer.Option(0, "--port", min=0, max=65535, help="port to listen on (0: any free port)"),
    out: Path = typer.Option(Path("results"), "--out", help="folder that holds runs"),
    run: str | None = typer.Option(None, "--run", help="run name (default play-NAME-<time>, or play-serve-<time> "
                                                       "with --serve); an existing run is extended"),
    serve: bool = typer.Option(False, "--serve", help="serve many participants at once, each with a random id "
                                                      "after accepting the consent line, until each maze has "
                                                      "its --quota of finished games"),
    host: str | None = typer.Option(None, "--host", help="--serve: address to listen on (default 127.0.0.1)"),
    allow_host: list[str] | None = typer.Option(None, "--allow-host",
                                                help="--serve: a host name players reach the server by (repeat "
                                                     "for several); required when --host is not loopback"),
    quota: int | None = typer.Option(None, "--quota", min=1, help="--serve: finished games wanted per maze (default 1)"),
    max_sessions: int | None = typer.Option(None, "--max-sessions", min=1,
                                            help="--serve: participants at once (default 100); one more is told "
                                                 "to come back later"),
    idle_timeout: float | None = typer.Option(None, "--idle-timeout", min=30,
                                              help="--serve: seconds without a request after which a session "
                                                   "ends, its unfinished maze dropped (default 600)"),
    consent: str | None = typer.Option(None, "--consent", help="--serve: the consent line shown before the "
                                                               "first maze and recorded with each participant"),
) -> None:
    """Play mazes in the browser, seeing exactly what a model sees; each finished maze is saved.
    With --serve, many participants at once, each maze to its quota (docs/viewer.md)."""
    from agents.protocol import resolve_protocol
    from app.sealed import sealed_line
    from app.web.play import default_run_name
    from env import BadInput, resolve_mazes
    from env.names import check_name
    from env.sets import sealed_of

    served = {"--host": host, "--allow-host": allow_host or None, "--quota": quota, "--max-sessions": max_sessions,
              "--idle-timeout": idle_timeout, "--consent": consent}
    if serve and name is not None:
        raise BadInput("--name", "", "does not go with --serve: each participant gets a random id")
    if not serve and (given := next((k for k, v in served.items() if v is not None), None)):
        raise BadInput(given, "", "needs --serve")
    if consent is not None and not consent.strip():
        raise BadInput("--consent", "", "is empty: a participant must be shown what they agree to")
    player = "serve" if serve else check_name("--name", "", name if name is not None else _default_name(),
                                              "player name")
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

    if serve:
        _serve(resolved, preset, run_dir, port, host=host, allow_host=allow_host or [], quota=quota or 1,
               max_sessions=max_sessions or 100, idle_s=idle_timeout or 600.0, consent=consent)
        return
    from app.web.play import play as play_mazes

    def ready(url: str) -> None:
        typer.echo(f"open {url} in a browser to play {len(resolved)} maze(s) as human/{player}", err=False)
        if sealed:
            typer.echo(sealed_line(sealed))

    result = asyncio.run(play_mazes(resolved, name=player, protocol=preset, run_dir=run_dir, port=port,
                                    on_ready=ready, sealed=sealed))
    solved = sum(1 for e in result.written if e.termination == "solved")
    typer.echo(f"{'stopped: ' if result.stopped else ''}wrote {len(result.written)} episode(s), "
               f"{solved} solved, to {result.run_dir}")


def _serve(mazes: list[Maze], protocol: Protocol, run_dir: Path, port: int, *, host: str | None,
           allow_host: list[str], quota: int, max_sessions: int, idle_s: float, consent: str | None) -> None:
    from app.progress import ProgressBar
    from app.web.play import HOST, allowed_hosts
    from app.web.play_service import DEFAULT_CONSENT, serve

    allowed_hosts(host or HOST, allow_host)  # refused before anything starts

    def ready(url: str) -> None:
        typer.echo(f"open {url} in a browser: {len(mazes)} maze(s), {quota} finished game(s) each, "
                   f"at most {max_sessions} participant(s) at once", err=False)

    with ProgressBar("games toward the quotas") as bar:
        result = asyncio.run(serve(mazes, protocol=protocol, run_dir=run_dir, quota=quota, host=host or HOST,
                                   port=port, allow_hosts=allow_host, max_sessions=max_sessions, idle_s=idle_s,
                                   consent=consent or DEFAULT_CONSENT, on_ready=ready, on_progress=bar.update))
    solved = sum(1 for e in result.written if e.termination == "solved")
    typer.echo(f"every maze has its quota: wrote {len(result.written)} episode(s), {solved} solved, "
               f"by {len(result.participants)} participant(s) (at most {result.peak_sessions} at once), "
               f"to {result.run_dir}")


def register(app: typer.Typer) -> None:
    app.command("play")(play)
