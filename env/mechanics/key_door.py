"""Keys and locked doors: a key is picked up (one at a time) and opens the door of its colour."""

from collections.abc import Iterator
from typing import Any, Literal

from env.mechanics.base import (
    MINIGRID,
    MULTINET_PR57,
    MULTINET_R1,
    Color,
    Mechanic,
    Pos,
    Scene3D,
    Strict,
    Words,
)

DOOR_STATES = ("open", "closed", "locked")  # Minigrid's state encoding 0, 1, 2


class KeyObject(Strict):
    id: str
    kind: Literal["key"]
    color: Color
    pos: Pos


class DoorObject(Strict):
    id: str
    kind: Literal["door"]
    color: Color
    pos: Pos
    state: Literal["locked", "closed", "open"]


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A key; a door open (``value`` 0), closed (1) or locked (2), in its colour in every ruleset."""
    from minigrid.core.world_object import Door, Key

    if obj.kind == "key":
        return Key(obj.color)
    return Door(obj.color, is_open=value == 0, is_locked=value == 2)


def draw_key(b: Any, o: Any, scale: float = 1.0, tag: str | None = None, z0: float = 0.0) -> None:
    """A key lying flat, its bow west of its centre (geoms relative to its mocap body)."""
    from env.render3d.scene import DARK, SPEC_COLORS

    c, s = SPEC_COLORS[o.color], scale
    b.disc(-0.16 * s, 0.0, 0.13 * s, z0, 0.06 * s, c, tag)
    b.disc(-0.16 * s, 0.0, 0.05 * s, z0, 0.07 * s, DARK, tag)
    b.box(0.08 * s, 0.0, (0.14 * s, 0.035 * s, 0.03 * s), z0, c, tag)
    for dx in (0.12, 0.2):
        b.box(dx * s, -0.06 * s, (0.025 * s, 0.04 * s, 0.03 * s), z0, c, tag)


def draw_door(b: Any, o: Any) -> None:
    from env.render3d.scene import DARK, SPEC_COLORS, span

    c, h = SPEC_COLORS[o.color], b.camera.wall_height
    for look in ("closed", "locked"):
        tag = f"{o.id}:{look}"
        span(b, o.pos, 0.5, 0.14, h, 0.0, 0.0, c, tag)
        if look == "locked":  # a dark band along the top and a dark keyhole plate on both faces
            span(b, o.pos, 0.4, 0.06, 0.02, h, 0.0, DARK, tag)
            span(b, o.pos, 0.07, 0.17, 0.3, 0.35 * h, 0.0, DARK, tag)
        else:  # a pale handle on both faces
            span(b, o.pos, 0.05, 0.18, 0.08, 0.45 * h, 0.25, (0.95, 0.95, 0.9), tag)
    tag = f"{o.id}:open"  # posts at both ends and a threshold strip
    for end in (-0.42, 0.42):
        span(b, o.pos, 0.08, 0.14, h, 0.0, end, c, tag)
    span(b, o.pos, 0.34, 0.14, 0.015, 0.0, 0.0, c, tag)


def look_door(maze: Any, state: Any, i: int) -> str:
    from env.maze import DOOR_STATES

    return DOOR_STATES[state.doors[i]]


def tiles() -> Iterator[Any]:
    """A key and a door open, closed and locked in each colour."""
    from minigrid.core.world_object import Door, Key

    from env.maze import COLORS

    for c in COLORS:
        yield Key(c)
        yield Door(c, is_open=True)
        yield Door(c, is_open=False)
        yield Door(c, is_open=False, is_locked=True)


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
    draws=draws, tiles=tiles, scene={"door": Scene3D(draw_door, look_door)},
    objects=(KeyObject, DoorObject),
    recorded={"door": ("doors", tuple((name, i) for i, name in enumerate(DOOR_STATES))),
              "key": ("keys", (("", None),))},
    module=__name__,
)
