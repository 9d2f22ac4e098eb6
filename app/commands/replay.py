"""``gridbench replay RUN_DIR EPISODE_ID``: re-execute a recorded episode, check it, animate it."""

from __future__ import annotations

from pathlib import Path

import typer


def replay_command(
    run_dir: str = typer.Argument(..., help="a run: its folder (results/<run>) or its s3:// or gs:// URI"),
    episode_id: str = typer.Argument(..., help="the episode's id (the episode_id column)"),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="check every recorded step and the ending against the replay"),
    gif: Path | None = typer.Option(None, "--gif", help="write the episode as an animated GIF"),
    tile_size: int = typer.Option(16, "--tile-size", min=4, max=128, help="pixels per cell in the GIF"),
) -> None:
    """Replay an episode's recorded actions; exit 1 when the trace does not reproduce."""
    from episodes.replay import replay, write_gif

    result = replay(run_dir, episode_id, verify=verify)
    ep = result.episode
    typer.echo(f"{episode_id}: {ep['model_name']} on {ep['maze_id']} ({ep['condition']}), "
               f"{ep['termination']} after {ep['steps']} steps")
    if gif is not None:
        typer.echo(f"wrote {write_gif(result, gif, tile_size=tile_size)} ({len(result.states)} frames)")
    if verify:
        if result.ok:
            typer.echo(f"verified: all {len(result.actions)} steps reproduce (positions, events, mechanisms, novelty, distances) "
                       f"and so does the ending ({ep['termination']})")
        else:
            for m in result.mismatches[:20]:
                typer.echo(f"mismatch: {m}", err=True)
            raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_command)
