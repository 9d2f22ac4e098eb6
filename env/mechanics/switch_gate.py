"""Switches and gates: toggling a switch (standing on it) opens or closes the gates it controls."""

from env.mechanics.base import MINIGRID, MULTINET_PR57, MULTINET_R1, Mechanic, Words

MECHANIC = Mechanic(
    name="switch-gate", label="switch-gate", kinds=("switch", "gate"),
    rulesets=(MINIGRID, MULTINET_R1, MULTINET_PR57), study_fields=("switches", "gates"), removal="no-switches",
    discovered=True, summary="toggling a switch underfoot opens the gates it controls (any of them on: open)",
    words={
        "classic": Words({"switch": ("switch", "switches"), "gate": ("gate", "gates")},
                         {"switch_off": "S", "switch_on": "*", "gate_closed": "X", "gate_open": "_"},
                         {"switch_on": "on", "switch_off": "off", "gate_closed": "closed", "gate_open": "open"}),
        "neutral": Words({"switch": ("fep", "feps"), "gate": ("zib", "zibs")},
                         {"switch_off": "f", "switch_on": "F", "gate_closed": "Z", "gate_open": "z"},
                         {"switch_on": "bright", "switch_off": "dim", "gate_closed": "filled", "gate_open": "hollow"}),
    },
    module=__name__,
)
