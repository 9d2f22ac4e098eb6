"""``gridbench maze ...``: render, solve and check mazes, import them from elsewhere."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

# env.render (and with it Minigrid, gymnasium and pygame) is imported inside `show`: every command
# of the CLI imports this module, and `gridbench report` would otherwise carry them in its memory
from env import BadInput, initial_state, resolve_mazes, text_projection
from env.files import atomic_write
from env.variants import record_of

maze_app = typer.Typer(help="Render, solve, check and import mazes.", no_args_is_help=True)


@maze_app.command("show")
def show(
    maze: list[str] = typer.Argument(..., help="maze file, id, set/id or named set"),
    png: Path | None = typer.Option(None, "--png", help="write the start frame as PNG (a folder when several mazes)"),
    text: bool = typer.Option(False, "--text", help="print the text projection"),
    tile_size: int = typer.Option(32, "--tile-size", min=4, max=128),
    backend: str | None = typer.Option(None, "--backend", help="minigrid (2D) or mujoco3d; by default 2D, or a "
                                       "projection twin's own 3D view"),
    camera: str | None = typer.Option(None, "--camera", help="mujoco3d: top_down, first_person or first_person_narrow"),
    resolution: str | None = typer.Option(None, "--resolution", help="mujoco3d: grid (32 px per cell) or pixels a side"),
) -> None:
    """Render mazes at their start state: PNG frames and/or the text projection (in the maze's
    skin; a variant's text starts with what it changed and the maze it is the twin of; a 3D
    projection twin's frame is drawn in its own view unless --backend says otherwise)."""
    from env.maze import Maze
    from env.render import check_renderable, frame, png_bytes, render_from_options
    from env.render_settings import RenderSettings, render_settings
    from env.variants import projection_of

    render = render_from_options(backend or "minigrid", camera, resolution)
    mazes = resolve_mazes(list(maze))

    def view(m: Maze) -> RenderSettings:  # the frame a run shows a projection twin with, when no backend is asked for
        shown = projection_of(m)
        return render_settings(shown["render"]) if backend is None and shown and shown["observation"] != "text" else render

    for m in mazes:
        check_renderable(m, view(m), m.id)
    if png is None and not text:
        text = True
    for m in mazes:
        s = initial_state(m)
        if text:
            if len(mazes) > 1:
                typer.echo(f"== {m.id} ({m.width}x{m.height})")
            record = record_of(m)
            if record:
                typer.echo(f"{record['family']} variant {record['name']} of {record['twin_of']}: "
                           + "; ".join(record["changed"]))
            typer.echo(text_projection(m, s))
        if png is not None:
            out = png / f"{m.id}.png" if len(mazes) > 1 or png.is_dir() else png
            atomic_write(out, png_bytes(frame(m, s, tile_size, render=view(m))))
            typer.echo(f"wrote {out}")


@maze_app.command("solve")
def solve_cmd(
    maze: list[str] = typer.Argument(..., help="maze file, folder, id, set/id or named set"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per maze, one per line"),
    drop: bool = typer.Option(False, "--drop", help="search with a DROP edge, as a protocol with "
                                                    "actions: with_drop plays"),
) -> None:
    """Optimal action count and plan per maze (exact BFS); exit 1 if any maze is not solved."""
    import json

    from env.oracle import solve

    all_solved = True
    for m in resolve_mazes(list(maze)):
        sol = solve(m, drop=drop)
        all_solved &= sol.status == "solved"
        if as_json:
            typer.echo(json.dumps({
                "id": m.id, "status": sol.status, "optimal_actions": sol.optimal_actions,
                "plan": sol.plan_names, "states_explored": sol.states_explored,
                "seconds": round(sol.seconds, 6),
            }))
            continue
        head = f"solved in {sol.optimal_actions} actions" if sol.status == "solved" else sol.status
        typer.echo(f"{m.id}: {head} ({sol.states_explored} states explored, {sol.seconds:.3f} s)")
        if sol.plan:
            typer.echo("  plan: " + " ".join(sol.plan_names))
    if not all_solved:
        raise typer.Exit(1)


@maze_app.command("check")
def check_cmd(
    maze: list[str] = typer.Argument(..., help="maze file, folder, id, set/id or named set"),
    drop: bool = typer.Option(False, "--drop", help="check as a protocol with actions: with_drop plays "
                                                    "(every search with a DROP edge)"),
) -> None:
    """The four validity checks per maze as a table; exit 1 if any check fails."""
    from rich.console import Console
    from rich.progress import track
    from rich.table import Table

    from env.checks import run_checks

    mazes = resolve_mazes(list(maze))
    table = Table("maze", "check", "result", "object", "reason", title="validity checks")
    failed_mazes = 0
    items = track(mazes, description="checking", console=Console(stderr=True), transient=True) \
        if len(mazes) > 5 else mazes
    for m in items:
        results = run_checks(m, drop=drop)
        failed_mazes += any(not r.passed for r in results)
        for r in results:
            table.add_row(m.id, r.check, "[green]pass[/]" if r.passed else "[bold red]FAIL[/]",
                          r.object_id or "", r.reason)
    console = Console()
    console.print(table)
    console.print(f"{len(mazes)} maze(s) checked, {failed_mazes} failing at least one check")
    if failed_mazes:
        raise typer.Exit(1)


@maze_app.command("mechanics")
def mechanics_cmd(
    as_json: bool = typer.Option(False, "--json", help="one JSON document: a list with an object per mechanic"),
) -> None:
    """Every mechanic the mazes can hold, from its own module (env/mechanics/): its object kinds,
    the rulesets that have it, the study's task-file fields that name it, its removal twin, and
    whether the generator lays it."""
    import json

    from rich.console import Console
    from rich.table import Table

    from env.mechanics import MECHANICS

    if as_json:
        typer.echo(json.dumps([m.to_dict() for m in MECHANICS], indent=2))
        return
    table = Table("mechanic", "kinds", "rulesets", "study fields", "removal twin", "generated", "module",
                  title="mechanics", show_lines=False)
    for m in MECHANICS:
        table.add_row(m.name, ", ".join(m.kinds), ", ".join(m.rulesets), ", ".join(m.study_fields) or "-",
                      m.removal or "-", "yes" if m.generated else "", m.module)
    # piped output keeps whole rows instead of rich's 80-column fallback
    Console(width=None if sys.stdout.isatty() else 200).print(table)


@maze_app.command("import")
def import_cmd(
    spec: str = typer.Argument(..., help="minigrid:<EnvId>[@seed] or multinet:<task file or folder> "
                                         "(more sources: env/importers)"),
    out: Path | None = typer.Option(None, "--out", help="write here (a folder: <id>.json inside; needed for "
                                                        "several mazes); default stdout"),
    from_repo: str | None = typer.Option(None, "--from-repo", help="multinet: the repository the files come "
                                                                   "from (owner/name), into meta.provenance"),
    from_commit: str | None = typer.Option(None, "--from-commit", help="multinet: its commit"),
    from_path: str | None = typer.Option(None, "--from-path", help="multinet: the file's (or folder's) path in "
                                                                   "that repository"),
    licence: str | None = typer.Option(None, "--licence", help="multinet: the files' licence"),
    ruleset: str | None = typer.Option(None, "--ruleset", help="multinet: multinet-r1 or multinet-pr57 for every "
                                                               "file (default: each file's own)"),
    rule: list[str] = typer.Option([], "--rule", help="multinet: NAME=VALUE, a setting of every maze's rules "
                                                      "(docs/maze-format.md#rulesets), repeatable"),
) -> None:
    """Convert mazes from another source into gridbench.maze/1 files (MultiNet task files into the
    multinet-r1 ruleset, or the later harness's into multinet-pr57, a whole folder of them at once)."""
    from env.importers import import_mazes
    from env.importers.study import Provenance
    from env.maze import save_maze

    given = (from_repo, from_commit, from_path, licence)
    provenance = None
    if any(v is not None for v in given):
        provenance = Provenance(repository=from_repo, commit=from_commit, path=from_path, licence=licence)
    settings: dict[str, Any] = {}
    for given_rule in rule:
        name, eq, value = given_rule.partition("=")
        if not eq or not name:
            raise BadInput("--rule", "", f"{given_rule!r} is not NAME=VALUE (a field of the mazes' rules and its value)")
        try:
            settings[name] = json.loads(value)  # a number or true/false as such, anything else a word
        except json.JSONDecodeError:
            settings[name] = value
    mazes = import_mazes(spec, provenance, ruleset=ruleset, rules=settings)
    if out is None:
        if len(mazes) > 1:
            raise BadInput("--out", "", f"{len(mazes)} mazes need a folder to be written to")
        typer.echo(mazes[0].to_json(), nl=False)
        return
    if len(mazes) > 1 or out.is_dir():
        out.mkdir(parents=True, exist_ok=True)
        targets = [out / f"{m.id}.json" for m in mazes]
    else:
        targets = [out]
    for m, target in zip(mazes, targets, strict=True):
        save_maze(m, target)
    typer.echo(f"wrote {targets[0]}" if len(targets) == 1 else f"wrote {len(targets)} mazes to {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(maze_app, name="maze")
