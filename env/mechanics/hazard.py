"""Hazards: cells the agent never enters (the study's lava)."""

from collections.abc import Iterator
from typing import Any, Literal

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Mechanic, Pos, Scene3D, Strict, Words


class HazardObject(Strict):
    id: str
    kind: Literal["hazard"]
    pos: Pos


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """Lava, as the study drew its hazards."""
    from minigrid.core.world_object import Lava

    return Lava()


def draw_hazard(b: Any, o: Any) -> None:
    from env.render3d.cameras import cell_centre
    from env.render3d.scene import DARK

    cx, cy = cell_centre(*o.pos)
    b.box(cx, cy, (0.47, 0.47, 0.02), 0.0, (1.0, 0.50, 0.0))
    for dy in (-0.25, 0.0, 0.25):  # dark waves, as Minigrid's lava
        b.box(cx, cy + dy, (0.36, 0.035, 0.005), 0.04, DARK)


def tiles() -> Iterator[Any]:
    from minigrid.core.world_object import Lava

    yield Lava()


def study_reads(r: Any, mech: dict[str, Any]) -> list[dict[str, Any]]:
    """``hazards``: lava only (a cell never entered)."""
    out = []
    for i, h in enumerate(r.items(mech, "hazards")):
        f = f"mechanisms.hazards[{i}]"
        if h.get("hazard_type", "lava") != "lava":
            raise r.bad(f"{f}.hazard_type", f"{h['hazard_type']!r}: only lava (a cell never entered) converts")
        out.append({"id": r.ident(h, f), "kind": "hazard", "pos": r.place(h.get("position"), f"{f}.position")})
    return out


MECHANIC = Mechanic(
    name="hazard", label="hazard", kinds=("hazard",), rulesets=(MULTINET_R1, MULTINET_PR57),
    solid=True, study_fields=("hazards",), study_items={"hazards": frozenset({"id", "position", "hazard_type"})},
    study_reads=study_reads, study_rank=3, summary="a cell the agent cannot enter",
    words={"classic": Words({"hazard": ("lava cell", "lava cells")}, {"hazard": "~"}, legend={"hazard": "lava"}),
           "neutral": Words({"hazard": ("lorp", "lorps")}, {"hazard": "r"})},
    draws=draws, tiles=tiles, scene={"hazard": Scene3D(draw_hazard)},
    objects=(HazardObject,), module=__name__,
)
