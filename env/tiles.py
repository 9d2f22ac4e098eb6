"""Minigrid's per-process tile cache, filled once per tile size with every tile gridbench shows.

Minigrid draws a tile the first time it appears and caches it in ``Grid.tile_cache`` keyed by
``obj.encode()``, the agent's direction, the highlight flag and the tile size. Drawn its way,
one cold tile costs up to 0.1 s, so the first frame of a maze costs a few tenths of a second.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
from minigrid.core.grid import Grid
from minigrid.core.world_object import Box, Door, Goal, Key, Lava, Wall, WorldObj

from env.drawing import fast_drawing
from env.maze import (
    CLASSIC,
    DOOR_STATES,
    SKIN_NAMES,
)
from env.mechanics import MECHANICS
from env.objects import DiscSwitch, Gate, NeutralGlyph, Switch, Tile

AGENT_DIRS = (None, 0, 1, 2, 3)  # no agent on the cell, then the agent facing east, south, west, north

_warm: set[tuple[int, str]] = set()  # (tile size, skin)
_warm_lock = threading.Lock()


def all_tiles(skin: str | None = None) -> Iterator[WorldObj | None]:
    """Every cell content a gridbench frame can hold (None is plain floor): the classic skin's,
    then the neutral skin's glyph of each object (env.skins); with ``skin``, those a frame in that
    skin can hold (the floor, walls and the goal, and its objects)."""
    classic = list(_classic_tiles())
    if skin in (None, CLASSIC):
        yield from classic
    else:
        yield from (obj for obj in classic if obj is None or isinstance(obj, Wall | Goal))
    if skin != CLASSIC:
        yield from (NeutralGlyph(obj) for obj in classic if obj is not None and not isinstance(obj, Wall | Goal))


def _classic_tiles() -> Iterator[WorldObj | None]:
    """The floor, a wall, the goal, then every mechanic's own tiles (``Mechanic.tiles``)."""
    yield None
    yield Wall()
    yield Goal()
    for m in MECHANICS:
        if m.tiles is not None:
            yield from m.tiles()


def shown_tiles(skin: str | None = None) -> Iterator[tuple[WorldObj | None, int | None]]:
    """Every (cell content, agent direction or None) pair a frame (in ``skin``) can show."""
    for obj in all_tiles(skin):
        # the agent never stands on a wall, a closed door or gate, a block or a hazard; on a key
        # only under multinet-r1, where keys are walkable; on a glyph the agent never stands on only
        # where its mechanic says a frame can show it there all the same (``Glyph.agent_shown``)
        look = obj.inner if isinstance(obj, NeutralGlyph) else obj
        enterable = (look is None or (look.can_overlap() and not isinstance(look, Lava)) or isinstance(look, Key)
                     or (isinstance(look, Tile) and look.glyph.agent_shown))
        for agent_dir in AGENT_DIRS:
            if agent_dir is None or enterable:
                yield obj, agent_dir


def tile_name(obj: WorldObj | None) -> str:
    """A cell content's name in a tile atlas: its kind, colour and state (``door-red-locked``);
    in the neutral skin the same name after ``neutral/`` (``neutral/door-red-locked``).

    The states are spelled as the traces' ``mechanisms`` column spells them, so a viewer can name
    a cell's tile from a recorded step without knowing Minigrid's encoding.
    """
    if obj is None:
        return "floor"
    if isinstance(obj, NeutralGlyph):  # the skin's name, then the classic tile it stands for
        return f"neutral/{tile_name(obj.inner)}"
    if isinstance(obj, Wall | Goal):
        return obj.type
    if isinstance(obj, Key):
        return f"key-{obj.color}"
    if isinstance(obj, Door):
        return f"door-{obj.color}-{DOOR_STATES[obj.encode()[2]]}"
    if isinstance(obj, Switch):
        return f"switch-{obj.color}-{'on' if obj.is_on else 'off'}"
    if isinstance(obj, Gate):
        return f"gate-{obj.color}-{'open' if obj.is_open else 'closed'}"
    if isinstance(obj, DiscSwitch):
        return f"switch-{obj.color}-disc" + (f"-{'on' if obj.is_on else 'off'}" if obj.shows_state else "")
    if isinstance(obj, Box):
        return f"block-{obj.color}"
    if isinstance(obj, Tile):
        return obj.tile
    if isinstance(obj, Lava):
        return "hazard"
    raise ValueError(f"no tile name for {obj!r}")


def tile_atlas(tile_size: int) -> tuple[np.ndarray, dict[str, int]]:
    """Every tile a frame can hold, as one image, and the row of each tile name.

    Row ``r`` holds one cell content; column ``c`` shows it with ``AGENT_DIRS[c]`` (column 0
    without the agent; columns the agent can never occupy stay black). The tiles are Minigrid's
    cached ones, so a frame put together from them, tile by tile, is ``render_state``'s frame.
    """
    for skin in SKIN_NAMES:
        prewarm(tile_size, skin)
    rows = {tile_name(obj): r for r, obj in enumerate(all_tiles())}
    atlas = np.zeros((len(rows) * tile_size, len(AGENT_DIRS) * tile_size, 3), dtype=np.uint8)
    for obj, agent_dir in shown_tiles():
        y, x = rows[tile_name(obj)] * tile_size, AGENT_DIRS.index(agent_dir) * tile_size
        atlas[y:y + tile_size, x:x + tile_size] = Grid.render_tile(
            obj, agent_dir=agent_dir, highlight=False, tile_size=tile_size)
    return atlas, rows


def prewarm(tile_size: int = 32, skin: str = CLASSIC) -> None:
    """Draw every tile gridbench can show in ``skin`` once, so no episode pays Minigrid's
    cold-tile cost.

    Runs once per tile size, skin and process. It draws with the array primitives of
    ``env.drawing`` (the same pixels as Minigrid's own), so all of them together cost less
    than a single cold tile drawn Minigrid's way (about 0.1 s for a skin's set on one core).
    """
    if (tile_size, skin) in _warm:
        return
    with _warm_lock:
        if (tile_size, skin) in _warm:
            return
        with fast_drawing():
            for obj, agent_dir in shown_tiles(skin):
                Grid.render_tile(obj, agent_dir=agent_dir, highlight=False, tile_size=tile_size)
        _warm.add((tile_size, skin))


def is_warm(tile_size: int, skin: str = CLASSIC) -> bool:
    return (tile_size, skin) in _warm
