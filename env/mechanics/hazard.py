"""Hazards: cells the agent never enters (the study's lava)."""

from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """Lava, as the study drew its hazards."""
    from minigrid.core.world_object import Lava

    return Lava()


MECHANIC = Mechanic(
    name="hazard", label="hazard", kinds=("hazard",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("hazards",), summary="a cell the agent cannot enter",
    words={"classic": Words({"hazard": ("lava cell", "lava cells")}, {"hazard": "~"}, legend={"hazard": "lava"}),
           "neutral": Words({"hazard": ("lorp", "lorps")}, {"hazard": "r"})},
    draws=draws, module=__name__,
)
