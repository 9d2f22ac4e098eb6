"""Death tiles (kill cells): entering one puts the maze back at its start, or under
``rules.death: fail`` (multinet-pr57) ends the episode."""

from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A skull."""
    from env.objects import KillCell

    return KillCell()


MECHANIC = Mechanic(
    name="death", label="death tile", kinds=("kill",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("kill_cells", "death_portals"), later_fields=("death_portals",), removal="no-deaths",
    generated=True, discovered=True,
    summary="entering it puts the maze back at its start (rules.death: fail ends the episode)",
    words={"classic": Words({"kill": ("skull", "skulls")}, {"kill": "x"}),
           "neutral": Words({"kill": ("nuv", "nuvs")}, {"kill": "n"})},
    draws=draws, module=__name__,
)
