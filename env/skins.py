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
from env.mechanics import MECHANICS

# The words a skin defines: per kind a noun and its plural; per visible state an adjective; the
# text map's letters per kind (keys and the study's kinds) or per kind and visible state. Each
# mechanic declares its own (env.mechanics, ``Mechanic.words``); a skin gathers them.
STATE_WORDS = tuple(state for m in MECHANICS for state in m.words[CLASSIC].states)
GLYPH_NAMES = tuple(glyph for m in MECHANICS for glyph in m.words[CLASSIC].glyphs)


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


def _skin(name: str) -> Skin:
    """The skin ``name`` as the mechanics declare it (every one declares every skin's words)."""
    words = [m.words[name] for m in MECHANICS]
    nouns = {kind: pair for w in words for kind, pair in w.nouns.items()}
    states = {state: word for w in words for state, word in w.states.items()}
    glyphs = {glyph: letter for w in words for glyph, letter in w.glyphs.items()}
    assert set(states) == set(STATE_WORDS) and set(glyphs) == set(GLYPH_NAMES), name
    legend = {kind: word for w in words for kind, word in w.legend.items()}
    return Skin(name, MappingProxyType(nouns), MappingProxyType(states), MappingProxyType(glyphs),
                MappingProxyType(legend))


SKINS: dict[str, Skin] = {name: _skin(name) for name in SKIN_NAMES}
assert tuple(SKINS) == SKIN_NAMES


def skin_of(maze: Maze) -> Skin:
    return SKINS[maze.skin]


def with_skin(maze: Maze, skin: str) -> Maze:
    """The same maze (id, dynamics, meta) drawn and named in another skin."""
    if maze.skin == skin:
        return maze
    return maze_from_dict({**maze.to_dict(), "skin": skin}, f"<{maze.id} in skin {skin}>")
