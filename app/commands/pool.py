"""``gridbench pool ...``: build the generated maze pool, draw the stratified eval and held-out sets."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from env.errors import BadInput

pool_app = typer.Typer(help="Build the maze pool and draw the stratified eval and held-out sets.",
                       no_args_is_help=True)


@pool_app.command("build")
def build(
    count: int | None = typer.Option(None, "--count", min=1, max=5000,
                                     help="mazes in the set (default: 214 for the pool; for discovery 2 per kind and band)"),
    seed: int | None = typer.Option(None, "--seed", help="pool seed: the same seed gives the same pool (not with --sealed)"),
    out: Path = typer.Option(..., "--out", help="folder to write (replaced whole when done)"),
    workers: int = typer.Option(0, "--workers", min=0, help="processes (0: one per core)"),
    ruleset: str = typer.Option("minigrid", "--ruleset",
                                help="the rules the mazes are made for: minigrid (gridbench's), multinet-r1 "
                                     "(the MultiNet study's) or multinet-pr57 (its later rules: every maze also "
                                     "gets one of the study's later tiles, in turn; gridbench maze mechanics)"),
    recipe: str = typer.Option("pool", "--recipe",
                               help="pool (the study's composition), discovery (one mechanism per maze, "
                                    "switch-gate and each generated later tile equally often in each path band; "
                                    "multinet-pr57) or long-horizon (the eval set's categories in three path "
                                    "bands from 150 to 600 actions, on 24x24 to 40x40 grids, with a contact sheet)"),
    sealed: bool = typer.Option(False, "--sealed",
                                help="draw the set from a secret seed into a folder only you can read, and write "
                                     "a public commitment to it (docs/sealed.md)"),
    name: str | None = typer.Option(None, "--name", help="a sealed set's name (default: the --out folder's name)"),
    commitment: Path | None = typer.Option(None, "--commitment",
                                           help="where a sealed set's public commitment goes "
                                                "(default: OUT.commitment.json beside the folder)"),
) -> None:
    """Generate COUNT checked, pairwise distinct mazes with a manifest; with --sealed, a sealed set
    and its commitment (the seed is never shown)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from env.generator.generator import GENERATOR_RULESETS, GENERATOR_VERSION
    from env.generator.maze_pool import RECIPES, build_command, build_pool, recipe_specs, write_set
    from env.maze import MINIGRID, MULTINET_PR57
    from env.names import check_name

    if ruleset not in GENERATOR_RULESETS:
        raise BadInput("--ruleset", "", f"{ruleset!r} is not one of {', '.join(GENERATOR_RULESETS)}")
    if recipe not in RECIPES:
        raise BadInput("--recipe", "", f"{recipe!r} is not one of {', '.join(RECIPES)}")
    if recipe == "discovery" and ruleset not in (MINIGRID, MULTINET_PR57):
        raise BadInput("--ruleset", "", f"the discovery set is made for {MULTINET_PR57} (its later mechanisms)")
    if recipe == "long-horizon" and ruleset != MINIGRID:
        raise BadInput("--ruleset", "", f"the long-horizon set is made for {MINIGRID}, as the eval set it extends")
    if sealed and seed is not None:
        raise BadInput("--seed", "", "a sealed set draws a secret seed of its own: leave --seed out")
    if not sealed and seed is None:
        raise BadInput("--seed", "", "is required (or --sealed, for a set drawn from a secret seed)")
    if not sealed and (name is not None or commitment is not None):
        raise BadInput("--name" if name is not None else "--commitment", "", "goes with --sealed only")
    if sealed:
        from env.generator.sealed import new_seed

        name = check_name("--name", "", name or out.name, "set name")
        commitment = commitment or out.with_name(f"{out.name}.commitment.json")
        for option, path in (("--out", out), ("--commitment", commitment)):
            if path.exists():  # an earlier sealed set's seed, or its published commitment, would be lost
                raise BadInput(option, "", f"{path}: exists; a sealed set is written where nothing is")
        seed = new_seed()
    assert seed is not None
    if recipe == "discovery":
        from env.generator.maze_pool import DISCOVERY_BANDS, DISCOVERY_KINDS

        ruleset = MULTINET_PR57
        count = count or 2 * len(DISCOVERY_KINDS) * len(DISCOVERY_BANDS)
    elif recipe == "long-horizon":
        from env.generator.maze_pool import LONG_HORIZON_COUNT

        count = count or LONG_HORIZON_COUNT
    count = count or 214
    recipe_specs(recipe, count, seed, ruleset)  # a count a recipe's cells do not divide is bad input, before any work

    console = Console(stderr=True)
    t0 = time.perf_counter()
    with Progress(TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as bar:
        task = bar.add_task("pool", total=count)
        built = build_pool(count, seed, workers, on_done=lambda n: bar.advance(task, n), ruleset=ruleset,
                           recipe=recipe)
    seconds = time.perf_counter() - t0
    st = built.stats
    if built.errors:
        for e in built.errors[:5]:
            console.print(f"[red]{e}[/red]")
        typer.echo(f"gridbench: {len(built.errors)} of {count} mazes could not be generated; nothing written",
                   err=True)
        raise typer.Exit(1)
    provenance = {
        "command": build_command(count, None if sealed else seed, ruleset, recipe),
        "generator_version": GENERATOR_VERSION,
        "candidates": st.candidates, "accepted": st.accepted, "unplaced": st.unplaced,
        "rejected": st.rejected, "duplicates_redrawn": built.duplicates_redrawn,
    }
    if recipe in ("discovery", "long-horizon"):
        from env.generator.maze_pool import DISCOVERY_BANDS, LONG_HORIZON_BANDS

        bands = DISCOVERY_BANDS if recipe == "discovery" else LONG_HORIZON_BANDS
        provenance["bands"] = {band: {"grid": f"{side}x{side}", "optimal": [lo, hi]}
                               for band, (side, lo, hi) in bands.items()}
    if sealed:
        from env.generator.sealed import seal, write_sealed

        assert name is not None and commitment is not None
        the_seal = seal(name, GENERATOR_VERSION, recipe, ruleset, seed, built.mazes)
        write_sealed(out, the_seal, built, provenance, commitment)
        typer.echo(f"sealed {len(built.mazes)} mazes in {out} in {seconds:.0f} s (readable by you alone: keep it with "
                   f"the evaluator); commitment {the_seal.commitment} -> {commitment} (publish it)")
        return
    sheet = _long_horizon_sheet(built) if recipe == "long-horizon" else None
    write_set(out, recipe, built.mazes, built.entries, provenance, extra=sheet)
    opts = [e["optimal_actions"] for e in built.entries]
    typer.echo(
        f"wrote {len(built.mazes)} mazes to {out} in {seconds:.0f} s: optimal actions {min(opts)}..{max(opts)}; "
        f"acceptance {st.accepted}/{st.candidates} = {st.acceptance:.0%} of candidates checked "
        f"({st.unplaced} layouts without a placement in the band, {built.duplicates_redrawn} duplicates redrawn)"
    )


def _long_horizon_sheet(built):
    """The long-horizon set's contact sheet, drawn like the eval set's, each maze scaled to fit the largest grid."""
    from env.generator.maze_pool import LONG_HORIZON_BANDS, contact_sheet

    largest = max(side for side, _, _ in LONG_HORIZON_BANDS.values())

    def sheet(tmp: Path) -> None:
        (tmp / "contact_sheet.png").write_bytes(contact_sheet(built.mazes, built.entries, columns=6, tile=6,
                                                              side=largest))
    return sheet


@pool_app.command("unseal")
def unseal_command(
    private: Path = typer.Argument(..., help="the sealed set's folder (gridbench pool build --sealed)"),
    out: Path = typer.Option(..., "--out", help="the public set folder to write (replaced whole when done)"),
    commitment: Path | None = typer.Option(None, "--commitment",
                                           help="the commitment file as published, to check the set against too"),
    workers: int = typer.Option(0, "--workers", min=0, help="processes regenerating the set (0: one per core)"),
) -> None:
    """Check a sealed set against its commitment, regenerate it from its seed byte for byte, and write it
    as a public set with the seed revealed. A mismatch is one line naming the file, exit 2."""
    from app.progress import ProgressBar
    from env.generator.sealed import unseal

    with ProgressBar("regenerating") as bar:
        checked = unseal(private, out, commitment, workers, bar.update)
    typer.echo(f"unsealed {checked.seal.count} mazes of {checked.seal.set!r} to {out}: they and the revealed seed "
               f"reproduce commitment {checked.seal.commitment}")


@pool_app.command("verify-commitment")
def verify_commitment(
    folder: Path = typer.Argument(..., help="an unsealed set's folder (or a sealed one, by its evaluator)"),
    commitment: Path = typer.Option(..., "--commitment", help="the commitment file saved when the set was sealed"),
    workers: int = typer.Option(0, "--workers", min=0, help="processes regenerating the set (0: one per core)"),
) -> None:
    """Check a revealed set against a commitment published before: its mazes, recipe and seed give the
    commitment, and the seed regenerates every maze byte for byte. A mismatch is one line, exit 2."""
    from app.progress import ProgressBar
    from env.generator.sealed import check_set

    with ProgressBar("regenerating") as bar:
        checked = check_set(folder, commitment, workers, bar.update)
    typer.echo(f"{folder}: {checked.seal.count} mazes of {checked.seal.set!r} reproduce commitment "
               f"{checked.seal.commitment}, regenerated byte for byte from the seed")


@pool_app.command("select")
def select(
    pool: str = typer.Argument(..., help="pool folder (or the named set 'pool')"),
    n_eval: int = typer.Option(50, "--eval", min=1,
                                help="eval set size (at 50 every study figure; else its strata scaled)"),
    n_heldout: int = typer.Option(15, "--heldout", min=0, help="held-out set size, disjoint from eval"),
    seed: int = typer.Option(..., "--seed", help="draw seed"),
    out: Path = typer.Option(..., "--out", help="folder that receives eval/ and heldout/"),
) -> None:
    """Draw the eval set and a disjoint held-out set under the study's constraints; exit 1 if
    the pool cannot meet them (nothing is written then)."""
    from rich.console import Console

    from env.generator.maze_pool import (
        constraint_rows,
        contact_sheet,
        read_set,
        select_sets,
        witness_ids,
        write_set,
    )
    from env.sets import set_dir

    folder = Path(pool)
    if not folder.is_dir() and pool == "pool":
        folder = set_dir("pool")
    if not (folder / "manifest.json").is_file():
        raise BadInput(pool, "", "not a pool folder (no manifest.json)")
    manifest, mazes = read_set(folder)
    entries = manifest["mazes"]
    for e, m in zip(entries, mazes, strict=True):
        if m.checksum != e["checksum"]:
            raise BadInput(str(folder / e["file"]), "checksum", "differs from the manifest: rebuild the pool")
    try:
        sel = select_sets(entries, n_eval, n_heldout, seed)
    except ValueError as e:  # fewer mazes than the two sets together: no draw at all
        typer.echo(f"gridbench: {e}; nothing written", err=True)
        raise typer.Exit(1) from None
    console = Console()
    console.print(constraints_table(sel))
    solves = witness_ids(sel.witness)
    for reading, ids in solves.items():
        console.print(f"the study's solves can fall on ({reading}): {' '.join(ids)}")
    if not sel.met:
        typer.echo("gridbench: the pool cannot meet the constraints; nothing written", err=True)
        raise typer.Exit(1)
    by_id = {m.id: m for m in mazes}
    entry_of = {e["id"]: e for e in entries}
    src = manifest.get("provenance", {}).get("command", str(folder))
    drawn = (("eval", sel.eval_ids, sel.eval_rows), ("heldout", sel.heldout_ids, sel.heldout_rows))
    for name, ids, rows in drawn:
        if not ids:
            continue
        chosen = [by_id[i] for i in ids]
        chosen_entries = [entry_of[i] for i in ids]
        provenance = {
            "command": f"gridbench pool select POOL --eval {n_eval} --heldout {n_heldout} --seed {seed}",
            "pool": src, "constraints": constraint_rows(rows),
        }
        if name == "eval" and solves:
            provenance["solve_witness"] = solves

        def sheet(tmp: Path, chosen=chosen, chosen_entries=chosen_entries) -> None:
            (tmp / "contact_sheet.png").write_bytes(contact_sheet(chosen, chosen_entries))

        write_set(out / name, name, chosen, chosen_entries, provenance, extra=sheet)
        typer.echo(f"wrote {len(chosen)} mazes to {out / name}")


def constraints_table(sel):
    """Achieved against wanted, one line per constraint; the held-out column shows the rows
    that carry over to it (scaled)."""
    from rich.table import Table

    t = Table(title="constraints: achieved / wanted")
    t.add_column("constraint")
    t.add_column("eval", justify="right")
    t.add_column("held-out", justify="right")
    held = {c.what: (c, got) for c, got in sel.heldout_rows}
    for c, got in sel.eval_rows:
        h = held.pop(c.what, None)
        t.add_row(c.what, _cell(c, got), _cell(*h) if h else "")
    for c, got in held.values():
        t.add_row(c.what, "", _cell(c, got))
    return t


def _cell(c, got: int) -> str:
    text = f"{got} / {c.wanted}"
    return text if c.holds(got) else f"[red]{text}[/red]"


def register(app: typer.Typer) -> None:
    app.add_typer(pool_app, name="pool")
