"""What a mechanic declares about itself (``Mechanic``); ``env.mechanics`` holds one of each."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from env.rulesets import MINIGRID, MULTINET_PR57, MULTINET_R1

__all__ = ["MINIGRID", "MULTINET_PR57", "MULTINET_R1", "Laying", "Mechanic", "Scene3D", "Words"]

Cell = tuple[int, int]


@dataclass(frozen=True)
class Laying:
    """Where the generator (env.generator.generator) may lay a later tile on a maze it is making:
    its floor cells, the start-goal shortest path (the route a naive walk takes), that path's
    stretches between barriers with the cells still free on them, and how many actions a
    shortcut may save before the plan leaves its band."""

    floor: frozenset[Cell]
    path: tuple[Cell, ...]
    stretches: tuple[tuple[Cell, ...], ...]
    max_saving: int

    @property
    def free(self) -> list[Cell]:
        """The free cells of the route, in its order."""
        return [c for stretch in self.stretches for c in stretch]

    def unavoidable(self) -> list[Cell]:
        """The free route cells the route cannot go round (all of them, if it can go round each)."""
        from env.generator.topology import connected

        return [c for c in self.free if not connected(set(self.floor) - {c})] or self.free


@dataclass(frozen=True)
class Scene3D:
    """How one kind is built into the 3D scene (env.render3d.scene): ``draw(builder, object)``
    adds its geoms, each tagged with the look it belongs to; ``look(maze, state, i)`` is the look a
    state gives the ``i``-th object of the kind (None: it always looks the same). The drawing
    functions import the scene's helpers when they run, so no mechanic loads the 3D code."""

    draw: Callable[[Any, Any], None]
    look: Callable[[Any, Any, int], str] | None = None


@dataclass(frozen=True)
class Words:
    """How one skin (env.skins) names a mechanic's objects and writes them on the text map: per
    kind a noun and its plural, named by what it looks like, never by what it does; per visible
    state an adjective (``door_locked``: ``locked``); the map's letter per kind, or per kind and
    visible state; and the map legend's name where it differs from the noun."""

    nouns: dict[str, tuple[str, str]]
    glyphs: dict[str, str]
    states: dict[str, str] = field(default_factory=dict)
    legend: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Mechanic:
    """One mechanic of the mazes: its objects, where it may stand, how the study's task files name
    it, the twin that takes it out again and whether the generator lays it.

    - ``name``: the mechanic's name (``portal``), also the generator's ``tile`` for a later tile;
    - ``label``: its words in the report's tables (``death tile``);
    - ``kinds``: the object kinds of the maze file that make it (``teleporter``);
    - ``rulesets``: the rulesets whose mazes may hold it;
    - ``study_fields``: the lists under ``mechanisms`` of the study's task files that hold it, and
      ``later_fields`` those of them only the later harness's files have (a file with one is
      played under multinet-pr57);
    - ``removal``: the variant kind of its removal twin (env.variants), None when it has none;
    - ``solid``: its cells are never entered (nothing pushes or crosses them);
    - ``discovered``: the discovery timelines follow it (env.discovery); a later tile's stages are
      its own (``stages``: for one forward step, was it tried, did it work, was it used; ``seen``
      holds what the object's timeline keeps between steps);
    - ``summary``: one line on what it does;
    - ``words``: per skin, how the text map and the prompts name it (``Words``);
    - ``draws``: how its objects are drawn in 2D, ``(maze, object, value, switch_frames) ->`` the
      Minigrid world object (env.minigrid_env.look, which says what ``value`` is for each kind);
      each module imports Minigrid only when it draws;
    - ``tiles``: every 2D cell content its objects can show, in every state, colour and ruleset
      (the tile atlas the viewer draws frames from, env.tiles);
    - ``lay``: the generator lays it into a multinet-pr57 maze (``GenParams.tile``; the
      discovery set draws it, ``generated``): its objects laid where the route meets them
      (``Laying``, the generator's random source) or None where it finds no place; whether they
      matter is the oracle's to say. ``shortens``: its removal twin's plan is longer (a shortcut),
      where every other mechanic's makes it shorter; ``route_slack``: how much longer the route
      is aimed to make room for it;
    - ``scene``: per kind, how it is built into the 3D scene (``Scene3D``; keys are the scene's
      moving bodies, drawn by the key-door module's ``draw_key``).
    """

    name: str
    label: str
    kinds: tuple[str, ...]
    rulesets: tuple[str, ...]
    study_fields: tuple[str, ...] = ()
    later_fields: tuple[str, ...] = ()
    removal: str | None = None
    solid: bool = False
    discovered: bool = False
    summary: str = ""
    words: dict[str, Words] = field(default_factory=dict)
    draws: Callable[[Any, Any, Any, str], Any] | None = None
    tiles: Callable[[], Iterable[Any]] | None = None
    stages: Callable[[Any, Any, Any, Any, Any, dict[str, Any]], tuple[bool, bool, bool]] | None = None
    lay: Callable[[Laying, Any], list[dict[str, Any]] | None] | None = None
    shortens: bool = False
    route_slack: int = 0
    scene: dict[str, Scene3D] = field(default_factory=dict)
    module: str = ""

    @property
    def generated(self) -> bool:
        """The generator lays it (it has a ``lay``)."""
        return self.lay is not None

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "label": self.label, "kinds": list(self.kinds), "rulesets": list(self.rulesets),
                "module": self.module, "study_fields": list(self.study_fields),
                "later_fields": list(self.later_fields), "removal_twin": self.removal,
                "generated": self.generated, "discovered": self.discovered, "summary": self.summary}
