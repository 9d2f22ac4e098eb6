"""Turntables (multinet-pr57): an arrow that turns one step clockwise after every step; a forward
move from the tile goes where the arrow points."""

from env.mechanics.base import MULTINET_PR57, Mechanic, Words

MECHANIC = Mechanic(
    name="turntable", label="turntable", kinds=("turntable",), rulesets=(MULTINET_PR57,),
    study_fields=("rotating_tiles", "rotating_initial_directions"),
    later_fields=("rotating_tiles", "rotating_initial_directions"), removal="no-turntables", generated=True,
    discovered=True, summary="a forward move from it goes where its turning arrow points",
    words={"classic": Words({"turntable": ("pointer tile", "pointer tiles")}, {"turntable": "@"}),
           "neutral": Words({"turntable": ("mib", "mibs")}, {"turntable": "m"})},
    module=__name__,
)
