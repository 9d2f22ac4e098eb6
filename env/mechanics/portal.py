"""Portals (teleporters): entering one end lands the agent on the other."""

from collections.abc import Iterator
from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Laying, Mechanic, Scene3D, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A ring in its colour at each end."""
    from env.objects import Teleporter

    return Teleporter(obj.color)


def draw_teleporter(b: Any, o: Any) -> None:
    """Both ends a ring on the floor; an end one can enter has a dark core with a coloured dot
    and a translucent beacon, so the two ends are seen from afar; a one-way exit has neither."""
    from env.render3d.cameras import cell_centre
    from env.render3d.scene import DARK, FLOOR, SPEC_COLORS

    c = SPEC_COLORS[o.color]
    ends = [(o.pos, True), (o.to, o.bidirectional)]
    for pos, entrance in ends:
        cx, cy = cell_centre(*pos)
        b.disc(cx, cy, 0.42, 0.0, 0.04, c)
        b.disc(cx, cy, 0.28, 0.04, 0.02, DARK if entrance else FLOOR)
        if entrance:
            b.disc(cx, cy, 0.12, 0.06, 0.03, c)
            b.disc(cx, cy, 0.10, 0.09, b.camera.wall_height + 1.0, c, alpha=0.45)


def tiles() -> Iterator[Any]:
    """A ring in each portal colour."""
    from env.maze import PORTAL_COLORS
    from env.objects import Teleporter

    for c in PORTAL_COLORS:
        yield Teleporter(c)


MIN_GAP = 4  # a portal skips at least this many cells of the route


def lay(where: Laying, rng: Any) -> list[dict[str, Any]] | None:
    """A portal joining two cells of one stretch between barriers: a shortcut that skips no
    barrier, at least ``MIN_GAP`` cells and at most ``max_saving`` (the plan stays in its band)."""
    at = {c: i for i, c in enumerate(where.path)}
    pairs = [(a, b) for st in where.stretches for a in st for b in st
             if MIN_GAP <= at[b] - at[a] <= max(MIN_GAP, where.max_saving)]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    return [{"id": "portal1", "kind": "teleporter", "color": "purple", "pos": list(a), "to": list(b),
             "bidirectional": True}]


def stages(maze: Any, obj: Any, move: Any, into: Any, event: Any, seen: dict[str, Any]) -> tuple[bool, bool, bool]:
    """Discovery of a portal, per forward step (``into``: the cell it went into, before any portal):
    tried, a forward into either end; worked, a passage through it; used, the second passage
    (in either direction: it went through on purpose)."""
    tried = into in (obj.pos, obj.to)
    worked = tried and event == "teleported"
    seen["passages"] = seen.get("passages", 0) + worked
    return tried, worked, seen["passages"] >= 2


MECHANIC = Mechanic(
    name="portal", label="portal", kinds=("teleporter",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("teleporters",), removal="no-portals", discovered=True,
    summary="entering one end of a portal lands the agent on its other end",
    words={"classic": Words({"teleporter": ("ring", "rings")}, {"teleporter": "O"}),
           "neutral": Words({"teleporter": ("vek", "veks")}, {"teleporter": "e"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, shortens=True, route_slack=MIN_GAP, scene={"teleporter": Scene3D(draw_teleporter)},
    module=__name__,
)
