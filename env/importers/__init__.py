"""Mazes from elsewhere, converted into ``gridbench.maze/1``: one module per source.

``import_maze("minigrid:MiniGrid-DoorKey-8x8-v0@3")`` dispatches on the prefix before the first
colon. A new source is a module here plus one line in ``IMPORTERS``.
"""

from __future__ import annotations

from collections.abc import Callable

from env.errors import BadInput
from env.importers.minigrid import import_minigrid
from env.importers.multinet import import_multinet
from env.maze import Maze

# prefix -> (converter of the text after "prefix:", how the spec is written)
IMPORTERS: dict[str, tuple[Callable[[str], Maze], str]] = {
    "minigrid": (import_minigrid, "minigrid:<EnvId>[@seed]"),
    "multinet": (import_multinet, "multinet:<task file>"),
}


def import_maze(spec: str) -> Maze:
    """The maze ``spec`` names, as ``<source>:<what>``; BadInput for an unknown source."""
    prefix, sep, rest = spec.partition(":")
    if not sep or prefix not in IMPORTERS:
        known = ", ".join(usage for _, usage in IMPORTERS.values())
        raise BadInput(spec, "", f"unknown maze source (known: {known})")
    return IMPORTERS[prefix][0](rest)
