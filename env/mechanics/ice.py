"""Ice (frozen tiles): stepping on one swallows the next ``rules.freeze_steps`` actions."""

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Words

MECHANIC = Mechanic(
    name="ice", label="ice", kinds=("frozen",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("frozen_tiles", "freeze_steps"), removal="no-ice", generated=True, discovered=True,
    summary="stepping onto it swallows the next actions (rules.freeze_steps)",
    words={"classic": Words({"frozen": ("frosted tile", "frosted tiles")}, {"frozen": "="}),
           "neutral": Words({"frozen": ("pim", "pims")}, {"frozen": "p"})},
    module=__name__,
)
