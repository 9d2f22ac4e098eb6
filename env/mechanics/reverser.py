"""Reversing tiles (gridbench's own, multinet-pr57): a tile that turns whoever steps onto it round,
to face back the way it came. The world acting on the agent's own facing, which no other mechanic
does (a tile that steers a move from it leaves the agent's facing alone): a forward from it goes back out, unless
the agent turns round first."""

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Literal

from env.mechanics.base import MULTINET_PR57, Glyph, Laying, Mechanic, Pos, Scene3D, Strict, Words


class ReverserObject(Strict):
    """A tile that turns the agent round when it steps onto it."""

    id: str
    kind: Literal["reverser"]
    pos: Pos


def enters(maze: Any, before: Any, after: Any, front: Pos) -> tuple[Any, str | None]:
    """Stepping onto it leaves the agent facing the other way."""
    if after.pos not in maze.cells_of("reverser"):
        return after, None
    return replace(after, dir=(after.dir + 2) % 4), None


def _draw(img: Any, state: int, color: str) -> None:
    """A pink tile with a white hourglass (two triangles point to point)."""
    from env.drawing import Rect, Triangle, fill_coords

    fill_coords(img, Rect(0.04, 0.96, 0.04, 0.96), (235, 120, 175))
    fill_coords(img, Triangle((0.22, 0.16), (0.78, 0.16), (0.5, 0.5)), (255, 255, 255))
    fill_coords(img, Triangle((0.22, 0.84), (0.78, 0.84), (0.5, 0.5)), (255, 255, 255))


def _draw_neutral(img: Any, state: int, color: str) -> None:
    """A navy square with a pale bar across its middle."""
    from env.drawing import Rect, fill_coords

    fill_coords(img, Rect(0.10, 0.90, 0.10, 0.90), (60, 70, 140))
    fill_coords(img, Rect(0.20, 0.80, 0.42, 0.58), (220, 220, 190))


GLYPH = Glyph("reverser", _draw, _draw_neutral)


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    from env.objects import Tile

    return Tile(GLYPH)


def tiles() -> Iterator[Any]:
    from env.objects import Tile

    yield Tile(GLYPH)


def draw_reverser(b: Any, o: Any) -> None:
    """A pink plate with a white cross of two flat bars on it."""
    from env.render3d.cameras import cell_centre

    cx, cy = cell_centre(*o.pos)
    b.box(cx, cy, (0.44, 0.44, 0.015), 0.0, (235 / 255, 120 / 255, 175 / 255))
    for angle in (45.0, -45.0):
        b.geom("box", (0.30, 0.05, 0.02), (cx, cy, 0.05), (1.0, 1.0, 1.0), euler=f"0 0 {angle:.1f}")


def study_lines(maze: Any, state: Any, obj: Any) -> list[tuple[str, dict[str, Any]]]:
    return [("- a $reverser at {pos}", {"pos": obj.pos})]


def lay(where: Laying, rng: Any) -> list[dict[str, Any]] | None:
    """A tile where the route cannot go round it: the walk pays for turning back round."""
    cells = where.unavoidable()
    if not cells:
        return None
    return [{"id": "reverser1", "kind": "reverser", "pos": list(rng.choice(cells))}]


def stages(maze: Any, obj: Any, move: Any, into: Any, event: Any, seen: dict[str, Any]) -> tuple[bool, bool, bool]:
    """Discovery of a reversing tile, per forward step: tried, a forward into it; worked, one that
    stepped onto it (it turned the agent round); used, the second time on it (the agent came back
    onto it knowing what it does)."""
    tried = into == obj.pos
    worked = tried and move.after.pos == obj.pos
    seen["entries"] = seen.get("entries", 0) + worked
    return tried, worked, seen["entries"] >= 2


MECHANIC = Mechanic(
    name="reverser", label="reversing tile", tabulated=True, kinds=("reverser",), rulesets=(MULTINET_PR57,),
    removal="no-reversers", discovered=True, summary="stepping onto it turns the agent round, to face back",
    words={"classic": Words({"reverser": ("hourglass tile", "hourglass tiles")}, {"reverser": "&"}),
           "neutral": Words({"reverser": ("blick", "blicks")}, {"reverser": "j"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, scene={"reverser": Scene3D(draw_reverser)},
    objects=(ReverserObject,), enters=enters, glyphs=(GLYPH,), study_lines=study_lines,
    underfoot=True, edition=2, module=__name__,
)
