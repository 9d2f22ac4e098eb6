"""Frames of a maze state: full top-down RGB of the whole grid, and PNG bytes."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from env.maze import Maze
from env.minigrid_env import drawn_grid
from env.state import MazeState
from env.tiles import prewarm

__all__ = ["png_bytes", "prewarm", "render_state"]


def render_state(maze: Maze, state: MazeState, tile_size: int = 32, switch_frames: str = "distinct") -> np.ndarray:
    """The frame ``MazeEnv`` shows in ``state``: height x width x 3, uint8. ``switch_frames``
    (``study`` or ``distinct``) is the protocol field of that name."""
    prewarm(tile_size, maze.skin)
    return drawn_grid(maze, state, switch_frames).render(tile_size, state.pos, state.dir, None)


def png_bytes(frame: np.ndarray, compress_level: int = 1) -> bytes:
    """Encode a frame as PNG. Level 1 is lossless and several times faster than the default."""
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="PNG", compress_level=compress_level)
    return buf.getvalue()
