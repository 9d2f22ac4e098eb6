"""Frames of a maze state, and PNG bytes.

Two backends draw them: ``minigrid``, the full top-down 2D frame of the whole grid (the default,
``render_state``), and ``mujoco3d``, the same state in 3D from a camera preset (``env.render3d``).
``RenderSettings`` (``env.render_settings``) is the protocol's ``render`` block that chooses
between them; ``frame`` is the one place a frame is made from it, so prompts, replays, the viewer
and ``maze show`` agree.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from env.maze import Maze
from env.minigrid_env import drawn_grid
from env.render_settings import BACKENDS, MINIGRID, RenderSettings, render_from_options, render_settings
from env.state import MazeState
from env.tiles import prewarm

__all__ = ["BACKENDS", "MINIGRID", "RenderSettings", "check_renderable", "frame", "png_bytes", "prewarm",
           "render_from_options", "render_settings", "render_state"]


def render_state(maze: Maze, state: MazeState, tile_size: int = 32, switch_frames: str = "distinct") -> np.ndarray:
    """The frame ``MazeEnv`` shows in ``state``: height x width x 3, uint8. ``switch_frames``
    (``study`` or ``distinct``) is the protocol field of that name."""
    prewarm(tile_size, maze.skin)
    return drawn_grid(maze, state, switch_frames).render(tile_size, state.pos, state.dir, None)


def frame(maze: Maze, state: MazeState, tile_size: int = 32, switch_frames: str = "distinct",
          render: RenderSettings = MINIGRID) -> np.ndarray:
    """The frame of ``state`` as ``render`` draws it (the 2D frame at ``tile_size`` by default)."""
    if not render.is_3d:
        return render_state(maze, state, tile_size, switch_frames)
    from env.render3d import frame3d

    return frame3d(maze, state, render.camera or "", render.resolution or "grid", switch_frames)


def check_renderable(maze: Maze, render: RenderSettings, source: str = "render") -> None:
    """Refuse (``BadInput``, one line) a maze ``render`` cannot draw; the 2D frames draw all."""
    if render.is_3d:
        from env.render3d.scene import check_drawable

        check_drawable(maze, source)


def png_bytes(frame: np.ndarray, compress_level: int = 1) -> bytes:
    """Encode a frame as PNG. Level 1 is lossless and several times faster than the default."""
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="PNG", compress_level=compress_level)
    return buf.getvalue()
