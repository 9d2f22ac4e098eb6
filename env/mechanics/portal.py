"""Portals (teleporters): entering one end lands the agent on the other."""

from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache
from typing import Any, Literal, get_args

from env.mechanics.base import (
    MULTINET_PR57,
    MULTINET_R1,
    Color,
    Glyph,
    Laying,
    Mechanic,
    Pos,
    Scene3D,
    Strict,
    Words,
)

PortalColor = Literal[Color, "cyan"]  # the later harness's portals come in purple and cyan pairs
PORTAL_COLORS: tuple[str, ...] = get_args(PortalColor)


class TeleporterObject(Strict):
    """Two cells: entering ``pos`` lands the agent on ``to`` (and back, when bidirectional)."""

    id: str
    kind: Literal["teleporter"]
    color: PortalColor
    pos: Pos
    to: Pos
    bidirectional: bool = True


def _draw(img: Any, state: int, color: str) -> None:
    """One end: a ring in its colour around a dark hole."""
    from minigrid.core.constants import COLORS

    from env.drawing import Circle, fill_coords

    c = COLORS[color]
    fill_coords(img, Circle(0.5, 0.5, 0.42), c)
    fill_coords(img, Circle(0.5, 0.5, 0.26), (20, 20, 35))
    fill_coords(img, Circle(0.5, 0.5, 0.12), c)


def _draw_neutral(img: Any, state: int, color: str) -> None:
    """Two squares on a diagonal."""
    from minigrid.core.constants import COLORS

    from env.drawing import Rect, fill_coords

    c = COLORS[color]
    fill_coords(img, Rect(0.10, 0.42, 0.10, 0.42), c)
    fill_coords(img, Rect(0.58, 0.90, 0.58, 0.90), c)


GLYPH = Glyph("teleporter", _draw, _draw_neutral, colored=True, index=14)


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A ring in its colour at each end."""
    from env.objects import Tile

    return Tile(GLYPH, 0, obj.color)


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
    from env.objects import Tile

    for c in PORTAL_COLORS:
        yield Tile(GLYPH, 0, c)


@lru_cache(maxsize=512)
def _ends(maze: Any) -> dict[Pos, Pos]:
    out: dict[Pos, Pos] = {}
    for t in maze.of_kind("teleporter"):
        out[t.pos] = t.to
        if t.bidirectional:
            out[t.to] = t.pos
    return out


def lands(maze: Any, cell: Pos) -> Pos:
    """A move into an end (into ``pos`` only, for a one-way portal) lands on the other end."""
    return _ends(maze).get(cell, cell)


def enters(maze: Any, before: Any, after: Any, front: Pos) -> tuple[Any, str | None]:
    """A move that landed elsewhere says so (``teleported``); under multinet-pr57 the agent on the
    end it was sent to is latched there until it moves off."""
    sent = after.pos != front
    if maze.ruleset == MULTINET_PR57 and after.latched != sent:
        after = replace(after, latched=sent)
    return after, ("teleported" if sent else None)


def info(maze: Any, state: Any) -> dict[str, Any]:
    """``latched``: the agent stands on the end a portal sent it to (multinet-pr57)."""
    return {"latched": state.latched} if maze.ruleset == MULTINET_PR57 else {}


def read_info(maze: Any, info: dict[str, Any]) -> dict[str, Any]:
    return {"latched": bool(info.get("latched", False))}


def study_lines(maze: Any, state: Any, obj: Any) -> list[tuple[str, dict[str, Any]]]:
    """Each end, named by how it looks, with where its partner is (or, for a one-way exit, where
    the one that leads to it is)."""
    pair = "- a {color} $teleporter at {pos}, its pair at {other}"
    return [(pair, {"color": obj.color, "pos": obj.pos, "other": obj.to}),
            (pair if obj.bidirectional else "- a {color} $teleporter at {pos}, where the one at {other} leads",
             {"color": obj.color, "pos": obj.to, "other": obj.pos})]


STUDY_COLOR = "purple"  # the study's teleporter colour (R1 drew every teleporter in it)


def study_reads(r: Any, mech: dict[str, Any]) -> list[dict[str, Any]]:
    """``teleporters``: two cells each, two-way unless ``bidirectional`` is false. R1 drew every
    teleporter purple whatever its colour; the later harness draws its own."""
    out = []
    for i, t in enumerate(r.items(mech, "teleporters")):
        f = f"mechanisms.teleporters[{i}]"
        two_way = r.flag(t, "bidirectional", True, f)
        color = r.color(t.get("color", STUDY_COLOR), f"{f}.color", PORTAL_COLORS) if r.later else STUDY_COLOR
        out.append({"id": r.ident(t, f), "kind": "teleporter", "color": color,
                    "pos": r.place(t.get("position_a"), f"{f}.position_a"),
                    "to": r.place(t.get("position_b"), f"{f}.position_b"), "bidirectional": two_way})
    return out


def study_later(mech: dict[str, Any]) -> bool:
    """A teleporter with a colour is the later harness's."""
    return any(isinstance(t, dict) and "color" in t for t in (mech.get("teleporters") or []))


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
    study_items={"teleporters": frozenset({"id", "position_a", "position_b", "color", "bidirectional"})},
    study_reads=study_reads, study_later=study_later, study_rank=1,
    summary="entering one end of a portal lands the agent on its other end",
    words={"classic": Words({"teleporter": ("ring", "rings")}, {"teleporter": "O"}),
           "neutral": Words({"teleporter": ("vek", "veks")}, {"teleporter": "e"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, shortens=True, route_slack=MIN_GAP, scene={"teleporter": Scene3D(draw_teleporter)},
    glyphs=(GLYPH,), objects=(TeleporterObject,), more_cells=("to",), lands=lands, enters=enters, tabled=True, tabulated=True,
    info=info, read_info=read_info, study_lines=study_lines, events=("teleported",), module=__name__,
)
