"""Turntables (multinet-pr57): an arrow that turns one step clockwise after every step; a forward
move from the tile goes where the arrow points."""

from collections.abc import Iterator
from typing import Any

from env.mechanics.base import MULTINET_PR57, Laying, Mechanic, Scene3D, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """An orange tile with its arrow where it points now (``value``: 0..3, east south west north)."""
    from env.objects import Turntable

    return Turntable(value or 0)


def draw_turntable(b: Any, o: Any) -> None:
    """A raised orange disc with a dark arrow for each way it can point; the state shows one."""
    import math

    from env.maze import DIRECTIONS
    from env.render3d.cameras import DIRECTION_YAW, cell_centre
    from env.render3d.scene import TURNTABLE, TURNTABLE_ARROW

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


def look_turntable(maze: Any, state: Any, i: int) -> str:
    from env.maze import DIRECTIONS
    from env.state import arrow

    return DIRECTIONS[arrow(maze, state, maze.turntables[i].pos) or 0]


def pointing(maze: Any, state: Any, obj: Any) -> str:
    """Where its arrow points now: it turns, so that is part of what is seen."""
    from env.maze import DIRECTIONS
    from env.state import arrow

    return f"pointing {DIRECTIONS[arrow(maze, state, obj.pos) or 0]}"


def tiles() -> Iterator[Any]:
    """The tile with its arrow east, south, west and north."""
    from env.objects import Turntable

    for arrow in range(4):
        yield Turntable(arrow)


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
    from env.maze import DIR_VECTORS

    tried = move.before.pos == obj.pos
    worked = tried and event != "bump"
    dx, dy = DIR_VECTORS[move.before.dir]
    return tried, worked, worked and into != (obj.pos[0] + dx, obj.pos[1] + dy)


MECHANIC = Mechanic(
    name="turntable", label="turntable", kinds=("turntable",), rulesets=(MULTINET_PR57,),
    study_fields=("rotating_tiles", "rotating_initial_directions"),
    later_fields=("rotating_tiles", "rotating_initial_directions"), removal="no-turntables",
    discovered=True, summary="a forward move from it goes where its turning arrow points",
    words={"classic": Words({"turntable": ("pointer tile", "pointer tiles")}, {"turntable": "@"}),
           "neutral": Words({"turntable": ("mib", "mibs")}, {"turntable": "m"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, scene={"turntable": Scene3D(draw_turntable, look_turntable)},
    detail=pointing, underfoot=True, module=__name__,
)
