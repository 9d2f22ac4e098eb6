"""Frames of a maze state, and PNG bytes.

Two backends draw them: ``minigrid``, the full top-down 2D frame of the whole grid (the default,
``render_state``), and ``mujoco3d``, the same state in 3D from a camera preset (``env.render3d``).
``RenderSettings`` is the protocol's ``render`` block that chooses between them; ``frame`` is the
one place a frame is made from it, so prompts, replays, the viewer and ``maze show`` agree.
"""

from __future__ import annotations

import io
from typing import Any, Literal

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from env.errors import BadInput
from env.maze import Maze
from env.minigrid_env import drawn_grid
from env.render3d.cameras import CAMERAS, frame_side
from env.state import MazeState
from env.tiles import prewarm

__all__ = ["BACKENDS", "MINIGRID", "RenderSettings", "check_renderable", "frame", "png_bytes", "prewarm",
           "render_from_options", "render_settings", "render_state"]

BACKENDS = ("minigrid", "mujoco3d")
MIN_3D_SIDE, MAX_3D_SIDE = 32, 2048


class RenderSettings(BaseModel):
    """The protocol's ``render`` block (docs/protocol.md#render). ``minigrid`` takes no other
    field; ``mujoco3d`` needs a ``camera`` and takes a ``resolution`` (``grid``, 32 px per cell of
    the larger side, or pixels a side; frames are square) and ``start_map`` (a top-down map of the
    start, shown once; not with the ``top_down`` camera)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    backend: Literal["minigrid", "mujoco3d"] = "minigrid"
    camera: str | None = None
    resolution: Literal["grid"] | int | None = Field(None)
    start_map: bool = False

    @model_validator(mode="before")
    @classmethod
    def _grid_by_default(cls, data: object) -> object:
        """A 3D block without a resolution has ``grid``, so equal settings compare equal."""
        if isinstance(data, dict) and data.get("backend") == "mujoco3d" and data.get("resolution") is None:
            return {**data, "resolution": "grid"}
        return data

    @model_validator(mode="after")
    def _fits_backend(self) -> RenderSettings:
        if self.backend == "minigrid":
            for name in ("camera", "resolution", "start_map"):
                if getattr(self, name) not in (None, False):
                    raise ValueError(f"{name}: the minigrid backend has no {name} (its frames are the 2D grid)")
            return self
        if self.camera not in CAMERAS:
            raise ValueError(f"camera: the mujoco3d backend needs a camera ({', '.join(CAMERAS)}), got {self.camera!r}")
        if isinstance(self.resolution, int) and not MIN_3D_SIDE <= self.resolution <= MAX_3D_SIDE:
            raise ValueError(f"resolution: 'grid' or pixels a side, {MIN_3D_SIDE} to {MAX_3D_SIDE} (got {self.resolution})")
        if self.start_map and not CAMERAS[self.camera].first_person:
            raise ValueError("start_map: the top_down camera already shows the whole maze")
        return self

    @property
    def is_3d(self) -> bool:
        return self.backend == "mujoco3d"

    def __str__(self) -> str:
        if not self.is_3d:
            return self.backend
        return f"{self.backend}, camera {self.camera}, resolution {self.resolution}" + (", start map" if self.start_map else "")

    @property
    def label(self) -> str:
        """``minigrid``, or ``mujoco3d_<camera>_<resolution>``: names a view in tables and files."""
        return f"mujoco3d_{self.camera}_{self.resolution}" if self.is_3d else "minigrid"

    def side(self, maze: Maze, tile_size: int = 32) -> int:
        """The frame's larger side in pixels."""
        if self.is_3d:
            return frame_side(self.resolution or "grid", maze.width, maze.height)
        return tile_size * max(maze.width, maze.height)


MINIGRID = RenderSettings()


def render_settings(fields: Any, source: str = "render", where: str = "") -> RenderSettings:
    """``RenderSettings`` from user input; a bad value is one ``BadInput`` line naming the field
    (``where`` prefixes it: ``render.`` in a protocol)."""
    if isinstance(fields, RenderSettings):
        return fields
    if not isinstance(fields, dict):
        raise BadInput(source, where.rstrip(".") or "render", "must be a mapping: {backend: minigrid | mujoco3d, camera: ..., resolution: ...}")
    try:
        return RenderSettings(**fields)
    except ValidationError as err:
        first = err.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        field, _, rest = message.partition(": ")
        if field in RenderSettings.model_fields and rest:  # our own rule, which names its field
            raise BadInput(source, where + field, rest) from None
        name = str(first["loc"][0]) if first["loc"] else ""
        if first["type"] == "extra_forbidden":
            raise BadInput(source, where + name, f"unknown field (known: {', '.join(RenderSettings.model_fields)})") from None
        raise BadInput(source, where + name, f"{message} (got {fields.get(name)!r})") from None


def render_from_options(backend: str, camera: str | None, resolution: str | None) -> RenderSettings:
    """``RenderSettings`` from the command line's ``--backend``, ``--camera`` and
    ``--resolution``; a bad one is a ``BadInput`` naming its option."""
    fields: dict[str, Any] = {"backend": backend}
    if camera is not None:
        fields["camera"] = camera
    if resolution is not None:
        fields["resolution"] = int(resolution) if resolution.isdigit() else resolution
    try:
        return render_settings(fields)
    except BadInput as err:
        raise BadInput(f"--{(err.field or 'backend').replace('_', '-')}", "", err.message) from None


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
