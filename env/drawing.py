"""Array versions of Minigrid's drawing primitives, pixel for pixel the same as Minigrid's own.

Minigrid draws a tile by calling a Python predicate once per sub-pixel (9,216 calls for one
32-pixel tile, about 0.1 s for a tile with the agent's triangle), so drawing every tile gridbench
can show takes about 16 s on one core. These shapes evaluate the same arithmetic on whole
coordinate arrays in the same order and the same dtypes, so the masks are identical (the tests
compare them with Minigrid's scalar predicates) and drawing every tile takes well under a second.

``fast_drawing()`` swaps them into Minigrid's modules while the tile cache is being filled;
outside it Minigrid runs untouched. ``Switch`` and ``Gate`` draw with them directly.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator

import numpy as np
from minigrid.core import grid as minigrid_grid
from minigrid.core import world_object as minigrid_objects
from minigrid.utils import rendering as minigrid_rendering

_scalar_fill_coords = minigrid_rendering.fill_coords


class Shape:
    """A predicate on normalised tile coordinates that also works on whole arrays."""

    key: tuple = ()  # the parameters: equal keys draw equal masks, so masks are reused

    def mask(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, x: float, y: float) -> bool:
        return bool(self.mask(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)))


class Rect(Shape):
    def __init__(self, xmin: float, xmax: float, ymin: float, ymax: float):
        self.xmin, self.xmax, self.ymin, self.ymax = xmin, xmax, ymin, ymax
        self.key = ("rect", xmin, xmax, ymin, ymax)

    def mask(self, x, y):
        return (x >= self.xmin) & (x <= self.xmax) & (y >= self.ymin) & (y <= self.ymax)


class Circle(Shape):
    def __init__(self, cx: float, cy: float, r: float):
        self.cx, self.cy, self.r = cx, cy, r
        self.key = ("circle", cx, cy, r)

    def mask(self, x, y):
        return (x - self.cx) * (x - self.cx) + (y - self.cy) * (y - self.cy) <= self.r * self.r


class Line(Shape):
    """A thick segment: Minigrid's ``point_in_line``, its float32 ends and float64 points."""

    def __init__(self, x0: float, y0: float, x1: float, y1: float, r: float):
        self.key = ("line", x0, y0, x1, y1, r)
        self.p0 = np.array([x0, y0], dtype=np.float32)
        d = np.array([x1, y1], dtype=np.float32) - self.p0
        self.length = np.linalg.norm(d)
        self.dir = (d / self.length).astype(np.float64)
        self.box = (min(x0, x1) - r, max(x0, x1) + r, min(y0, y1) - r, max(y0, y1) + r)
        self.r = r

    def mask(self, x, y):
        xmin, xmax, ymin, ymax = self.box
        px, py = x - self.p0[0], y - self.p0[1]
        a = np.clip(px * self.dir[0] + py * self.dir[1], 0, self.length)
        dx = x - (self.p0[0] + a * self.dir[0])
        dy = y - (self.p0[1] + a * self.dir[1])
        inside = (x >= xmin) & (x <= xmax) & (y >= ymin) & (y <= ymax)
        return inside & (np.sqrt(dx * dx + dy * dy) <= self.r)


class Triangle(Shape):
    """Barycentric test with Minigrid's float32 corners and float64 points."""

    def __init__(self, a, b, c):
        self.key = ("triangle", tuple(a), tuple(b), tuple(c))
        self.a = np.array(a, dtype=np.float32)
        b = np.array(b, dtype=np.float32)
        c = np.array(c, dtype=np.float32)
        self.v0 = c - self.a
        self.v1 = b - self.a
        self.dot00 = np.dot(self.v0, self.v0)
        self.dot01 = np.dot(self.v0, self.v1)
        self.dot11 = np.dot(self.v1, self.v1)
        self.inv_denom = 1 / (self.dot00 * self.dot11 - self.dot01 * self.dot01)

    def mask(self, x, y):
        v2x = x - self.a[0]
        v2y = y - self.a[1]
        v0 = self.v0.astype(np.float64)
        v1 = self.v1.astype(np.float64)
        dot02 = v0[0] * v2x + v0[1] * v2y
        dot12 = v1[0] * v2x + v1[1] * v2y
        u = (self.dot11 * dot02 - self.dot01 * dot12) * self.inv_denom
        v = (self.dot00 * dot12 - self.dot01 * dot02) * self.inv_denom
        return (u >= 0) & (v >= 0) & ((u + v) < 1)


class Rotated(Shape):
    def __init__(self, inner: Shape, cx: float, cy: float, theta: float):
        self.inner, self.cx, self.cy = inner, cx, cy
        self.cos, self.sin = math.cos(-theta), math.sin(-theta)
        self.key = ("rotated", inner.key, cx, cy, theta)

    def mask(self, x, y):
        x = x - self.cx
        y = y - self.cy
        x2 = self.cx + x * self.cos - y * self.sin
        y2 = self.cy + y * self.cos + x * self.sin
        return self.inner.mask(x2, y2)


def rotate_fn(fin: Callable, cx: float, cy: float, theta: float) -> Callable:
    if isinstance(fin, Shape):
        return Rotated(fin, cx, cy, theta)
    return minigrid_rendering.rotate_fn(fin, cx, cy, theta)


_grids: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
_masks: dict[tuple, np.ndarray] = {}


def _pixel_centres(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    got = _grids.get((h, w))
    if got is None:
        yf = (np.arange(h, dtype=np.float64) + 0.5) / h
        xf = (np.arange(w, dtype=np.float64) + 0.5) / w
        got = _grids[(h, w)] = (np.broadcast_to(xf[None, :], (h, w)), np.broadcast_to(yf[:, None], (h, w)))
    return got


def fill_coords(img: np.ndarray, fn: Callable, color) -> np.ndarray:
    """Minigrid's ``fill_coords``: one array evaluation for a ``Shape``, the scalar loop otherwise."""
    if not isinstance(fn, Shape):
        return _scalar_fill_coords(img, fn, color)
    h, w = img.shape[0], img.shape[1]
    mask = _masks.get((fn.key, h, w))
    if mask is None:
        mask = _masks[(fn.key, h, w)] = fn.mask(*_pixel_centres(h, w))
    img[mask] = color
    return img


# the names Minigrid's tile drawing looks up at call time, per module
_SWAPS = {
    minigrid_objects: {"fill_coords": fill_coords, "point_in_rect": Rect, "point_in_circle": Circle,
                       "point_in_line": Line},
    minigrid_grid: {
        "fill_coords": fill_coords,
        "point_in_rect": Rect,
        "point_in_triangle": Triangle,
        "rotate_fn": rotate_fn,
    },
}
_swap_lock = threading.Lock()


@contextlib.contextmanager
def fast_drawing() -> Iterator[None]:
    """Let Minigrid draw tiles with the array primitives for the duration of the block."""
    with _swap_lock:
        saved = {mod: {name: getattr(mod, name) for name in names} for mod, names in _SWAPS.items()}
        try:
            for mod, names in _SWAPS.items():
                for name, fn in names.items():
                    setattr(mod, name, fn)
            yield
        finally:
            for mod, names in saved.items():
                for name, fn in names.items():
                    setattr(mod, name, fn)
