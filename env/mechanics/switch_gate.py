"""Switches and gates: toggling a switch (standing on it) opens or closes the gates it controls."""

from typing import Any

from env.mechanics.base import MINIGRID, MULTINET_PR57, MULTINET_R1, Mechanic, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A switch on or off (``value``), a gate open or closed. Under the study's rulesets as the
    MultiNet study drew them: switches as discs, gates as grey doors. ``switch_frames: study``
    draws the disc alone, the same on and off, as every R1 frame showed it; ``distinct`` draws a
    switch's state (gridbench's glyph; under the study's rulesets the disc with the core the study
    added after its run)."""
    from minigrid.core.world_object import Door

    from env.objects import DiscSwitch, Gate, Switch

    study_rules = maze.study_rules
    if obj.kind == "switch":
        if study_rules or switch_frames == "study":
            return DiscSwitch(obj.color, is_on=bool(value), shows_state=switch_frames != "study")
        return Switch(obj.color, is_on=bool(value))
    return Door("grey", is_open=bool(value)) if study_rules else Gate(obj.color, is_open=bool(value))


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
    draws=draws, module=__name__,
)
