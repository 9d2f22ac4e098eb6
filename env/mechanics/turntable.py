"""Turntables (multinet-pr57): an arrow that turns one step clockwise after every step; a forward
move from the tile goes where the arrow points."""

from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache
from typing import Any, Literal

from env.mechanics.base import (
    DIR_VECTORS,
    DIRECTIONS,
    MULTINET_PR57,
    Direction,
    Glyph,
    Laying,
    Mechanic,
    Pos,
    Scene3D,
    Strict,
    Words,
)


class TurntableObject(Strict):
    """A rotating tile (multinet-pr57): its arrow starts pointing ``dir`` and turns one step
    clockwise after every step; a forward move from it goes where the arrow points."""

    id: str
    kind: Literal["turntable"]
    pos: Pos
    dir: Direction


def _draw(img: Any, state: int, color: str) -> None:
    """In the study's colours: an orange tile with a dark arrow pointing where a forward move from
    it goes now (``state``: 0..3, east south west north). Unlike every other tile it looks
    different from step to step: the arrows turn."""
    import math

    from env.drawing import Rect, Rotated, Triangle, fill_coords

    fill_coords(img, Rect(0.04, 0.96, 0.04, 0.96), (255, 168, 64))
    # an arrow pointing east, turned to the arrow's direction (y points down, so clockwise)
    theta = state * math.pi / 2
    fill_coords(img, Rotated(Rect(0.18, 0.56, 0.42, 0.58), 0.5, 0.5, theta), (40, 28, 16))
    fill_coords(img, Rotated(Triangle((0.52, 0.24), (0.52, 0.76), (0.84, 0.5)), 0.5, 0.5, theta), (40, 28, 16))


def _draw_neutral(img: Any, state: int, color: str) -> None:
    """A sage square with a dark bar on the side it sends to."""
    import math

    from env.drawing import Rect, Rotated, fill_coords

    fill_coords(img, Rect(0.10, 0.90, 0.10, 0.90), (150, 190, 150))
    fill_coords(img, Rotated(Rect(0.70, 0.86, 0.14, 0.86), 0.5, 0.5, state * math.pi / 2), (30, 60, 30))


GLYPH = Glyph("turntable", _draw, _draw_neutral, states=DIRECTIONS, index=18)
TURNTABLE = (1.0, 168 / 255, 64 / 255)  # in 3D the 2D glyph's orange and its dark arrow
TURNTABLE_ARROW = (40 / 255, 28 / 255, 16 / 255)


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """An orange tile with its arrow where it points now (``value``: 0..3, east south west north)."""
    from env.objects import Tile

    return Tile(GLYPH, value or 0)


def draw_turntable(b: Any, o: Any) -> None:
    """A raised orange disc with a dark arrow for each way it can point; the state shows one."""
    import math

    from env.maze import DIRECTIONS
    from env.render3d.cameras import DIRECTION_YAW, cell_centre

    cx, cy = cell_centre(*o.pos)
    b.disc(cx, cy, 0.44, 0.0, 0.05, TURNTABLE)
    for d, name in enumerate(DIRECTIONS):
        yaw = math.radians(DIRECTION_YAW[d])
        ux, uy = math.cos(yaw), math.sin(yaw)
        tag = f"{o.id}:{name}"
        b.geom("box", (0.16, 0.04, 0.012), (cx - 0.06 * ux, cy - 0.06 * uy, 0.062), TURNTABLE_ARROW, tag,
               euler=f"0 0 {DIRECTION_YAW[d]:.1f}")
        for side in (45.0, -45.0):  # the head, a chevron pointing the arrow's way
            a = math.radians(DIRECTION_YAW[d] + 180.0 + side)
            b.geom("box", (0.13, 0.035, 0.012), (cx + 0.16 * ux + 0.09 * math.cos(a), cy + 0.16 * uy + 0.09 * math.sin(a), 0.062),
                   TURNTABLE_ARROW, tag, euler=f"0 0 {DIRECTION_YAW[d] + 180.0 + side:.1f}")


@lru_cache(maxsize=512)
def _starts(maze: Any) -> dict[Pos, int]:
    return {t.pos: DIRECTIONS.index(t.dir) for t in maze.of_kind("turntable")}


def arrow(maze: Any, state: Any, cell: Pos) -> int | None:
    """Where the arrow of the turntable on ``cell`` points in ``state`` (None: no turntable there):
    every arrow has turned a quarter clockwise ``state.phase`` times (mod 4) since the start or
    the last reset."""
    start = _starts(maze).get(cell)
    return None if start is None else (start + state.phase) % 4


def steers(maze: Any, state: Any) -> int | None:
    """On a turntable a forward goes where its arrow points now (before this step's turn)."""
    return arrow(maze, state, state.pos)


def enters(maze: Any, before: Any, after: Any, front: Pos) -> tuple[Any, str | None]:
    """A forward the arrow carried is a ride (``rode``); the agent keeps its facing."""
    return after, ("rode" if arrow(maze, before, before.pos) is not None else None)


def ticks(maze: Any, state: Any) -> Any:
    """After every step every arrow turns a quarter clockwise."""
    return replace(state, phase=(state.phase + 1) % 4)


def info(maze: Any, state: Any) -> dict[str, Any]:
    """``arrows``: where each turntable points now."""
    return {"arrows": {t.id: DIRECTIONS[arrow(maze, state, t.pos) or 0] for t in maze.of_kind("turntable")}}


def read_info(maze: Any, info: dict[str, Any]) -> dict[str, Any]:
    """The phase: every arrow has turned as often as the first one."""
    first = maze.of_kind("turntable")[0]
    return {"phase": (DIRECTIONS.index(info["arrows"][first.id]) - DIRECTIONS.index(first.dir)) % 4}


def study_reads(r: Any, mech: dict[str, Any]) -> list[dict[str, Any]]:
    """``rotating_tiles`` and their arrows' first directions, ``rotating_initial_directions`` (0
    east, 1 south, 2 west, 3 north, the order of gridbench's directions), one per tile;
    multinet-pr57 only."""
    cells = r.cells(mech, "rotating_tiles")
    dirs = mech.get("rotating_initial_directions", [0] * len(cells) if "rotating_tiles" in mech else [])
    if (cells or dirs) and not r.later:
        name = "rotating_tiles" if cells else "rotating_initial_directions"
        raise r.bad(f"mechanisms.{name}", f"the R1 rulebook has no turntables (they are {MULTINET_PR57}'s)")
    if not isinstance(dirs, list) or len(dirs) != len(cells):
        raise r.bad("mechanisms.rotating_initial_directions",
                    f"must list one direction per rotating tile ({len(cells)})")
    out = []
    for i, (c, d) in enumerate(zip(cells, dirs, strict=True)):
        if d not in range(4) or isinstance(d, bool):
            raise r.bad(f"mechanisms.rotating_initial_directions[{i}]", f"{d!r} is not 0, 1, 2 or 3 (east, south, west, north)")
        out.append({"id": f"turntable{i}", "kind": "turntable", "pos": r.place(c, f"mechanisms.rotating_tiles[{i}]"),
                    "dir": DIRECTIONS[d]})
    return out


def study_lines(maze: Any, state: Any, obj: Any) -> list[tuple[str, dict[str, Any]]]:
    return [("- a $turntable at {pos}, its arrow pointing {facing}", {"pos": obj.pos, "facing": arrow(maze, state, obj.pos)})]


def shown(maze: Any, state: Any, obj: Any) -> int | None:
    return arrow(maze, state, obj.pos)


def look_turntable(maze: Any, state: Any, i: int) -> str:
    return DIRECTIONS[arrow(maze, state, maze.of_kind("turntable")[i].pos) or 0]


def pointing(maze: Any, state: Any, obj: Any) -> str:
    """Where its arrow points now: it turns, so that is part of what is seen."""
    return f"pointing {DIRECTIONS[arrow(maze, state, obj.pos) or 0]}"


def tiles() -> Iterator[Any]:
    """The tile with its arrow east, south, west and north."""
    from env.objects import Tile

    for arrow in range(4):
        yield Tile(GLYPH, arrow)


def lay(where: Laying, rng: Any) -> list[dict[str, Any]] | None:
    """A turntable where the route cannot go round it, its arrow any way at the start."""
    cells = where.unavoidable()
    if not cells:
        return None
    cell = list(rng.choice(cells))
    return [{"id": "turntable1", "kind": "turntable", "pos": cell,
             "dir": rng.choice(("east", "south", "west", "north"))}]


def stages(maze: Any, obj: Any, move: Any, into: Any, event: Any, seen: dict[str, Any]) -> tuple[bool, bool, bool]:
    """Discovery of a turntable, per forward step: tried, a forward taken on it; worked, a ride (it
    moved the agent); used, a ride the agent's facing would not have made (it went where the
    arrow pointed)."""
    tried = move.before.pos == obj.pos
    worked = tried and event != "bump"
    dx, dy = DIR_VECTORS[move.before.dir]
    return tried, worked, worked and into != (obj.pos[0] + dx, obj.pos[1] + dy)


MECHANIC = Mechanic(
    name="turntable", label="turntable", tabulated=True, kinds=("turntable",), rulesets=(MULTINET_PR57,),
    study_fields=("rotating_tiles", "rotating_initial_directions"),
    later_fields=("rotating_tiles", "rotating_initial_directions"), removal="no-turntables",
    study_reads=study_reads, study_rank=6,
    discovered=True, summary="a forward move from it goes where its turning arrow points",
    words={"classic": Words({"turntable": ("pointer tile", "pointer tiles")}, {"turntable": "@"}),
           "neutral": Words({"turntable": ("mib", "mibs")}, {"turntable": "m"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, scene={"turntable": Scene3D(draw_turntable, look_turntable)},
    glyphs=(GLYPH,), detail=pointing, underfoot=True, objects=(TurntableObject,), steers=steers, enters=enters,
    ticks=ticks, info=info, read_info=read_info, shown=shown, study_lines=study_lines,
    # the arrows still turn clockwise, which in a mirror image is the other way round
    unmirrored="turntables: their arrows still turn clockwise, counter-clockwise in the mirrored layout",
    recorded={"turntable": ("arrows", tuple((name, i) for i, name in enumerate(DIRECTIONS)))}, events=("rode",),
    module=__name__,
)
