"""Switch and Gate: the two world objects Minigrid lacks, registered with its type tables.

Registering them in ``OBJECT_TO_IDX`` / ``IDX_TO_OBJECT`` keeps ``Grid.encode`` and the tile
cache correct: Minigrid keys cached tiles by ``obj.encode()``, so each visual state must
encode differently (a switch that is on and one that is off never share a cached tile).
"""

from __future__ import annotations

import numpy as np
from minigrid.core import constants, world_object
from minigrid.core.constants import COLOR_TO_IDX, COLORS, OBJECT_TO_IDX
from minigrid.core.world_object import WorldObj

from env.drawing import Circle, Rect, fill_coords

SWITCH_IDX = 11
GATE_IDX = 12

for _name, _idx in (("switch", SWITCH_IDX), ("gate", GATE_IDX)):
    constants.OBJECT_TO_IDX.setdefault(_name, _idx)
    constants.IDX_TO_OBJECT.setdefault(_idx, _name)
assert OBJECT_TO_IDX["switch"] == SWITCH_IDX and OBJECT_TO_IDX["gate"] == GATE_IDX


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


_native_decode = WorldObj.decode


def _decode(type_idx: int, color_idx: int, state: int) -> WorldObj | None:
    if type_idx == SWITCH_IDX:
        return Switch(constants.IDX_TO_COLOR[color_idx], is_on=state == 1)
    if type_idx == GATE_IDX:
        return Gate(constants.IDX_TO_COLOR[color_idx], is_open=state == 0)
    return _native_decode(type_idx, color_idx, state)


# Grid.decode goes through WorldObj.decode; extend it rather than fork it.
world_object.WorldObj.decode = staticmethod(_decode)  # type: ignore[method-assign]
