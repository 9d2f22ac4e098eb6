"""Skins: how a maze's objects are drawn and named, apart from what they do (docs/variants.md#reskin).

A skin changes nothing of the dynamics, the oracle or the checks; it decides the glyph each object
is drawn with (``env.objects.NeutralGlyph``), the letter the text map writes for it, and the words
the text projection and the prompts name it by. ``classic`` is gridbench's (and the study's) look:
keys, doors, switches and gates drawn and named as such. ``neutral`` draws every kind with a shape
that carries no everyday prior and names it with a made-up word, so a model cannot lean on what it
knows about keys and locks: the dynamics stay, the prior goes.

The words are nonce words in the tradition of novel-word studies (Berko's ``wug``, the ``dax`` of
word-learning experiments): one short syllable, no English meaning, nothing mechanical about the
sound. States are named by how the glyph looks (``marked``, ``filled``, ``hollow``; ``bright``,
``dim``), never by what they allow (``locked``, ``open``, ``on``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from env.maze import CLASSIC, DOOR_STATES, SKIN_NAMES, Maze, maze_from_dict

# The words a skin defines: per kind a noun and its plural; per visible state an adjective.
STATE_WORDS = ("door_locked", "door_closed", "door_open", "switch_on", "switch_off", "gate_closed", "gate_open")
# The text map's letters: per kind (keys and multinet-r1's kinds) or per kind and visible state.
GLYPH_NAMES = ("key", *STATE_WORDS, "teleporter", "hazard", "block", "kill", "frozen", "turntable")


@dataclass(frozen=True)
class Skin:
    name: str
    nouns: MappingProxyType  # kind -> (singular, plural)
    states: MappingProxyType  # STATE_WORDS -> adjective
    glyphs: MappingProxyType  # GLYPH_NAMES -> one character of the text map
    # how the map legend names multinet-r1's kinds where it differs from the noun
    legend_names: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def noun(self, kind: str) -> str:
        return self.nouns[kind][0]

    def door_state(self, state: int) -> str:
        """The adjective of a door state code (``env.state``: 0 open, 1 closed, 2 locked)."""
        return self.states[f"door_{DOOR_STATES[state]}"]

    def switch_state(self, on: bool) -> str:
        return self.states["switch_on" if on else "switch_off"]

    def gate_state(self, is_open: bool) -> str:
        return self.states["gate_open" if is_open else "gate_closed"]

    def legend_name(self, kind: str) -> str:
        return self.legend_names.get(kind, self.noun(kind))

    @property
    def words(self) -> dict[str, str]:
        """Every word by name, as prompt texts write them: ``key``, ``keys``, ``door_locked``."""
        out = {kind: one for kind, (one, _) in self.nouns.items()}
        out.update({_plural_name(kind): many for kind, (_, many) in self.nouns.items()})
        return {**out, **self.states}


def _plural_name(kind: str) -> str:
    return {"switch": "switches"}.get(kind, kind + "s")


def _skin(name: str, nouns: dict[str, tuple[str, str]], states: dict[str, str], glyphs: dict[str, str],
          legend_names: dict[str, str] | None = None) -> Skin:
    assert set(states) == set(STATE_WORDS) and set(glyphs) == set(GLYPH_NAMES), name
    return Skin(name, MappingProxyType(nouns), MappingProxyType(states), MappingProxyType(glyphs),
                MappingProxyType(legend_names or {}))


SKINS: dict[str, Skin] = {
    CLASSIC: _skin(
        CLASSIC,
        {"key": ("key", "keys"), "door": ("door", "doors"), "switch": ("switch", "switches"),
         "gate": ("gate", "gates"),
         # multinet-r1's kinds are named by what they look like, never by what they do
         "teleporter": ("ring", "rings"), "block": ("box", "boxes"), "hazard": ("lava cell", "lava cells"),
         "kill": ("skull", "skulls"), "frozen": ("frosted tile", "frosted tiles"),
         "turntable": ("pointer tile", "pointer tiles")},
        {"door_locked": "locked", "door_closed": "closed", "door_open": "open", "switch_on": "on",
         "switch_off": "off", "gate_closed": "closed", "gate_open": "open"},
        {"key": "K", "door_locked": "L", "door_closed": "D", "door_open": "/", "switch_off": "S",
         "switch_on": "*", "gate_closed": "X", "gate_open": "_", "teleporter": "O", "hazard": "~",
         "block": "B", "kill": "x", "frozen": "=", "turntable": "@"},
        {"hazard": "lava"},
    ),
    "neutral": _skin(
        "neutral",
        {"key": ("dax", "daxes"), "door": ("wug", "wugs"), "switch": ("fep", "feps"), "gate": ("zib", "zibs"),
         "teleporter": ("vek", "veks"), "block": ("tev", "tevs"), "hazard": ("lorp", "lorps"),
         "kill": ("nuv", "nuvs"), "frozen": ("pim", "pims"), "turntable": ("mib", "mibs")},
        {"door_locked": "marked", "door_closed": "filled", "door_open": "hollow", "switch_on": "bright",
         "switch_off": "dim", "gate_closed": "filled", "gate_open": "hollow"},
        {"key": "d", "door_locked": "Q", "door_closed": "W", "door_open": "w", "switch_off": "f",
         "switch_on": "F", "gate_closed": "Z", "gate_open": "z", "teleporter": "e", "hazard": "r",
         "block": "t", "kill": "n", "frozen": "p", "turntable": "m"},
    ),
}
assert tuple(SKINS) == SKIN_NAMES


def skin_of(maze: Maze) -> Skin:
    return SKINS[maze.skin]


def with_skin(maze: Maze, skin: str) -> Maze:
    """The same maze (id, dynamics, meta) drawn and named in another skin."""
    if maze.skin == skin:
        return maze
    return maze_from_dict({**maze.to_dict(), "skin": skin}, f"<{maze.id} in skin {skin}>")
