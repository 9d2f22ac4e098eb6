"""Reading the chosen action out of a model's reply (docs/design.md §5).

The reply's last line ``ACTION: <name>`` is ``exact``. Unambiguous variants on the last line
(other casing, markdown, ``turn_left`` / ``Move Forward`` spellings, trailing punctuation, a
last line that names exactly one action) are ``lenient``. Anything else is ``invalid``: an
empty or cut-off reply, a last line naming no action, or naming two different actions.
Only the last line counts, because reasoning before the answer routinely mentions several
actions. Nothing in a reply is ever executed; it is only matched against fixed patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agents.actions import tokens_of
from env.state import SIX_ACTIONS

if TYPE_CHECKING:
    from agents.types import ParseStatus

ACTION_LABEL = "ACTION: "  # the exact answer line is this label and an action's name
# the gridbench style offers the six actions only (drop is a study-style field, agents.protocol)
EXACT = re.compile(ACTION_LABEL + "(" + "|".join(SIX_ACTIONS) + ")")

# Inline reasoning some servers leave in the content; an unterminated block is all reasoning.
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)

# The label may be preceded by words such as "final" or "next"; the action follows it.
_LABEL = re.compile(r"\baction\s*(?:[:=]|-|is\b|->)", re.IGNORECASE)

# Spellings of each action after normalisation (lower case, "_" and "-" read as spaces).
_MENTIONS: tuple[tuple[int, re.Pattern[str]], ...] = tuple(
    (SIX_ACTIONS.index(name), re.compile(pattern))
    for name, pattern in (
        ("left", r"\b(?:turn\s+|rotate\s+)?left\b"),
        ("right", r"\b(?:turn\s+|rotate\s+)?right\b"),
        ("forward", r"\b(?:move\s+|go\s+|step\s+|walk\s+)?forwards?\b"),
        ("pickup", r"\bpick\s*up\b"),
        ("toggle", r"\btoggle\b"),
        ("done", r"\bdone\b"),
    )
)


def _strip_reasoning(reply: str) -> str:
    text = _THINK_BLOCK.sub("", reply)
    m = _THINK_OPEN.search(text)
    return text[: m.start()] if m else text


_ONLY_TAGS = re.compile(r"^\s*(</?[A-Za-z_][\w-]*>\s*)+$")


def _last_line(text: str) -> str:
    """The last line with a letter or digit; closing code fences, rules and bare tags are skipped."""
    for line in reversed(text.splitlines()):
        if any(ch.isalnum() for ch in line) and not _ONLY_TAGS.match(line):
            return line.strip()
    return ""


def _normalise(line: str) -> str:
    line = re.sub(r"[*`#>\"'\[\]()]", " ", line)
    line = re.sub(r"[_\-]", " ", line)
    return " ".join(line.lower().split())


def _mentioned(text: str) -> set[int]:
    return {index for index, pattern in _MENTIONS if pattern.search(text)}


def parse_action(reply: str | None) -> tuple[int | None, ParseStatus]:
    """``(action index, status)`` with status ``exact``, ``lenient`` or ``invalid``."""
    if not reply:
        return None, "invalid"
    line = _last_line(_strip_reasoning(reply))
    if not line:
        return None, "invalid"
    m = EXACT.fullmatch(line)
    if m:
        return SIX_ACTIONS.index(m.group(1)), "exact"
    labels = list(_LABEL.finditer(line))
    tail = line[labels[-1].end():] if labels else line
    found = _mentioned(_normalise(tail))
    if len(found) == 1:
        return found.pop(), "lenient"
    return None, "invalid"


# ---- the study's output contract (Protocol.style == "study") ----------------------------------
SENTINEL = "FINAL_OUTPUT"
STUDY_WINDOW = 5  # the reply's last non-empty lines that may hold the sentinel

# The study's fallback when no sentinel line is found: the last of these phrases anywhere in
# the reply (lower-cased; a space matches any run of white space; no word boundaries, as in the
# study's harness), whose token is the reply's only action.
_STUDY_PHRASES = {
    "egocentric": (
        ("turn left", "TURN_LEFT"), ("rotate left", "TURN_LEFT"), ("turn right", "TURN_RIGHT"),
        ("rotate right", "TURN_RIGHT"), ("move forward", "MOVE_FORWARD"), ("go forward", "MOVE_FORWARD"),
        ("forward", "MOVE_FORWARD"), ("pick up", "PICKUP"), ("pickup", "PICKUP"), ("toggle", "TOGGLE"),
        ("done", "DONE"), ("finished", "DONE"),
    ),
    "cardinal": (
        ("move north", "MOVE_NORTH"), ("go north", "MOVE_NORTH"), ("north", "MOVE_NORTH"),
        ("move south", "MOVE_SOUTH"), ("go south", "MOVE_SOUTH"), ("south", "MOVE_SOUTH"),
        ("move east", "MOVE_EAST"), ("go east", "MOVE_EAST"), ("east", "MOVE_EAST"),
        ("move west", "MOVE_WEST"), ("go west", "MOVE_WEST"), ("west", "MOVE_WEST"),
        ("pick up", "PICKUP"), ("pickup", "PICKUP"), ("interact", "INTERACT"), ("done", "DONE"),
        ("finished", "DONE"),
    ),
}
_PHRASE_PATTERNS = {
    space: tuple((re.compile(re.escape(phrase).replace(r"\ ", r"\s+")), token) for phrase, token in phrases)
    for space, phrases in _STUDY_PHRASES.items()
}
_SENTINEL_LINE = re.compile(rf"^{SENTINEL}\s*:\s*(.*)$", re.IGNORECASE)
_ACTIONS_ANYWHERE = re.compile(r"ACTIONS\s*:\s*(.+)", re.IGNORECASE)
_SUBGOAL = re.compile(r"SUB_GOAL\s*:\s*(.+)", re.IGNORECASE)


def _study_token(raw: str, valid: tuple[str, ...]) -> str | None:
    token = raw.strip().upper().replace(" ", "_")
    return token if token in valid else None


def _sentinel_list(rest: str, valid: tuple[str, ...]) -> list[str] | None:
    """The tokens of a sentinel line's rest: comma-separated, empty items skipped; any token
    that is not an action (or nothing at all) fails the whole reply."""
    out = []
    for part in rest.split(","):
        if not part.strip():
            continue
        token = _study_token(part, valid)
        if token is None:
            return None
        out.append(token)
    return out or None


def _sentinel_or_fallback(text: str, action_space: str, drop: bool) -> tuple[list[str] | None, ParseStatus]:
    valid = tokens_of(action_space, drop)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines[-STUDY_WINDOW:]):
        m = _SENTINEL_LINE.match(line)
        if m:
            tokens = _sentinel_list(m.group(1).strip(), valid)
            return (tokens, "exact") if tokens else (None, "invalid")
    lowered = text.lower()
    found = [(m.start(), token) for pattern, token in _PHRASE_PATTERNS[action_space] for m in pattern.finditer(lowered)]
    if not found:
        return None, "invalid"
    # the last phrase to start wins; of two starting at one place, the later in the phrase list
    found.sort(key=lambda hit: hit[0])
    return [found[-1][1]], "lenient"


@dataclass(frozen=True)
class StudyReply:
    """What the study's parse rules read out of one reply."""

    tokens: tuple[str, ...]  # the actions in the reply's own tokens; empty: unparseable
    status: ParseStatus
    subgoal: str = ""


def parse_study(reply: str | None, *, action_space: str = "egocentric", querying: str = "step",
                actions_anywhere: bool = False, drop: bool = False) -> StudyReply:
    """The study's parse rules (docs/protocol.md, "Reading replies").

    The sentinel line ``FINAL_OUTPUT: a, b, ...`` is looked for among the last five non-empty
    lines, from the bottom; the first one found decides, and any token in it that is not an
    action fails the whole reply. Without one, the last action phrase anywhere in the reply is its
    one action (``lenient``); reasoning left in the reply is read too, as the study's parser read
    it. ``step`` querying keeps only the first action. ``actions_anywhere`` reproduces the
    ablation's defect: a line ``ACTIONS: ...`` anywhere in a subgoal or trajectory reply pre-empts
    the sentinel (tokens that are not actions are dropped from it). ``DROP`` is a token only with
    ``drop`` (``actions: with_drop``), and only on a sentinel line: the fallback has no phrase for
    it, as the study's DROP-era parser had none.
    """
    text = reply or ""
    subgoal = ""
    if querying != "step":
        m = _SUBGOAL.search(text)
        subgoal = m.group(1).strip() if m else ""
    tokens: list[str] | None
    if actions_anywhere and querying != "step" and (m := _ACTIONS_ANYWHERE.search(text)):
        valid = tokens_of(action_space, drop)
        tokens = [t for t in (_study_token(p, valid) for p in m.group(1).split(",")) if t]
        status: ParseStatus = "exact" if tokens else "invalid"
    else:
        tokens, status = _sentinel_or_fallback(text, action_space, drop)
    if not tokens:
        return StudyReply((), "invalid", subgoal)
    return StudyReply(tuple(tokens[:1] if querying == "step" else tokens), status, subgoal)
