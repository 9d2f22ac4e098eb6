"""Minigrid's per-process tile cache, filled once per tile size with every tile gridbench shows.

Minigrid draws a tile the first time it appears and caches it in ``Grid.tile_cache`` keyed by
``obj.encode()``, the agent's direction, the highlight flag and the tile size. Drawn its way,
one cold tile costs up to 0.1 s, so the first frame of a maze costs a few tenths of a second.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

from minigrid.core.grid import Grid
from minigrid.core.world_object import Door, Goal, Key, Wall, WorldObj

from env.drawing import fast_drawing
from env.maze import COLORS
from env.objects import Gate, Switch

_warm: set[int] = set()
_warm_lock = threading.Lock()


def all_tiles() -> Iterator[WorldObj | None]:
    """Every cell content a gridbench frame can hold (None is plain floor)."""
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

    Runs once per tile size and process. It draws with the array primitives of
    ``env.drawing`` (the same pixels as Minigrid's own), so all of them together cost less
    than a single cold tile drawn Minigrid's way (about 0.1 s for the whole set on one core).
    """
    if tile_size in _warm:
        return
    with _warm_lock:
        if tile_size in _warm:
            return
        with fast_drawing():
            for obj, agent_dir in itertools.product(list(all_tiles()), (None, 0, 1, 2, 3)):
                if agent_dir is not None and obj is not None and not obj.can_overlap():
                    continue  # the agent never stands on a wall, key, closed door or closed gate
                Grid.render_tile(obj, agent_dir=agent_dir, highlight=False, tile_size=tile_size)
        _warm.add(tile_size)


def is_warm(tile_size: int) -> bool:
    return tile_size in _warm
