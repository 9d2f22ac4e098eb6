"""What is drawn over a 3D frame after rendering: the compass and the first-person status slots.

Letters are strokes, not a font, and nothing is antialiased, so a frame is the same bytes on
every machine. The compass is on every 3D view: in a view that turns with the agent it shows
the facing letter at its top and a needle pointing north; in a north-up view it sits in the
top-right corner wall cell and marks north. First-person views also show two slots along the
bottom: the carried key in its colour, and the switch underfoot (dim when off, bright when on).
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw

from env.maze import Maze
from env.render3d.cameras import DIRECTION_YAW, Camera
from env.state import MazeState

LETTER = (255, 214, 10)
NEEDLE = (228, 58, 50)
DISC = (40, 42, 52)
RIM = (200, 200, 205)
SLOT = (30, 32, 40)
MIN_COMPASS_PX = 16  # below this a compass is unreadable, and left out
# letter strokes in a unit box, y down
STROKES: dict[str, list[list[tuple[float, float]]]] = {
    "N": [[(0, 1), (0, 0), (1, 1), (1, 0)]],
    "E": [[(1, 0), (0, 0), (0, 1), (1, 1)], [(0, 0.5), (0.75, 0.5)]],
    "S": [[(1, 0), (0, 0), (0, 0.5), (1, 0.5), (1, 1), (0, 1)]],
    "W": [[(0, 0), (0.25, 1), (0.5, 0.45), (0.75, 1), (1, 0)]],
}
LETTERS = "ESWN"  # by direction index


def _rgb(c: tuple[float, float, float], k: float = 1.0) -> tuple[int, int, int]:
    return (round(255 * c[0] * k), round(255 * c[1] * k), round(255 * c[2] * k))


def compass(draw: ImageDraw.ImageDraw, box: tuple[float, float, float], letter: str, needle_deg: float) -> None:
    """A compass in the square at (left, top) of side ``size``: ``letter`` at its top, the needle
    at ``needle_deg`` clockwise from up."""
    left, top, size = box
    draw.ellipse((left, top, left + size - 1, top + size - 1), fill=DISC, outline=RIM, width=max(1, round(size / 24)))
    cx, cy, r = left + size / 2, top + size / 2, size / 2
    a = math.radians(needle_deg)
    tip = (cx + 0.62 * r * math.sin(a), cy - 0.62 * r * math.cos(a))
    side = (0.16 * r * math.cos(a), 0.16 * r * math.sin(a))
    draw.polygon([tip, (cx + side[0], cy + side[1]), (cx - side[0], cy - side[1])], fill=NEEDLE)
    lw, lh = 0.30 * r, 0.34 * r  # the letter, above the centre
    lx, ly = cx - lw / 2, top + 0.12 * size
    for stroke in STROKES[letter]:
        draw.line([(lx + x * lw, ly + y * lh) for x, y in stroke], fill=LETTER, width=max(1, round(size / 20)))


def _key_glyph(draw: ImageDraw.ImageDraw, left: float, top: float, size: float, color: tuple[int, int, int]) -> None:
    r = 0.18 * size
    cx, cy = left + 0.3 * size, top + 0.5 * size
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=color)
    draw.ellipse((cx - r / 2.5, cy - r / 2.5, cx + r / 2.5, cy + r / 2.5), fill=SLOT)
    draw.rectangle((cx + r, cy - 0.05 * size, left + 0.85 * size, cy + 0.05 * size), fill=color)
    for x in (0.62, 0.76):
        draw.rectangle((left + x * size, cy, left + (x + 0.07) * size, cy + 0.17 * size), fill=color)


def _switch_glyph(draw: ImageDraw.ImageDraw, left: float, top: float, size: float, color: tuple[int, int, int],
                  on: bool | None) -> None:
    cx, cy = left + size / 2, top + size / 2
    r = 0.34 * size
    fill = color if on is not False else tuple(round(0.5 * c) for c in color)
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
    if on is not None:  # the state shown: a white light when on, a dark core when off
        k = 0.4 * r
        draw.ellipse((cx - k, cy - k, cx + k, cy + k), fill=(255, 255, 255) if on else (10, 10, 12))


def overlay(rgb: np.ndarray, camera: Camera, maze: Maze, state: MazeState, switch_frames: str) -> np.ndarray:
    """``rgb`` with the compass and, in first person, the status slots drawn over it."""
    from env.render3d.scene import SPEC_COLORS

    side = rgb.shape[0]
    img = Image.fromarray(rgb)
    draw = ImageDraw.Draw(img)
    if camera.turns_with_agent:
        size = round(0.16 * side)
        pad = round(0.02 * side)
        north = (DIRECTION_YAW[state.dir] - 90.0) % 360  # clockwise from the facing, on screen
        compass(draw, (side - pad - size, pad, size), LETTERS[state.dir], north)
        slot = round(0.12 * side)
        gap = round(0.02 * side)
        left = (side - 2 * slot - gap) / 2
        top = side - pad - slot
        for i in range(2):
            x = left + i * (slot + gap)
            draw.rectangle((x, top, x + slot - 1, top + slot - 1), fill=SLOT, outline=RIM)
        if state.carrying >= 0:
            _key_glyph(draw, left, top, slot, _rgb(SPEC_COLORS[maze.keys[state.carrying].color]))
        for i, sw in enumerate(maze.switches):
            if sw.pos == state.pos:
                on = None if switch_frames == "study" else state.switches[i]
                _switch_glyph(draw, left + slot + gap, top, slot, _rgb(SPEC_COLORS[sw.color]), on)
    else:  # north up: in the top-right corner wall cell, which every maze has
        cell = side / max(maze.width, maze.height)
        x0 = (side - cell * maze.width) / 2 + cell * (maze.width - 1)
        y0 = (side - cell * maze.height) / 2
        size = cell * 0.9
        if size >= MIN_COMPASS_PX:
            compass(draw, (x0 + (cell - size) / 2, y0 + (cell - size) / 2, size), "N", 0.0)
    return np.asarray(img)
