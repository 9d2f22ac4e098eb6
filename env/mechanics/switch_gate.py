"""Switches and gates: toggling a switch (standing on it) opens or closes the gates it controls."""

from env.mechanics.base import MINIGRID, MULTINET_PR57, MULTINET_R1, Mechanic

MECHANIC = Mechanic(
    name="switch-gate", label="switch-gate", kinds=("switch", "gate"),
    rulesets=(MINIGRID, MULTINET_R1, MULTINET_PR57), study_fields=("switches", "gates"), removal="no-switches",
    discovered=True, summary="toggling a switch underfoot opens the gates it controls (any of them on: open)",
    module=__name__,
)
