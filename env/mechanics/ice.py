"""Ice (frozen tiles): stepping on one swallows the next ``rules.freeze_steps`` actions."""

from collections.abc import Iterator
from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Laying, Mechanic, Scene3D, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """Pale ice."""
    from env.objects import FrozenTile

    return FrozenTile()


def draw_frozen(b: Any, o: Any) -> None:
    from env.render3d.cameras import cell_centre

    cx, cy = cell_centre(*o.pos)
    b.box(cx, cy, (0.47, 0.47, 0.01), 0.0, (0.84, 0.91, 0.96))
    b.geom("ellipsoid", (0.32, 0.32, 0.06 + 0.08 * b.camera.wall_height), (cx, cy, 0.0), (1.0, 1.0, 1.0))


def tiles() -> Iterator[Any]:
    from env.objects import FrozenTile

    yield FrozenTile()


def lay(where: Laying, rng: Any) -> list[dict[str, Any]] | None:
    """Ice where the route cannot go round it."""
    cells = where.unavoidable()
    if not cells:
        return None
    return [{"id": "ice1", "kind": "frozen", "pos": list(rng.choice(cells))}]


def stages(maze: Any, obj: Any, move: Any, into: Any, event: Any, seen: dict[str, Any]) -> tuple[bool, bool, bool]:
    """Discovery of ice, per forward step: tried, a forward aimed onto it (walked, ridden or through
    a portal); worked, it froze the agent; never used: nothing is gained from it."""
    from env.state import r1_landing

    tried = r1_landing(maze, into) == obj.pos
    return tried, tried and event == "froze", False


MECHANIC = Mechanic(
    name="ice", label="ice", kinds=("frozen",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("frozen_tiles", "freeze_steps"), removal="no-ice", discovered=True,
    summary="stepping onto it swallows the next actions (rules.freeze_steps)",
    words={"classic": Words({"frozen": ("frosted tile", "frosted tiles")}, {"frozen": "="}),
           "neutral": Words({"frozen": ("pim", "pims")}, {"frozen": "p"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, scene={"frozen": Scene3D(draw_frozen)},
    module=__name__,
)
