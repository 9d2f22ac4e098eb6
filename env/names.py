"""The one rule for names that become file or folder names, or parts of them: maze and object
ids, set names, sweep, model and condition names, run names and player names.

A name is 1 to 64 characters, letters, digits, ``_``, ``-`` and ``.``, starting with a letter or
a digit, with no ``..``: it can be joined to a folder without ever naming a path outside it, and
it reads the same on every file system. A name made of names (the run ``play-<player>-<time>``)
is checked as a name too.
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard

from env.errors import BadInput

NAME_CHARS = "A-Za-z0-9_.-"  # a regular-expression class: what a name is made of
MAX_NAME = 64
NAME_PATTERN = re.compile(rf"^[A-Za-z0-9][{NAME_CHARS}]{{0,{MAX_NAME - 1}}}$")
NAME_RULE = "letters, digits, '_', '-', '.'; at most 64, starting with a letter or a digit; no '..'"


def is_name(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and NAME_PATTERN.match(value) is not None and ".." not in value


def name_chars(text: str, fill: str = "-") -> str:
    """``text`` with every character a name may not hold replaced by ``fill`` (for names made
    from file names, env ids or a login: cut and trimmed to the rule by their makers)."""
    return re.sub(f"[^{NAME_CHARS}]", fill, text)


def check_name(source: str, field: str, value: Any, what: str = "name") -> str:
    """``value`` when it is a name, else ``BadInput`` naming ``source`` and ``field``."""
    if not is_name(value):
        raise BadInput(source, field, f"{value!r} is not a valid {what} ({NAME_RULE})")
    return value
