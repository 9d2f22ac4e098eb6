"""The camera presets of the 3D frames (docs/render3d.md#cameras).

World coordinates: the cell ``(x, y)`` of a maze (x the column, y the row from the top) has its
centre at ``(x + 0.5, -(y + 0.5))``, z up, so north is +y and a top-down view with +y up is north
up. Facing ``d`` (east, south, west, north = 0..3) is the yaw ``DIRECTION_YAW[d]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DIRECTION_YAW = (0.0, -90.0, 180.0, 90.0)  # east, south, west, north, in degrees from +x
# the same turns as quaternions about z (w, x, y, z), for the agent's body
DIRECTION_QUATS = tuple((math.cos(math.radians(a) / 2), 0.0, 0.0, math.sin(math.radians(a) / 2)) for a in DIRECTION_YAW)


@dataclass(frozen=True)
class Camera:
    name: str
    orthographic: bool
    fovy: float  # degrees; unused by the orthographic view, which shows the whole maze
    pitch: float  # degrees, negative looks down
    eye_height: float
    eye_ahead: float  # how far ahead of the cell centre the eye sits
    wall_height: float
    first_person: bool  # the view is the agent's own: it turns with it, the agent is not drawn

    @property
    def turns_with_agent(self) -> bool:
        return self.first_person


CAMERAS: dict[str, Camera] = {
    # the whole maze from straight above, orthographic, north up
    "top_down": Camera("top_down", True, 0.0, -90.0, 0.0, 0.0, 0.4, False),
    # the later, wide eye: sees its own cell's front edge and more of the corridor's sides
    "first_person": Camera("first_person", False, 110.0, -5.0, 0.55, 0.1, 1.0, True),
    # the study's first eye (the one its camera ablation ran): narrower, looking further down
    "first_person_narrow": Camera("first_person_narrow", False, 90.0, -12.0, 0.55, 0.1, 1.4, True),
}
GRID_PX = 32  # resolution "grid": pixels per cell of the larger side, a 2D frame's tile size


def cell_centre(x: int, y: int) -> tuple[float, float]:
    return (x + 0.5, -(y + 0.5))


def eye_pose(camera: Camera, pos: tuple[int, int], direction: int, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """The camera's position and orientation (a 3x3 matrix whose columns are its right, up and
    backward axes, MuJoCo's convention) for an agent at ``pos`` facing ``direction``."""
    if camera.orthographic:
        centre = np.array([width / 2, -height / 2, 10.0 + max(width, height)])
        return centre, np.eye(3)  # looking down -z, +y (north) up
    yaw, pitch = math.radians(DIRECTION_YAW[direction]), math.radians(camera.pitch)
    cx, cy = cell_centre(*pos)
    forward = np.array([math.cos(pitch) * math.cos(yaw), math.cos(pitch) * math.sin(yaw), math.sin(pitch)])
    right = np.array([math.sin(yaw), -math.cos(yaw), 0.0])
    up = np.cross(right, forward)
    eye = np.array([cx + camera.eye_ahead * math.cos(yaw), cy + camera.eye_ahead * math.sin(yaw), camera.eye_height])
    return eye, np.stack([right, up, -forward], axis=1)


def frame_side(resolution: int | str, width: int, height: int) -> int:
    """Pixels a side of a square frame: ``grid`` is 32 per cell of the larger side."""
    return GRID_PX * max(width, height) if resolution == "grid" else int(resolution)
