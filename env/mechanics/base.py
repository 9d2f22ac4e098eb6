"""What a mechanic declares about itself (``Mechanic``); ``env.mechanics`` holds one of each."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

from env.rulesets import MINIGRID, MULTINET_PR57, MULTINET_R1

__all__ = ["Setting", "COLORS", "DIRECTIONS", "DIR_VECTORS", "MINIGRID", "MULTINET_PR57", "MULTINET_R1", "Color", "Direction", "Glyph",
           "Laying", "Mechanic", "Pos", "Scene3D", "Strict", "Words"]

Cell = tuple[int, int]
Pos = tuple[int, int]
# the four headings, Minigrid's 0..3, and the step each takes (y points down)
Direction = Literal["east", "south", "west", "north"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)
Color = Literal["red", "green", "blue", "purple", "yellow", "grey"]  # Minigrid's six
COLORS: tuple[str, ...] = get_args(Color)
DIR_VECTORS = ((1, 0), (0, 1), (-1, 0), (0, -1))


class Strict(BaseModel):
    """The base of every record of a maze file, the objects a mechanic declares among them: no
    unknown field, no coercion, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


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
class Setting:
    """One field of a maze's ``rules`` a mechanic declares (env.maze.Rules takes them in):
    ``name``, its type and ``default`` (a value or a pydantic ``Field``), the rulesets where it may
    differ from its default (None: every ruleset that has ``rules``), whether the file leaves it
    out at its default (so the checksums of mazes written before it existed stay), and ``rank``,
    its place in the record (the order the file writes it in)."""

    name: str
    annotation: Any
    default: Any
    rulesets: tuple[str, ...] | None = None
    omitted_at_default: bool = False
    rank: int = 0


@dataclass(frozen=True)
class Glyph:
    """A 2D tile a mechanic draws itself (env.objects.Tile carries it into a Minigrid grid):
    ``name`` the tile's kind in the atlas; ``draw(img, state, color)`` and ``neutral(img, state,
    color)`` paint one cell in the classic and the neutral skin with env.drawing's shapes
    (``state``: 0..3, what the tile shows, such as a direction; ``color``: the object's colour where
    the glyph is ``colored``, else ``color`` here); ``overlap`` whether the agent can stand on it,
    ``agent_shown`` whether a frame can show the agent on it all the same (a tile the agent died
    on); ``index`` the Minigrid type index it keeps (those drawn before the mechanics drew
    their own), None to be numbered. The drawing functions import env.drawing when they run, so no
    mechanic loads Minigrid."""

    name: str
    draw: Callable[[Any, int, str], None]
    neutral: Callable[[Any, int, str], None]
    overlap: bool = True
    states: tuple[str, ...] = ("",)  # the name of each state in the atlas (``<name>-<state>``)
    colored: bool = False
    color: str = "grey"
    agent_shown: bool = False
    index: int | None = None

    def tile_name(self, state: int, color: str) -> str:
        """``<name>[-<color>][-<state>]``: a ring in cyan, ``ring-cyan``; an arrow east, ``arrow-east``."""
        parts = [self.name, *([color] if self.colored else []), *([self.states[state]] if self.states[state] else [])]
        return "-".join(parts)


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

    - ``name``: the mechanic's name, also the generator's ``tile`` for a later tile;
    - ``label``: its words in the report's tables;
    - ``kinds``: the object kinds of the maze file that make it (``teleporter``);
    - ``rulesets``: the rulesets whose mazes may hold it;
    - ``study_fields``: the lists under ``mechanisms`` of the study's task files that hold it, and
      ``later_fields`` those of them only the later harness's files have (a file with one is
      played under multinet-pr57); how env.importers.study reads them: ``study_items`` the fields
      of each list's entries, ``study_reads(reader, mechanisms)`` its objects (each error naming
      the file's field), ``study_rules(reader, mechanisms)`` its settings of the rulebook,
      ``study_later(mechanisms)`` the file is the later harness's by what it says of it, and
      ``study_rank`` where its objects go among the file's;
    - ``settings``: its fields of a maze's ``rules`` (``Setting``: a freeze's length);
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

    And its record, rules, state and glyphs (docs/design.md §2):

    - ``objects``: the record class of each of its kinds in the maze file (a ``Strict`` model with
      ``id``, ``kind`` and ``pos``); env.maze.MazeObject takes them in; ``more_cells``: the fields
      of a record that hold cells beside ``pos`` (an object that covers two cells);
    - its rules under the study's rulebooks (env.state asks them, in the registry's order, of the
      mechanics a maze has), and ``events``, the events they give: ``holds(maze, state)`` a step
      taken over whatever the action, as (state, event), while it holds the agent; for every
      forward, ``steers(maze, state)`` the way it goes from the agent's cell (None: where the
      agent faces); ``refuses(maze, cell, way)`` a move
      heading ``way`` (0..3) into ``cell`` is a bump; ``lands(maze, cell)`` where a move into
      ``cell`` ends; ``fires(maze, state, cell)`` the step taken over by a move ending on ``cell``,
      as (state, event, settled: nothing turns after it) or None; ``enters(maze, before, after,
      front)`` the state once the agent has moved onto ``after.pos`` and the event it names, if
      any; ``ticks(maze, state)`` what turns by itself after every multinet-pr57 step; ``over(maze,
      state)`` the episode is over though the goal is not reached; ``tabled``: under multinet-r1
      its rules change no state beyond where a move lands, so the oracle's dense tables
      (env.oracle.space, which take ``lands``) hold them; ``tabulated``: under multinet-pr57 its
      rules read of the state only what env.oracle.explicit tabulates them over (a hook's cell, the
      facing, the phase, the freeze, the latch) and change only the facing, the freeze, the phase,
      the latch or where the agent stands, so the compiled explicit search asks them once per cell;
    - its state beside the keys, doors and switches in the traces' JSON form: ``info(maze,
      state)`` the entries it adds, ``read_info(maze, info)`` the ``MazeState`` fields read back;
    - ``shown(maze, state, obj)``: the value ``draws`` takes for an object in a state (where an
      arrow points; None: it always looks the same); ``recorded``: per kind with a state, the
      field of the traces' JSON form that holds it and each value written there with the value
      ``draws`` takes (the viewer's tiles, env.minigrid_env.cell_looks);
    - ``glyphs``: the 2D tiles it draws itself (``Glyph``; ``draws`` returns env.objects.Tile);
    - ``detail(maze, state, obj)``: what the text map's object line adds after an object's place
      (``pointing east``); ``study_lines(maze, state, obj)``: the study prompt's lines for an
      object under multinet-pr57, each a template (the skin's ``$words``, ``{fields}``) with its
      fields (cells as (x, y), ``facing`` 0..3: agents.study_prompt writes them the study's way);
      ``underfoot``: the text says when the agent stands on it;
    - ``detours``: its generated mazes need a way round it (layouts with loops); ``unmirrored``:
      what a mirror image of a maze with it does not carry over (the variant is then only
      near-isomorphic);
    - ``edition``: the edition of the generated sets that first drew it; the pool and discovery
      recipes draw the earlier editions' mechanics as they did before, so their mazes stay the same.
    """

    name: str
    label: str
    kinds: tuple[str, ...]
    rulesets: tuple[str, ...]
    study_fields: tuple[str, ...] = ()
    later_fields: tuple[str, ...] = ()
    study_items: dict[str, frozenset[str]] = field(default_factory=dict)
    study_reads: Callable[[Any, dict[str, Any]], list[dict[str, Any]]] | None = None
    study_rules: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None
    study_later: Callable[[dict[str, Any]], bool] | None = None
    study_rank: int = 0
    settings: tuple[Setting, ...] = ()
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
    objects: tuple[type[Strict], ...] = ()
    more_cells: tuple[str, ...] = ()
    shown: Callable[[Any, Any, Any], Any] | None = None
    recorded: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = field(default_factory=dict)
    events: tuple[str, ...] = ()
    holds: Callable[[Any, Any], tuple[Any, str] | None] | None = None
    steers: Callable[[Any, Any], int | None] | None = None
    refuses: Callable[[Any, Cell, int], bool] | None = None
    lands: Callable[[Any, Cell], Cell] | None = None
    fires: Callable[[Any, Any, Cell], tuple[Any, str, bool] | None] | None = None
    enters: Callable[[Any, Any, Any, Cell], tuple[Any, str | None]] | None = None
    ticks: Callable[[Any, Any], Any] | None = None
    over: Callable[[Any, Any], bool] | None = None
    tabled: bool = False
    tabulated: bool = False
    info: Callable[[Any, Any], dict[str, Any]] | None = None
    read_info: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None
    glyphs: tuple[Glyph, ...] = ()
    detail: Callable[[Any, Any, Any], str] | None = None
    study_lines: Callable[[Any, Any, Any], list[tuple[str, dict[str, Any]]]] | None = None
    underfoot: bool = False
    detours: bool = False
    unmirrored: str = ""
    edition: int = 1
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
