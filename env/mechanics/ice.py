"""Ice (frozen tiles): stepping on one swallows the next ``rules.freeze_steps`` actions."""

from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """Pale ice."""
    from env.objects import FrozenTile

    return FrozenTile()


MECHANIC = Mechanic(
    name="ice", label="ice", kinds=("frozen",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("frozen_tiles", "freeze_steps"), removal="no-ice", generated=True, discovered=True,
    summary="stepping onto it swallows the next actions (rules.freeze_steps)",
    words={"classic": Words({"frozen": ("frosted tile", "frosted tiles")}, {"frozen": "="}),
           "neutral": Words({"frozen": ("pim", "pims")}, {"frozen": "p"})},
    draws=draws, module=__name__,
)
