"""Keys and locked doors: a key is picked up (one at a time) and opens the door of its colour."""

from env.mechanics.base import MINIGRID, MULTINET_PR57, MULTINET_R1, Mechanic

MECHANIC = Mechanic(
    name="key-door", label="key-door", kinds=("key", "door"), rulesets=(MINIGRID, MULTINET_R1, MULTINET_PR57),
    study_fields=("keys", "doors"), removal="no-keys", discovered=True,
    summary="a key, carried one at a time, unlocks the door of its colour", module=__name__,
)
