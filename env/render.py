"""Frames of a maze state: full top-down RGB of the whole grid, and PNG bytes."""

from __future__ import annotations

import io
import itertools
import threading

import numpy as np
from minigrid.core.grid import Grid
from minigrid.core.world_object import Door, Goal, Key, Wall
from PIL import Image

from env.maze import COLORS, Maze
from env.minigrid_env import build_grid
from env.objects import Gate, Switch
from env.state import MazeState

_warm: set[int] = set()
_warm_lock = threading.Lock()


def render_state(maze: Maze, state: MazeState, tile_size: int = 32) -> np.ndarray:
    """The frame ``MazeEnv`` shows in ``state``: height x width x 3, uint8."""
    prewarm(tile_size)
    grid, _ = build_grid(maze, state)
    return grid.render(tile_size, state.pos, state.dir, None)


def png_bytes(frame: np.ndarray, compress_level: int = 1) -> bytes:
    """Encode a frame as PNG. Level 1 is lossless and several times faster than the default."""
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="PNG", compress_level=compress_level)
    return buf.getvalue()


def _all_tiles():
    yield None
    yield Wall()
    yield Goal()
    for c in COLORS:
        yield Key(c)
        yield Door(c, is_open=True)
        yield Door(c, is_open=False)
        yield Door(c, is_open=False, is_locked=True)
        yield Switch(c, True)
        yield Switch(c, False)
        yield Gate(c, True)
        yield Gate(c, False)


def prewarm(tile_size: int = 32) -> None:
    """Draw every tile gridbench can show once, so no episode pays Minigrid's cold-tile cost.

    Minigrid caches tiles per process (``Grid.tile_cache``), so this runs once per tile size.
    """
    if tile_size in _warm:
        return
    with _warm_lock:
        if tile_size in _warm:
            return
        for obj, agent_dir in itertools.product(list(_all_tiles()), (None, 0, 1, 2, 3)):
            if agent_dir is not None and obj is not None and not obj.can_overlap():
                continue  # the agent never stands on a wall, key, closed door or closed gate
            Grid.render_tile(obj, agent_dir=agent_dir, highlight=False, tile_size=tile_size)
        _warm.add(tile_size)
