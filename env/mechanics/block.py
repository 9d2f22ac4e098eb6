"""Blocks: solid cells in a colour. No rulebook gridbench plays pushes one (the study's R1 rulebook
never did, whatever a file's ``pushable`` says)."""

from collections.abc import Iterator
from typing import Any, Literal, get_args

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Color, Mechanic, Pos, Scene3D, Strict, Words

BlockColor = Literal[Color, "brown"]  # the study's pushable box (ogbench M7) is brown
BLOCK_COLORS: tuple[str, ...] = get_args(BlockColor)


class BlockObject(Strict):
    id: str
    kind: Literal["block"]
    color: BlockColor
    pos: Pos


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


    for c in BLOCK_COLORS:
        yield Box(c)


def study_reads(r: Any, mech: dict[str, Any]) -> list[dict[str, Any]]:
    """``blocks``, drawn in their colour. The R1 rulebook never pushes a block, whatever
    ``pushable`` says, and neither does gridbench: under multinet-r1 a pushable block is played as
    R1 played it, a cell never entered (the later harness's box maze, M7 ``box_0``, imports so: its
    brown box then closes the passage it stands in, and the maze has no solution); under
    multinet-pr57 a pushable block is refused, since a push is what such a maze is about and
    gridbench has no push rule."""
    out = []
    for i, b in enumerate(r.items(mech, "blocks")):
        f = f"mechanisms.blocks[{i}]"
        if r.flag(b, "pushable", False, f) and r.later:
            raise r.bad(f"{f}.pushable", f"true: {MULTINET_PR57} has no push rule (the R1 rulebook never pushes, "
                                         "under which this maze would be another one)")
        out.append({"id": r.ident(b, f), "kind": "block", "color": r.color(b.get("color", "grey"), f"{f}.color", BLOCK_COLORS),
                    "pos": r.place(b.get("position"), f"{f}.position")})
    return out


MECHANIC = Mechanic(
    name="block", label="block", kinds=("block",), rulesets=(MULTINET_R1, MULTINET_PR57),
    solid=True, study_fields=("blocks",), study_items={"blocks": frozenset({"id", "position", "color", "pushable"})},
    study_reads=study_reads, study_rank=2, summary="a solid cell that nothing moves",
    words={"classic": Words({"block": ("box", "boxes")}, {"block": "B"}),
           "neutral": Words({"block": ("tev", "tevs")}, {"block": "t"})},
    draws=draws, tiles=tiles, scene={"block": Scene3D(draw_block)},
    objects=(BlockObject,), module=__name__,
)
