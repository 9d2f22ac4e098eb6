"""The one error type for bad user input anywhere in gridbench.

Every loader raises ``BadInput`` with the file (or argument), the field and what is
wrong; the command line prints ``str(err)`` as a single line and exits with code 2.
"""

from __future__ import annotations


class BadInput(ValueError):
    """Input that breaks a documented rule: one line naming where and what."""

    def __init__(self, source: str, field: str, message: str):
        self.source = _printable(str(source))
        self.field = _printable(str(field)) if field else field
        self.message = " ".join(str(message).split())
        super().__init__(self.line())

    def line(self) -> str:
        where = f"{self.source}: " if self.source else ""
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"

    def __str__(self) -> str:
        return self.line()


def _printable(text: str) -> str:
    """``text`` with control characters escaped: a key or path holding a newline stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def pydantic_field(loc: tuple) -> str:
    """Render a pydantic error location as ``objects[2].color``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("key", "door", "switch", "gate") and out.endswith("]"):
            # discriminated-union tag: already implied by the object itself
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(file)"
