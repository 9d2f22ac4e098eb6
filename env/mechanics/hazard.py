"""Hazards: cells the agent never enters (the study's lava)."""

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Words

MECHANIC = Mechanic(
    name="hazard", label="hazard", kinds=("hazard",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("hazards",), summary="a cell the agent cannot enter",
    words={"classic": Words({"hazard": ("lava cell", "lava cells")}, {"hazard": "~"}, legend={"hazard": "lava"}),
           "neutral": Words({"hazard": ("lorp", "lorps")}, {"hazard": "r"})},
    module=__name__,
)
