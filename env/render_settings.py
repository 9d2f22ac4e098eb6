"""The protocol's ``render`` block: which frames a model is shown (docs/protocol.md#3d-frames).

Kept apart from ``env.render`` so that what only validates a protocol (``agents.protocol``, a
sweep's loader) does not import Minigrid and the frames.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from env.errors import BadInput
from env.maze import Maze
from env.render3d.cameras import CAMERAS, frame_side

__all__ = ["BACKENDS", "MINIGRID", "RenderSettings", "render_from_options", "render_settings"]

BACKENDS = ("minigrid", "mujoco3d")
MIN_3D_SIDE, MAX_3D_SIDE = 32, 2048


class RenderSettings(BaseModel):
    """The protocol's ``render`` block (docs/protocol.md#3d-frames). ``minigrid`` takes no other
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
