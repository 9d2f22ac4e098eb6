"""One-way tiles (gridbench's own, multinet-pr57): a chevron on the floor that a move may enter only
heading the way it points; the agent leaves it any way. A constraint on the direction of travel,
which no other mechanic has: the same cell is open from one side and a wall from the other three."""

from collections.abc import Iterator
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


class OneWayObject(Strict):
    """A tile a move enters only heading ``dir``."""

    id: str
    kind: Literal["oneway"]
    pos: Pos
    dir: Direction


@lru_cache(maxsize=512)
def _ways(maze: Any) -> dict[Pos, int]:
    return {o.pos: DIRECTIONS.index(o.dir) for o in maze.objects if o.kind == "oneway"}


def refuses(maze: Any, cell: Pos, way: int) -> bool:
    """A move into the tile is refused unless it heads the way the chevron points."""
    return _ways(maze)[cell] != way


def _draw(img: Any, state: int, color: str) -> None:
    """A pale blue tile with a dark chevron pointing the way in (``state``: 0..3)."""
    import math

    from env.drawing import Rect, Rotated, Triangle, fill_coords

    theta = state * math.pi / 2  # y points down: clockwise
    fill_coords(img, Rect(0.04, 0.96, 0.04, 0.96), (150, 190, 230))
    fill_coords(img, Rotated(Triangle((0.30, 0.16), (0.30, 0.84), (0.80, 0.5)), 0.5, 0.5, theta), (20, 40, 90))
    fill_coords(img, Rotated(Triangle((0.30, 0.34), (0.30, 0.66), (0.58, 0.5)), 0.5, 0.5, theta), (150, 190, 230))


def _draw_neutral(img: Any, state: int, color: str) -> None:
    """A tan square with a dark dot near the side a move comes in by."""
    import math

    from env.drawing import Circle, Rect, Rotated, fill_coords

    fill_coords(img, Rect(0.10, 0.90, 0.10, 0.90), (205, 180, 130))
    fill_coords(img, Rotated(Circle(0.24, 0.5, 0.10), 0.5, 0.5, state * math.pi / 2), (60, 40, 20))


GLYPH = Glyph("oneway", _draw, _draw_neutral, states=DIRECTIONS)


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    from env.objects import Tile

    return Tile(GLYPH, DIRECTIONS.index(obj.dir))


def tiles() -> Iterator[Any]:
    """The tile pointing east, south, west and north."""
    from env.objects import Tile

    for way in range(4):
        yield Tile(GLYPH, way)


def draw_oneway(b: Any, o: Any) -> None:
    """A pale blue plate with a dark chevron standing on it, pointing the way in."""
    import math

    from env.render3d.cameras import DIRECTION_YAW, cell_centre

    cx, cy = cell_centre(*o.pos)
    yaw = DIRECTION_YAW[DIRECTIONS.index(o.dir)]
    b.box(cx, cy, (0.44, 0.44, 0.015), 0.0, (150 / 255, 190 / 255, 230 / 255))
    for side in (45.0, -45.0):  # two bars meeting in a point ahead
        a = math.radians(yaw + 180.0 + side)
        ux, uy = math.cos(math.radians(yaw)), math.sin(math.radians(yaw))
        b.geom("box", (0.17, 0.04, 0.06), (cx + 0.12 * ux + 0.12 * math.cos(a), cy + 0.12 * uy + 0.12 * math.sin(a), 0.09),
               (20 / 255, 40 / 255, 90 / 255), euler=f"0 0 {yaw + 180.0 + side:.1f}")


def pointing(maze: Any, state: Any, obj: Any) -> str:
    return f"pointing {obj.dir}"


def study_lines(maze: Any, state: Any, obj: Any) -> list[tuple[str, dict[str, Any]]]:
    return [("- a $oneway at {pos}, pointing {facing}", {"pos": obj.pos, "facing": DIRECTIONS.index(obj.dir)})]


def lay(where: Laying, rng: Any) -> list[dict[str, Any]] | None:
    """A tile on a route cell the route can go round, its chevron pointing back the way the route
    came: the shortest walk now has to go round it."""
    from env.generator.topology import connected

    at = {c: i for i, c in enumerate(where.path)}
    floor = set(where.floor)
    cells = [c for c in where.free if at.get(c, 0) > 0 and connected(floor - {c})]
    if not cells:
        return None
    cell = rng.choice(cells)
    back = where.path[at[cell] - 1]
    way = DIR_VECTORS.index((back[0] - cell[0], back[1] - cell[1]))
    return [{"id": "oneway1", "kind": "oneway", "pos": list(cell), "dir": DIRECTIONS[way]}]


def stages(maze: Any, obj: Any, move: Any, into: Any, event: Any, seen: dict[str, Any]) -> tuple[bool, bool, bool]:
    """Discovery of a one-way tile, per forward step: tried, a forward into it from any side;
    worked, one it refused (the rule showed itself); used, a passage through it the way it points
    after a refusal (the agent came round to its open side)."""
    tried = into == obj.pos
    refused = tried and event == "bump"
    seen["refused"] = seen.get("refused", False) or refused
    return tried, refused, tried and event != "bump" and seen["refused"]


MECHANIC = Mechanic(
    name="oneway", label="one-way tile", tabulated=True, kinds=("oneway",), rulesets=(MULTINET_PR57,), removal="no-oneways",
    discovered=True, summary="a move may enter it only heading the way its chevron points",
    words={"classic": Words({"oneway": ("chevron tile", "chevron tiles")}, {"oneway": "%"}),
           "neutral": Words({"oneway": ("tuk", "tuks")}, {"oneway": "h"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, scene={"oneway": Scene3D(draw_oneway)},
    objects=(OneWayObject,), refuses=refuses, glyphs=(GLYPH,), detail=pointing,
    study_lines=study_lines, underfoot=True, detours=True, edition=2, module=__name__,
)
