"""Switches and gates: toggling a switch (standing on it) opens or closes the gates it controls."""

from collections.abc import Iterator
from typing import Any, Literal, get_args

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

SwitchColor = Literal[Color, "white"]  # the study drew some switches white (docs/maze-format.md)
SWITCH_COLORS: tuple[str, ...] = get_args(SwitchColor)


class SwitchObject(Strict):
    id: str
    kind: Literal["switch"]
    color: SwitchColor
    pos: Pos
    on: bool = False
    controls: tuple[str, ...] = ()
    switch_type: Literal["toggle", "one_shot", "hold"] = "toggle"  # other than toggle: multinet-r1 only


class GateObject(Strict):
    id: str
    kind: Literal["gate"]
    color: Color
    pos: Pos
    open: bool = False  # open from the start and for good: multinet-r1 only


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A switch on or off (``value``), a gate open or closed. Under the study's rulesets as the
    MultiNet study drew them: switches as discs, gates as grey doors. ``switch_frames: study``
    draws the disc alone, the same on and off, as every R1 frame showed it; ``distinct`` draws a
    switch's state (gridbench's glyph; under the study's rulesets the disc with the core the study
    added after its run)."""
    from minigrid.core.world_object import Door

    from env.objects import DiscSwitch, Gate, Switch

    study_rules = maze.study_rules
    if obj.kind == "switch":
        if study_rules or switch_frames == "study":
            return DiscSwitch(obj.color, is_on=bool(value), shows_state=switch_frames != "study")
        return Switch(obj.color, is_on=bool(value))
    return Door("grey", is_open=bool(value)) if study_rules else Gate(obj.color, is_open=bool(value))


def draw_gate(b: Any, o: Any) -> None:
    from env.render3d.cameras import cell_centre
    from env.render3d.scene import FLOOR, SPEC_COLORS, TILE_INSET, mixed, span

    c, h = SPEC_COLORS[o.color], b.camera.wall_height
    closed, opened = f"{o.id}:closed", f"{o.id}:open"
    for offset in (-0.3, 0.0, 0.3):  # three bars, full height when closed, stubs when open
        span(b, o.pos, 0.05, 0.05, h, 0.0, offset, c, closed)
        span(b, o.pos, 0.05, 0.05, 0.12, 0.0, offset, c, opened)
    for z in (0.25 * h, 0.75 * h):  # two rails
        span(b, o.pos, 0.46, 0.04, 0.05, z, 0.0, c, closed)
    cx, cy = cell_centre(*o.pos)  # the gate's ground: the floor tinted with its colour, apart from walls
    b.box(cx, cy, (0.5 - TILE_INSET, 0.5 - TILE_INSET, 0.004), -0.01, mixed(FLOOR, c, 0.35))


def look_gate(maze: Any, state: Any, i: int) -> str:
    return "open" if maze.gates_open(state.switches)[i] else "closed"


def draw_switch(b: Any, o: Any) -> None:
    from env.render3d.cameras import cell_centre
    from env.render3d.scene import DARK, SPEC_COLORS, scaled

    c = SPEC_COLORS[o.color]
    cx, cy = cell_centre(*o.pos)
    b.disc(cx, cy, 0.40, 0.0, 0.03, DARK)  # the plate
    b.disc(cx, cy, 0.26, 0.03, 0.14, scaled(c, 0.5), f"{o.id}:off")  # raised, dimmed button
    b.disc(cx, cy, 0.11, 0.17, 0.01, DARK, f"{o.id}:off")
    b.disc(cx, cy, 0.34, 0.03, 0.04, c, f"{o.id}:on")  # pressed, bright, with a white light
    b.disc(cx, cy, 0.13, 0.07, 0.02, (1.0, 1.0, 1.0), f"{o.id}:on")
    b.disc(cx, cy, 0.31, 0.03, 0.08, c, f"{o.id}:any")  # switch_frames: study, the state not shown


def look_switch(maze: Any, state: Any, i: int) -> str:
    return "on" if state.switches[i] else "off"


def tiles() -> Iterator[Any]:
    """gridbench's switches on and off and gates open and closed in each colour (white switches
    too), and the study's discs, with and without the state's core (its gates are grey doors)."""
    from env.maze import COLORS, SWITCH_COLORS
    from env.objects import DiscSwitch, Gate, Switch

    for c in SWITCH_COLORS:
        yield Switch(c, True)
        yield Switch(c, False)
        if c in COLORS:
            yield Gate(c, True)
            yield Gate(c, False)
    for c in SWITCH_COLORS:
        yield DiscSwitch(c, shows_state=False)
        yield DiscSwitch(c, True)
        yield DiscSwitch(c, False)


MECHANIC = Mechanic(
    name="switch-gate", label="switch-gate", kinds=("switch", "gate"),
    rulesets=(MINIGRID, MULTINET_R1, MULTINET_PR57), study_fields=("switches", "gates"), removal="no-switches",
    discovered=True, summary="toggling a switch underfoot opens the gates it controls (any of them on: open)",
    words={
        "classic": Words({"switch": ("switch", "switches"), "gate": ("gate", "gates")},
                         {"switch_off": "S", "switch_on": "*", "gate_closed": "X", "gate_open": "_"},
                         {"switch_on": "on", "switch_off": "off", "gate_closed": "closed", "gate_open": "open"}),
        "neutral": Words({"switch": ("fep", "feps"), "gate": ("zib", "zibs")},
                         {"switch_off": "f", "switch_on": "F", "gate_closed": "Z", "gate_open": "z"},
                         {"switch_on": "bright", "switch_off": "dim", "gate_closed": "filled", "gate_open": "hollow"}),
    },
    draws=draws, tiles=tiles, scene={"gate": Scene3D(draw_gate, look_gate), "switch": Scene3D(draw_switch, look_switch)},
    objects=(SwitchObject, GateObject),
    recorded={"switch": ("switches", (("true", True), ("false", False))),
              "gate": ("gates", (("true", True), ("false", False)))},
    module=__name__,
)
