"""The one scrubber of secrets: every error text, log line and trace string that may echo a
request passes through ``scrub`` before it leaves the process that made the request.

Providers sometimes echo request headers in their errors, and a user may paste a key where a
variable's name belongs; so three kinds of text are replaced: secrets the caller knows (the key
it sent), the values of secret-looking environment variables, and anything shaped like a key.
"""

from __future__ import annotations

import os
import re

from agents.model import NO_KEY

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
_KEYLIKE = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9_\-.=]{8,}|(?:api[_-]?key|x-api-key)[\"']?\s*[:=]\s*[\"']?[^\s\"',]{6,})",
    re.IGNORECASE,
)
MIN_SECRET_CHARS = 8  # shorter values (a flag, "1") would blank out ordinary words


def scrub(text: str, known: tuple[str | None, ...] = ()) -> str:
    """``text`` with known secrets, secret-looking environment values and key-shaped strings replaced."""
    for secret in known:
        if secret and len(secret) >= 4 and secret != NO_KEY:
            text = text.replace(secret, REDACTED)
    for name, value in os.environ.items():
        if len(value) >= MIN_SECRET_CHARS and _SECRET_NAME.search(name) and value in text:
            text = text.replace(value, f"<{name}>")
    return _KEYLIKE.sub(REDACTED, text)
