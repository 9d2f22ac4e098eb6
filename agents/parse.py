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
from typing import TYPE_CHECKING

from env.state import ACTIONS

if TYPE_CHECKING:
    from agents.types import ParseStatus

EXACT = re.compile(r"ACTION: (" + "|".join(ACTIONS) + r")")

# Inline reasoning some servers leave in the content; an unterminated block is all reasoning.
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)

# The label may be preceded by words such as "final" or "next"; the action follows it.
_LABEL = re.compile(r"\baction\s*(?:[:=]|-|is\b|->)", re.IGNORECASE)

# Spellings of each action after normalisation (lower case, "_" and "-" read as spaces).
_MENTIONS: tuple[tuple[int, re.Pattern[str]], ...] = tuple(
    (ACTIONS.index(name), re.compile(pattern))
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
        return ACTIONS.index(m.group(1)), "exact"
    labels = list(_LABEL.finditer(line))
    tail = line[labels[-1].end():] if labels else line
    found = _mentioned(_normalise(tail))
    if len(found) == 1:
        return found.pop(), "lenient"
    return None, "invalid"
