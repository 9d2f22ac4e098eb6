"""Keys and locked doors: a key is picked up (one at a time) and opens the door of its colour."""

from typing import Any

from env.mechanics.base import MINIGRID, MULTINET_PR57, MULTINET_R1, Mechanic, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A key; a door open (``value`` 0), closed (1) or locked (2), in its colour in every ruleset."""
    from minigrid.core.world_object import Door, Key

    if obj.kind == "key":
        return Key(obj.color)
    return Door(obj.color, is_open=value == 0, is_locked=value == 2)


MECHANIC = Mechanic(
    name="key-door", label="key-door", kinds=("key", "door"), rulesets=(MINIGRID, MULTINET_R1, MULTINET_PR57),
    study_fields=("keys", "doors"), removal="no-keys", discovered=True,
    summary="a key, carried one at a time, unlocks the door of its colour",
    words={
        "classic": Words({"key": ("key", "keys"), "door": ("door", "doors")},
                         {"key": "K", "door_locked": "L", "door_closed": "D", "door_open": "/"},
                         {"door_locked": "locked", "door_closed": "closed", "door_open": "open"}),
        "neutral": Words({"key": ("dax", "daxes"), "door": ("wug", "wugs")},
                         {"key": "d", "door_locked": "Q", "door_closed": "W", "door_open": "w"},
                         {"door_locked": "marked", "door_closed": "filled", "door_open": "hollow"}),
    },
    draws=draws, module=__name__,
)
