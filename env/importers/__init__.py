"""Mazes from elsewhere, converted into ``gridbench.maze/1``: one module per source.

``import_maze("minigrid:MiniGrid-DoorKey-8x8-v0@3")`` dispatches on the prefix before the first
colon. A new source is a module here plus one line in ``IMPORTERS``. ``import_mazes`` also takes
a folder of the study's task files, and where they came from (``Provenance``).

The study's task files are read by ``study``, under the prefix ``multinet:``: the prefix names the
format's upstream (the MultiNet 2.0 harness), and it is written into every imported maze's
``meta.source`` (``imported:multinet:<file>``), so it stays as the shipped sets record it
(docs/maze-format.md#rulesets).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from env.errors import BadInput
from env.importers.minigrid import import_minigrid
from env.importers.study import Provenance, import_study_file, import_study_path
from env.maze import Maze

# prefix -> (converter of the text after "prefix:", how the spec is written)
IMPORTERS: dict[str, tuple[Callable[[str], Maze], str]] = {
    "minigrid": (import_minigrid, "minigrid:<EnvId>[@seed]"),
    "multinet": (import_study_file, "multinet:<task file or folder>"),
}


def import_maze(spec: str) -> Maze:
    """The maze ``spec`` names, as ``<source>:<what>``; BadInput for an unknown source."""
    prefix, sep, rest = spec.partition(":")
    if not sep or prefix not in IMPORTERS:
        known = ", ".join(usage for _, usage in IMPORTERS.values())
        raise BadInput(spec, "", f"unknown maze source (known: {known})")
    return IMPORTERS[prefix][0](rest)


def import_mazes(spec: str, provenance: Provenance | None = None, ruleset: str | None = None,
                 rules: dict[str, Any] | None = None) -> list[Maze]:
    """The mazes ``spec`` names: one, or (``multinet:<folder>``) every task file of a folder.
    ``provenance`` (where the files came from), ``ruleset`` and ``rules`` (settings of every
    maze's rules) are for MultiNet task files only."""
    prefix, _, rest = spec.partition(":")
    if prefix == "multinet":
        return import_study_path(Path(rest), provenance, ruleset=ruleset, rules=rules)
    if provenance is not None:
        raise BadInput(spec, "", "where a maze came from is recorded for multinet: task files only")
    if ruleset is not None or rules:
        raise BadInput(spec, "", "--ruleset and --rule are for multinet: task files only")
    return [import_maze(spec)]
