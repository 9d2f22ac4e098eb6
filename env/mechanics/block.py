"""Blocks: solid cells in a colour. No rulebook gridbench plays pushes one (the study's R1 rulebook
never did, whatever a file's ``pushable`` says)."""

from collections.abc import Iterator
from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Scene3D, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A box in its colour."""
    from minigrid.core.world_object import Box

    return Box(obj.color)


def draw_block(b: Any, o: Any) -> None:
    from env.render3d.cameras import cell_centre
    from env.render3d.scene import DARK, SPEC_COLORS

    c = SPEC_COLORS[o.color]
    cx, cy = cell_centre(*o.pos)
    h = 0.6 * b.camera.wall_height
    b.box(cx, cy, (0.42, 0.42, h / 2), 0.0, c)
    b.box(cx, cy, (0.30, 0.30, 0.01), h, DARK)  # a dark lid, as Minigrid's box is hollow


def tiles() -> Iterator[Any]:
    """A box in each block colour."""
    from minigrid.core.world_object import Box

    from env.maze import BLOCK_COLORS

    for c in BLOCK_COLORS:
        yield Box(c)


MECHANIC = Mechanic(
    name="block", label="block", kinds=("block",), rulesets=(MULTINET_R1, MULTINET_PR57),
    solid=True, study_fields=("blocks",), summary="a solid cell that nothing moves",
    words={"classic": Words({"block": ("box", "boxes")}, {"block": "B"}),
           "neutral": Words({"block": ("tev", "tevs")}, {"block": "t"})},
    draws=draws, tiles=tiles, scene={"block": Scene3D(draw_block)},
    module=__name__,
)
