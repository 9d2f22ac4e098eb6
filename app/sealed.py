"""What the commands say of a run on a sealed maze set (docs/sealed.md): its folder shows the set's
mazes, so it stays with the evaluator, and so does anything written from it."""

from __future__ import annotations

from collections.abc import Iterable

import typer


def sealed_line(sealed: dict[str, str]) -> str:
    return (f"sealed set {sealed['set']}: the manifest records commitment {sealed['commitment']}; the run folder "
            "shows the set's mazes: keep it with the evaluator (docs/sealed.md)")


def warn_if_sealed(run_dirs: Iterable[str], writes: str) -> None:
    """One line on stderr per sealed run: ``writes`` (the report, the viewer) shows its mazes, wherever
    ``--out`` puts it."""
    from traces import open_store, run_seal

    for d in run_dirs:
        seal = run_seal(d)
        if seal is not None:
            typer.echo(f"warning: {open_store(d).display()} is a run on the sealed set {seal['set']}: {writes} shows "
                       "its mazes; keep it with the evaluator, wherever --out puts it (docs/sealed.md)", err=True)
