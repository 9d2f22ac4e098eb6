"""The same maze in 3D: a render layer over ``env.state`` (docs/render3d.md).

Frames only: the state, its dynamics, reward and termination are the 2D world's, untouched, so a
3D episode is action for action the 2D one. MuJoCo is imported on the first frame, with a headless
GL backend set first (``env.render3d.gl``); importing this package costs nothing.
"""

from __future__ import annotations

import numpy as np

from env.maze import Maze
from env.render3d.cameras import CAMERAS, GRID_PX, frame_side
from env.render3d.scene import check_drawable
from env.state import MazeState, initial_state

__all__ = ["CAMERAS", "GRID_PX", "check_drawable", "frame3d", "frame_side", "start_map"]


def frame3d(maze: Maze, state: MazeState, camera: str, resolution: int | str = "grid",
            switch_frames: str = "distinct") -> np.ndarray:
    """The 3D frame of ``state`` seen by ``camera``: a square read-only uint8 array."""
    from env.render3d.renderer import renderer

    return renderer().frame(maze, state, camera, frame_side(resolution, maze.width, maze.height), switch_frames)


def start_map(maze: Maze, resolution: int | str = "grid", switch_frames: str = "distinct") -> np.ndarray:
    """The top-down map of the maze as it starts, at the size of the run's frames."""
    return frame3d(maze, initial_state(maze), "top_down", resolution, switch_frames)
