"""Blocks: solid cells in a colour. No rulebook gridbench plays pushes one (the study's R1 rulebook
never did, whatever a file's ``pushable`` says)."""

from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A box in its colour."""
    from minigrid.core.world_object import Box

    return Box(obj.color)


MECHANIC = Mechanic(
    name="block", label="block", kinds=("block",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("blocks",), summary="a solid cell that nothing moves",
    words={"classic": Words({"block": ("box", "boxes")}, {"block": "B"}),
           "neutral": Words({"block": ("tev", "tevs")}, {"block": "t"})},
    draws=draws, module=__name__,
)
