"""The maze substrate: maze files, dynamics, frames, text projection. No models, no Ray.

Public API::

    from env import load_maze, MazeEnv, render_state, text_projection
"""

from __future__ import annotations

import gymnasium as gym

from env.errors import BadInput
from env.maze import COLORS, DIRECTIONS, FORMAT, Maze, load_maze, maze_from_dict, save_maze
from env.minigrid_env import MazeEnv, mechanism_info
from env.render import png_bytes, prewarm, render_state
from env.sets import NAMED_SETS, resolve_maze, resolve_mazes
from env.state import ACTIONS, EVENTS, MazeState, initial_state, step
from env.text import text_projection

ENV_ID = "gridbench/Maze-v0"
ENV_VERSION = "1"  # bump when the dynamics change: it is part of every episode id

if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="env.minigrid_env:MazeEnv", disable_env_checker=False)

__all__ = [
    "ACTIONS", "COLORS", "DIRECTIONS", "ENV_ID", "ENV_VERSION", "EVENTS", "FORMAT", "NAMED_SETS",
    "BadInput", "Maze", "MazeEnv", "MazeState", "initial_state", "load_maze", "maze_from_dict",
    "mechanism_info", "png_bytes", "prewarm", "render_state", "resolve_maze", "resolve_mazes",
    "save_maze", "step", "text_projection",
]
