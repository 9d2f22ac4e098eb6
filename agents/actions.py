"""The study style's action vocabularies (docs/protocol.md, "Action spaces").

``egocentric``: the six actions of R1 under the study's tokens. ``cardinal``: absolute moves,
``PICKUP``, ``INTERACT`` (toggle) and ``DONE``; each move becomes the fewest turns that face its
direction plus a forward, each of them one step of the episode, as the study's harness expanded
them. With ``actions: with_drop`` either list gains ``DROP`` after ``PICKUP``, where the study's
revised harness listed it (``TURN_LEFT, TURN_RIGHT, MOVE_FORWARD, PICKUP, DROP, TOGGLE, DONE``).
"""

from __future__ import annotations

from env.state import DONE, DROP, FORWARD, LEFT, PICKUP, RIGHT, TOGGLE

EGOCENTRIC_TOKENS = ("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD", "PICKUP", "TOGGLE", "DONE")  # ACTIONS order
CARDINAL_TOKENS = ("MOVE_NORTH", "MOVE_SOUTH", "MOVE_EAST", "MOVE_WEST", "PICKUP", "INTERACT", "DONE")
DROP_TOKEN = "DROP"
# a cardinal move's heading, as env.maze.DIRECTIONS counts them (east 0, south 1, west 2, north 3)
_HEADINGS = {"MOVE_EAST": 0, "MOVE_SOUTH": 1, "MOVE_WEST": 2, "MOVE_NORTH": 3}
_CARDINAL_OTHERS = {"PICKUP": PICKUP, "INTERACT": TOGGLE, "DONE": DONE, DROP_TOKEN: DROP}


def tokens_of(action_space: str, drop: bool = False) -> tuple[str, ...]:
    """The tokens a reply may name, in the order the prompt lists them."""
    tokens = CARDINAL_TOKENS if action_space == "cardinal" else EGOCENTRIC_TOKENS
    if not drop:
        return tokens
    after = tokens.index("PICKUP") + 1
    return (*tokens[:after], DROP_TOKEN, *tokens[after:])


def token_of(action: int) -> str:
    """The study's egocentric token of an action index."""
    return DROP_TOKEN if action == DROP else EGOCENTRIC_TOKENS[action]


def primitives(token: str, facing: int) -> list[int]:
    """The action indices one token stands for when the agent faces ``facing``."""
    if token in _HEADINGS:
        turn = (_HEADINGS[token] - facing) % 4
        return {0: [], 1: [RIGHT], 2: [RIGHT, RIGHT], 3: [LEFT]}[turn] + [FORWARD]
    if token in _CARDINAL_OTHERS:
        return [_CARDINAL_OTHERS[token]]
    return [EGOCENTRIC_TOKENS.index(token)]
