"""Ice (frozen tiles): stepping on one swallows the next ``rules.freeze_steps`` actions."""

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Literal

from pydantic import Field

from env.mechanics.base import (
    MULTINET_PR57,
    MULTINET_R1,
    Glyph,
    Laying,
    Mechanic,
    Pos,
    Scene3D,
    Setting,
    Strict,
    Words,
)

# the actions a frozen tile swallows
SETTING = Setting("freeze_steps", int, Field(5, ge=1, le=1000), rank=1)


class FrozenObject(Strict):
    id: str
    kind: Literal["frozen"]
    pos: Pos


def _draw(img: Any, state: int, color: str) -> None:
    """Pale ice with a few bright flecks."""
    from env.drawing import Circle, Rect, fill_coords

    fill_coords(img, Rect(0.0, 1.0, 0.0, 1.0), (214, 232, 246))
    fill_coords(img, Circle(0.5, 0.5, 0.16), (255, 255, 255))
    fill_coords(img, Circle(0.28, 0.32, 0.07), (245, 252, 255))
    fill_coords(img, Circle(0.70, 0.62, 0.06), (245, 252, 255))


def _draw_neutral(img: Any, state: int, color: str) -> None:
    """A pale pink cell with a darker centre."""
    from env.drawing import Rect, fill_coords

    fill_coords(img, Rect(0.0, 1.0, 0.0, 1.0), (236, 190, 214))
    fill_coords(img, Rect(0.36, 0.64, 0.36, 0.64), (190, 110, 150))


GLYPH = Glyph("frozen", _draw, _draw_neutral, color="blue", index=16)


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """Pale ice."""
    from env.objects import Tile

    return Tile(GLYPH)


def draw_frozen(b: Any, o: Any) -> None:
    from env.render3d.cameras import cell_centre

    cx, cy = cell_centre(*o.pos)
    b.box(cx, cy, (0.47, 0.47, 0.01), 0.0, (0.84, 0.91, 0.96))
    b.geom("ellipsoid", (0.32, 0.32, 0.06 + 0.08 * b.camera.wall_height), (cx, cy, 0.0), (1.0, 1.0, 1.0))


def tiles() -> Iterator[Any]:
    from env.objects import Tile

    yield Tile(GLYPH)


def lay(where: Laying, rng: Any) -> list[dict[str, Any]] | None:
    """Ice where the route cannot go round it."""
    cells = where.unavoidable()
    if not cells:
        return None
    return [{"id": "ice1", "kind": "frozen", "pos": list(rng.choice(cells))}]


def enters(maze: Any, before: Any, after: Any, front: Pos) -> tuple[Any, str | None]:
    """Onto ice: the next ``rules.freeze_steps`` actions of every kind are swallowed (counted down
    by env.state, event ``frozen``); multinet-pr57 names the move ``froze``."""
    if after.pos not in maze.cells_of("frozen"):
        return after, None
    return replace(after, frozen=maze.rulebook.freeze_steps), ("froze" if maze.ruleset == MULTINET_PR57 else None)


def holds(maze: Any, state: Any) -> tuple[Any, str] | None:
    """While frozen every action, done included, only counts the freeze down (``frozen``)."""
    return (replace(state, frozen=state.frozen - 1), "frozen") if state.frozen > 0 else None


def info(maze: Any, state: Any) -> dict[str, Any]:
    """``frozen``: the actions still swallowed."""
    return {"frozen": state.frozen}


def read_info(maze: Any, info: dict[str, Any]) -> dict[str, Any]:
    return {"frozen": int(info.get("frozen", 0))}


def study_reads(r: Any, mech: dict[str, Any]) -> list[dict[str, Any]]:
    """``frozen_tiles``: cells without ids in the file, named here ``frozen<i>``."""
    return [{"id": f"frozen{i}", "kind": "frozen", "pos": r.place(c, f"mechanisms.frozen_tiles[{i}]")}
            for i, c in enumerate(r.cells(mech, "frozen_tiles"))]


def study_rules(r: Any, mech: dict[str, Any]) -> dict[str, Any]:
    """``freeze_steps`` (5 where the file gives none) in a file with frozen tiles."""
    if not mech.get("frozen_tiles"):
        return {}
    steps = mech.get("freeze_steps", 5)
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 1000:
        raise r.bad("mechanisms.freeze_steps", "must be a whole number from 1 to 1000")
    return {"freeze_steps": steps}


def study_lines(maze: Any, state: Any, obj: Any) -> list[tuple[str, dict[str, Any]]]:
    return [("- a $frozen at {pos}", {"pos": obj.pos})]


def stages(maze: Any, obj: Any, move: Any, into: Any, event: Any, seen: dict[str, Any]) -> tuple[bool, bool, bool]:
    """Discovery of ice, per forward step: tried, a forward aimed onto it (walked, ridden or sent
    there by another tile); worked, it froze the agent; never used: nothing is gained from it."""
    from env.state import r1_landing

    tried = r1_landing(maze, into) == obj.pos
    return tried, tried and event == "froze", False


MECHANIC = Mechanic(
    name="ice", label="ice", tabulated=True, kinds=("frozen",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("frozen_tiles", "freeze_steps"), removal="no-ice", discovered=True,
    study_reads=study_reads, study_rules=study_rules, study_rank=5,
    summary="stepping onto it swallows the next actions (rules.freeze_steps)",
    words={"classic": Words({"frozen": ("frosted tile", "frosted tiles")}, {"frozen": "="}),
           "neutral": Words({"frozen": ("pim", "pims")}, {"frozen": "p"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, scene={"frozen": Scene3D(draw_frozen)},
    glyphs=(GLYPH,), objects=(FrozenObject,), enters=enters, info=info, read_info=read_info,
    study_lines=study_lines, holds=holds, events=("frozen", "froze"), settings=(SETTING,),
    module=__name__,
)
