"""The world objects Minigrid lacks, registered with its type tables: gridbench's Switch and
Gate, the study's disc switch, the generic ``Tile`` through which each mechanic draws its own
glyphs (``Mechanic.glyphs``, env.mechanics), and the neutral skin's glyph of any of them
(``NeutralGlyph``).

Registering them in ``OBJECT_TO_IDX`` / ``IDX_TO_OBJECT`` keeps ``Grid.encode`` and the tile
cache correct: Minigrid keys cached tiles by ``obj.encode()``, so each visual state must
encode differently (a switch that is on and one that is off never share a cached tile, unless
they are drawn alike). The study's white switches add ``white`` to Minigrid's colour tables.
"""

from __future__ import annotations

import math

import numpy as np
from minigrid.core import constants, world_object
from minigrid.core.constants import COLOR_TO_IDX, COLORS, OBJECT_TO_IDX
from minigrid.core.world_object import Box, Door, Key, Lava, WorldObj

from env.drawing import Circle, Rect, Rotated, fill_coords
from env.mechanics import MECHANICS
from env.mechanics.base import Glyph

SWITCH_IDX = 11
GATE_IDX = 12
DISC_SWITCH_IDX = 13
NEUTRAL_IDX = 17
GLYPH_IDX_FROM = 19  # the mechanics' own glyphs without an index of their own are numbered from here
WHITE_IDX = 6
CYAN_IDX = 7
BROWN_IDX = 8

_TYPES = (("switch", SWITCH_IDX), ("gate", GATE_IDX), ("disc_switch", DISC_SWITCH_IDX), ("neutral", NEUTRAL_IDX))
for _name, _idx in _TYPES:
    constants.OBJECT_TO_IDX.setdefault(_name, _idx)
    constants.IDX_TO_OBJECT.setdefault(_idx, _name)
assert all(OBJECT_TO_IDX[name] == idx for name, idx in _TYPES)
constants.COLORS.setdefault("white", np.array([255, 255, 255]))
constants.COLOR_TO_IDX.setdefault("white", WHITE_IDX)
constants.IDX_TO_COLOR.setdefault(WHITE_IDX, "white")
assert COLOR_TO_IDX["white"] == WHITE_IDX
# the later harness's second teleporter colour (Minigrid's switch cyan, as the study's palette gives it)
constants.COLORS.setdefault("cyan", np.array([0, 219, 219]))
constants.COLOR_TO_IDX.setdefault("cyan", CYAN_IDX)
constants.IDX_TO_COLOR.setdefault(CYAN_IDX, "cyan")
assert COLOR_TO_IDX["cyan"] == CYAN_IDX
# the study's pushable box (ogbench M7) is brown
constants.COLORS.setdefault("brown", np.array([139, 90, 43]))
constants.COLOR_TO_IDX.setdefault("brown", BROWN_IDX)
constants.IDX_TO_COLOR.setdefault(BROWN_IDX, "brown")
assert COLOR_TO_IDX["brown"] == BROWN_IDX
# the tiles the mechanics draw themselves (``Mechanic.glyphs``): at the index a glyph keeps (those
# drawn before the mechanics drew their own), or numbered on in the registry's order
_GLYPHS = {g.name: g for m in MECHANICS for g in m.glyphs}
_unnumbered = iter(range(GLYPH_IDX_FROM, GLYPH_IDX_FROM + len(_GLYPHS)))
_GLYPH_IDX = {name: g.index if g.index is not None else next(_unnumbered) for name, g in _GLYPHS.items()}
for _name, _idx in _GLYPH_IDX.items():
    constants.OBJECT_TO_IDX.setdefault(_name, _idx)
    constants.IDX_TO_OBJECT.setdefault(_idx, _name)
    assert OBJECT_TO_IDX[_name] == _idx, _name


class Switch(WorldObj):
    """A colored circle on a floor cell; the agent can stand on it. Lit when on."""

    def __init__(self, color: str, is_on: bool = False):
        super().__init__("switch", color)
        self.is_on = is_on

    def can_overlap(self) -> bool:
        return True

    def encode(self) -> tuple[int, int, int]:
        return (SWITCH_IDX, COLOR_TO_IDX[self.color], 1 if self.is_on else 0)

    # minigrid annotates WorldObj.render as returning an array; its own objects, like these, draw into img
    def render(self, img: np.ndarray) -> None:  # type: ignore[override]
        c = COLORS[self.color]
        if self.is_on:
            # a solid disc with a white core: reads as "lit"
            fill_coords(img, Circle(0.5, 0.5, 0.36), c)
            fill_coords(img, Circle(0.5, 0.5, 0.14), (255, 255, 255))
        else:
            # a dim ring: reads as "unlit"
            fill_coords(img, Circle(0.5, 0.5, 0.36), 0.55 * np.array(c))
            fill_coords(img, Circle(0.5, 0.5, 0.26), (0, 0, 0))


class Gate(WorldObj):
    """A barrier opened by switches. Closed: a barred, blocked cell. Open: passable floor."""

    def __init__(self, color: str, is_open: bool = False):
        super().__init__("gate", color)
        self.is_open = is_open

    def can_overlap(self) -> bool:
        return self.is_open

    def see_behind(self) -> bool:
        return True

    def encode(self) -> tuple[int, int, int]:
        return (GATE_IDX, COLOR_TO_IDX[self.color], 0 if self.is_open else 1)

    # minigrid annotates WorldObj.render as returning an array; its own objects, like these, draw into img
    def render(self, img: np.ndarray) -> None:  # type: ignore[override]
        c = COLORS[self.color]
        if self.is_open:
            # only the four corner posts remain: the cell reads as open floor
            for x0, y0 in ((0.04, 0.04), (0.80, 0.04), (0.04, 0.80), (0.80, 0.80)):
                fill_coords(img, Rect(x0, x0 + 0.16, y0, y0 + 0.16), c)
            return
        fill_coords(img, Rect(0.0, 1.0, 0.0, 1.0), 0.35 * np.array(c))
        for x0 in (0.10, 0.34, 0.58, 0.82):
            fill_coords(img, Rect(x0, x0 + 0.10, 0.0, 1.0), c)
        fill_coords(img, Rect(0.0, 1.0, 0.44, 0.56), c)


class DiscSwitch(WorldObj):
    """A switch as the MultiNet study drew it: a disc in its colour. ``shows_state`` adds the
    core the study added after its run (white when on, dark when off); without it, on and off
    look the same, as in every frame of the study's R1 run."""

    def __init__(self, color: str, is_on: bool = False, shows_state: bool = True):
        super().__init__("disc_switch", color)
        self.is_on = is_on
        self.shows_state = shows_state

    def can_overlap(self) -> bool:
        return True

    def encode(self) -> tuple[int, int, int]:
        return (DISC_SWITCH_IDX, COLOR_TO_IDX[self.color], (2 if self.is_on else 1) if self.shows_state else 0)

    # minigrid annotates WorldObj.render as returning an array; its own objects, like these, draw into img
    def render(self, img: np.ndarray) -> None:  # type: ignore[override]
        fill_coords(img, Circle(0.5, 0.5, 0.31), COLORS[self.color])
        if self.shows_state:
            fill_coords(img, Circle(0.5, 0.5, 0.13), (255, 255, 255) if self.is_on else (30, 30, 30))


class Tile(WorldObj):
    """A tile a mechanic draws itself (``Glyph``), showing ``state`` (0..3), in ``color`` where the
    glyph comes in colours."""

    def __init__(self, glyph: Glyph, state: int = 0, color: str | None = None):
        super().__init__(glyph.name, color or glyph.color)
        self.glyph, self.state = glyph, state

    @property
    def tile(self) -> str:
        """Its name in the tile atlas (env.tiles.tile_name)."""
        return self.glyph.tile_name(self.state, self.color)

    def can_overlap(self) -> bool:
        return self.glyph.overlap

    def encode(self) -> tuple[int, int, int]:
        return (_GLYPH_IDX[self.glyph.name], COLOR_TO_IDX[self.color] if self.glyph.colored else 0, self.state)

    def render(self, img: np.ndarray) -> None:  # type: ignore[override]
        self.glyph.draw(img, self.state, self.color)


class NeutralGlyph(WorldObj):
    """A cell content as the neutral skin draws it (env.skins): the object ``inner`` of the classic
    grid, drawn with a shape that looks like none of the classic glyphs (no key, door, lock,
    switch, gate, ring, lava, box, skull, frost). The visible state reads as the classic one does, in shapes of its own: a door
    ``filled`` (closed: a bright rim around a dim square), ``marked`` (locked: the same with a dark
    centre) or ``hollow`` (open: the rim alone); a switch ``bright`` or ``dim`` (a white or a dark centre on a cross, none
    with the study's frames); a gate ``filled`` (a checkerboard) or ``hollow`` (its border only).
    Under multinet-r1 the classic grid draws gates as grey doors, and so they are grey wugs here."""

    def __init__(self, inner: WorldObj):
        super().__init__("neutral", inner.color)
        self.inner = inner

    def can_overlap(self) -> bool:
        return self.inner.can_overlap()

    def see_behind(self) -> bool:
        return self.inner.see_behind()

    def encode(self) -> tuple[int, int, int]:
        kind, color, state = self.inner.encode()
        return (NEUTRAL_IDX, color, kind * 4 + state)  # every classic state is 0..3

    def render(self, img: np.ndarray) -> None:  # type: ignore[override]
        inner = self.inner
        c = np.array(COLORS[inner.color])
        if isinstance(inner, Key):  # a diamond
            fill_coords(img, Rotated(Rect(0.32, 0.68, 0.32, 0.68), 0.5, 0.5, math.pi / 4), c)
        elif isinstance(inner, Door):  # a bright rim around a dim square (no goal looks like it)
            fill_coords(img, Rect(0.06, 0.94, 0.06, 0.94), c)
            fill_coords(img, Rect(0.16, 0.84, 0.16, 0.84), (0, 0, 0) if inner.is_open else 0.5 * c)
            if inner.is_locked:
                fill_coords(img, Rect(0.40, 0.60, 0.40, 0.60), (30, 30, 30))
        elif isinstance(inner, Switch | DiscSwitch):  # a cross
            fill_coords(img, Rect(0.18, 0.82, 0.40, 0.60), c)
            fill_coords(img, Rect(0.40, 0.60, 0.18, 0.82), c)
            if not isinstance(inner, DiscSwitch) or inner.shows_state:
                fill_coords(img, Rect(0.44, 0.56, 0.44, 0.56), (255, 255, 255) if inner.is_on else (30, 30, 30))
        elif isinstance(inner, Gate):  # a checkerboard of four by four
            for i in range(4):
                for j in range(4):
                    border = i in (0, 3) or j in (0, 3)
                    if inner.is_open and not border:
                        continue
                    shade = c if (i + j) % 2 == 0 else 0.35 * c
                    fill_coords(img, Rect(0.25 * i, 0.25 * i + 0.24, 0.25 * j, 0.25 * j + 0.24), shade)
        elif isinstance(inner, Box):  # three bars
            for y in (0.16, 0.43, 0.70):
                fill_coords(img, Rect(0.10, 0.90, y, y + 0.14), c)
        elif isinstance(inner, Lava):  # a teal square around a teal dot
            fill_coords(img, Rect(0.08, 0.92, 0.08, 0.92), (0, 128, 128))
            fill_coords(img, Rect(0.26, 0.74, 0.26, 0.74), (0, 0, 0))
            fill_coords(img, Rect(0.40, 0.60, 0.40, 0.60), (0, 128, 128))
        elif isinstance(inner, Tile):  # the mechanic's own
            inner.glyph.neutral(img, inner.state, inner.color)
        else:
            raise TypeError(f"the neutral skin has no glyph for {inner!r}")


_native_decode = WorldObj.decode
_GLYPH_BY_IDX = {_GLYPH_IDX[name]: g for name, g in _GLYPHS.items()}


def _decode(type_idx: int, color_idx: int, state: int) -> WorldObj | None:
    if type_idx == SWITCH_IDX:
        return Switch(constants.IDX_TO_COLOR[color_idx], is_on=state == 1)
    if type_idx == GATE_IDX:
        return Gate(constants.IDX_TO_COLOR[color_idx], is_open=state == 0)
    if type_idx == DISC_SWITCH_IDX:
        return DiscSwitch(constants.IDX_TO_COLOR[color_idx], is_on=state == 2, shows_state=state > 0)
    if type_idx in _GLYPH_BY_IDX:
        glyph = _GLYPH_BY_IDX[type_idx]
        return Tile(glyph, state, constants.IDX_TO_COLOR[color_idx] if glyph.colored else None)
    if type_idx == NEUTRAL_IDX:
        inner = _decode(state // 4, color_idx, state % 4)
        return NeutralGlyph(inner) if inner is not None else None
    return _native_decode(type_idx, color_idx, state)


# Grid.decode goes through WorldObj.decode; extend it rather than fork it.
world_object.WorldObj.decode = staticmethod(_decode)  # type: ignore[method-assign]
