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

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NAME_RULE = "letters, digits, '_', '-', '.'; at most 64, starting with a letter or a digit; no '..'"


def is_name(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and NAME_PATTERN.match(value) is not None and ".." not in value


def check_name(source: str, field: str, value: Any, what: str = "name") -> str:
    """``value`` when it is a name, else ``BadInput`` naming ``source`` and ``field``."""
    if not is_name(value):
        raise BadInput(source, field, f"{value!r} is not a valid {what} ({NAME_RULE})")
    return value
