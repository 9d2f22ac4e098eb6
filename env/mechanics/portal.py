"""Portals (teleporters): entering one end lands the agent on the other."""

from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A ring in its colour at each end."""
    from env.objects import Teleporter

    return Teleporter(obj.color)


MECHANIC = Mechanic(
    name="portal", label="portal", kinds=("teleporter",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("teleporters",), removal="no-portals", generated=True, discovered=True,
    summary="entering one end of a portal lands the agent on its other end",
    words={"classic": Words({"teleporter": ("ring", "rings")}, {"teleporter": "O"}),
           "neutral": Words({"teleporter": ("vek", "veks")}, {"teleporter": "e"})},
    draws=draws, module=__name__,
)
