"""Turntables (multinet-pr57): an arrow that turns one step clockwise after every step; a forward
move from the tile goes where the arrow points."""

from typing import Any

from env.mechanics.base import MULTINET_PR57, Mechanic, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """An orange tile with its arrow where it points now (``value``: 0..3, east south west north)."""
    from env.objects import Turntable

    return Turntable(value or 0)


MECHANIC = Mechanic(
    name="turntable", label="turntable", kinds=("turntable",), rulesets=(MULTINET_PR57,),
    study_fields=("rotating_tiles", "rotating_initial_directions"),
    later_fields=("rotating_tiles", "rotating_initial_directions"), removal="no-turntables", generated=True,
    discovered=True, summary="a forward move from it goes where its turning arrow points",
    words={"classic": Words({"turntable": ("pointer tile", "pointer tiles")}, {"turntable": "@"}),
           "neutral": Words({"turntable": ("mib", "mibs")}, {"turntable": "m"})},
    draws=draws, module=__name__,
)
