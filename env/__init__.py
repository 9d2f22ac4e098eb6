"""The maze substrate: maze files, dynamics, frames, text projection. No models, no Ray.

Public API::

    from env import load_maze, MazeEnv, render_state, text_projection

Names are imported on first use, so that what needs only a maze's file format, its state or
``BadInput`` (the trace records, a run's reader) does not pay for gymnasium, Minigrid and the
frames. The gym id ``gridbench/Maze-v0`` is registered as soon as both this package and
gymnasium are loaded, in either order (``import gymnasium; import env`` as in the README, or
gymnasium imported later by anything).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import TYPE_CHECKING, Any

from env.lazy import lazy_face

ENV_ID = "gridbench/Maze-v0"
ENV_VERSION = "1"  # bump when the dynamics change: it is part of every episode id

_FACE = {
    "env.errors": ("BadInput",),
    "env.maze": ("COLORS", "DIRECTIONS", "FORMAT", "Maze", "load_maze", "maze_from_dict", "save_maze"),
    "env.minigrid_env": ("MazeEnv",),
    "env.render": ("png_bytes", "prewarm", "render_state"),
    "env.sets": ("NAMED_SETS", "resolve_maze", "resolve_mazes"),
    "env.state": ("ACTIONS", "EVENTS", "MazeState", "initial_state", "mechanism_info", "step"),
    "env.text": ("text_projection",),
}
if TYPE_CHECKING:  # the table as imports, for the type checker (env.lazy says why)
    from env.errors import BadInput  # noqa: F401
    from env.maze import COLORS, DIRECTIONS, FORMAT, Maze, load_maze, maze_from_dict, save_maze  # noqa: F401
    from env.minigrid_env import MazeEnv  # noqa: F401
    from env.render import png_bytes, prewarm, render_state  # noqa: F401
    from env.sets import NAMED_SETS, resolve_maze, resolve_mazes  # noqa: F401
    from env.state import ACTIONS, EVENTS, MazeState, initial_state, mechanism_info, step  # noqa: F401
    from env.text import text_projection  # noqa: F401
else:
    __getattr__, __dir__, __all__ = lazy_face(__name__, _FACE,
                                              defined_here=("ENV_ID", "ENV_VERSION", "register_gym_env"))


def register_gym_env() -> None:
    """Register ``gridbench/Maze-v0`` with gymnasium (once); the class loads when an env is made."""
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="env.minigrid_env:MazeEnv", disable_env_checker=False)


class _RegisterAfterGymnasium(importlib.abc.MetaPathFinder):
    """Registers the gym id right after gymnasium is first imported, wherever that happens: this
    package never imports gymnasium itself (a run's reader must not pay for it), yet
    ``gym.make("gridbench/Maze-v0")`` works in any order of imports, as it did when this package
    imported gymnasium."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)  # as the other finders find it
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenRegister(spec.loader)
        return spec


class _ThenRegister(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader):
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        register_gym_env()

    def __getattr__(self, name: str) -> Any:  # resource readers and the like: the loader's own
        return getattr(self.loader, name)


if "gymnasium" in sys.modules:
    register_gym_env()
else:
    sys.meta_path.insert(0, _RegisterAfterGymnasium())
