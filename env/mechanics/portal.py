"""Portals (teleporters): entering one end lands the agent on the other."""

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Words

MECHANIC = Mechanic(
    name="portal", label="portal", kinds=("teleporter",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("teleporters",), removal="no-portals", generated=True, discovered=True,
    summary="entering one end of a portal lands the agent on its other end",
    words={"classic": Words({"teleporter": ("ring", "rings")}, {"teleporter": "O"}),
           "neutral": Words({"teleporter": ("vek", "veks")}, {"teleporter": "e"})},
    module=__name__,
)
