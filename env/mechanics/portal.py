"""Portals (teleporters): entering one end lands the agent on the other."""

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic

MECHANIC = Mechanic(
    name="portal", label="portal", kinds=("teleporter",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("teleporters",), removal="no-portals", generated=True, discovered=True,
    summary="entering one end of a portal lands the agent on its other end", module=__name__,
)
