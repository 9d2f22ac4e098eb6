"""``gridbench variants``: a variant set, each maze with twins that change one thing (docs/variants.md)."""

from __future__ import annotations

import json
import shlex
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import typer

from env.errors import BadInput
from env.mechanics import removal_twins  # declarations only: no maze code loads

LICENCE = "LICENSE.txt"
# where a variant set goes without --out: beside the runs (results/ is ignored by git)
DEFAULT_OUT = Path("results") / "variants"


def variants(
    mazes: str = typer.Argument(..., help="source mazes: a named set, a folder, a maze file or id"),
    kinds: str = typer.Option(..., "--kinds", help="comma-separated kinds (rotate, mirror, recolor, reskin, "
                                                   f"each mechanic's removal: {', '.join(removal_twins())}; "
                                                   "no-distractors, drop-link, control-none, control-other), groups "
                                                   "(isomorphic, ablation, control, all) or single variants "
                                                   "(rotate-90, mirror-tb, drop-link-2)"),
    out: Path | None = typer.Option(None, "--out", help="folder to write (a variant set there is replaced whole; "
                                                        "default: results/variants/<source>-twins)"),
    seed: int = typer.Option(0, "--seed", min=0, help="seed of the colour permutation and the matched controls"),
) -> None:
    """Write each source maze and its variants (each changing one thing, recorded with what changed
    and the maze it is the twin of) as a maze set with a manifest; variants that cannot be made or
    fail a check their source passes are listed in the manifest, not written."""
    from app.progress import ProgressBar
    from env.generator.maze_pool import write_set
    from env.sets import resolve_mazes
    from env.variants import CONTROL_ATTEMPTS, CONTROL_TOLERANCE, ORIGINAL, kinds_from, variant_set

    names = kinds_from(kinds)
    out = out or DEFAULT_OUT / f"{Path(mazes.rstrip('/')).name.removesuffix('.json')}-twins"
    _check_out(out)
    sources = resolve_mazes(mazes)
    with ProgressBar("building variants") as bar:
        bar.update(0, len(sources) * len(names))
        made = variant_set(sources, names, seed, progress=bar.advance)
    share, least = CONTROL_TOLERANCE
    header = {"variants": {"source": mazes, "kinds": names, "seed": seed,
                           "control_tolerance": {"share": share, "least_actions": least},
                           "control_attempts_per_topology": CONTROL_ATTEMPTS},
              "not_written": made.not_written}
    command = shlex.join(["gridbench", "variants", mazes, "--kinds", kinds, "--out", str(out), "--seed", str(seed)])
    write_set(out, out.name, made.mazes, made.entries, {"command": command}, extra=_licence_of(mazes),
              header=header)
    written = Counter(word for e in made.entries for word in names if word in (e["variant"]["kind"], e["variant"]["name"]))
    left = Counter(word for e in made.not_written for word in names if word in (e["kind"], e["name"]))
    summary = ", ".join(f"{k} {written.get(k, 0)}" + (f" ({left[k]} not written)" if left.get(k) else "")
                        for k in names)
    sources_written = sum(1 for e in made.entries if e["variant"]["kind"] == ORIGINAL)
    typer.echo(f"wrote {len(made.mazes)} mazes to {out}: {sources_written} sources; {summary}")


def _licence_of(mazes: str) -> Callable[[Path], None] | None:
    """Copies the source folder's licence notice (the study's sets carry the MultiNet MIT notice)
    into the set being written, when there is one."""
    from env.sets import NAMED_SETS, set_dir

    notice = (set_dir(mazes) if mazes in NAMED_SETS else Path(mazes)) / LICENCE
    if not notice.is_file():
        return None

    def copy(folder: Path) -> None:
        shutil.copyfile(notice, folder / LICENCE)

    return copy


def _check_out(out: Path) -> None:
    """A folder that holds anything but a variant set is never replaced."""
    if not out.exists():
        return
    manifest = out / "manifest.json"
    if not out.is_dir():
        raise BadInput("--out", "", f"{out} is a file, not a folder")
    if not any(out.iterdir()):
        return
    try:
        ours = "variants" in json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        ours = False
    if not ours:
        raise BadInput("--out", "", f"{out} holds files but no variant set; not replaced")


def register(app: typer.Typer) -> None:
    app.command("variants")(variants)
