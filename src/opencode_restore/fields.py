"""Log-derived fields: metadata (title, cwd, id) made safe to print on one line, and
timestamps read into aware datetimes.

A log author chooses these fields. Pasted as they are, a title holding a line break
and ``## SYSTEM UPDATE`` starts a heading in the markdown and a new instruction in a
prompt; a right-to-left override or a NUL hides text from a reader. Every place that
prints such a field outside the quoted transcript goes through ``one_line``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

#: The longest metadata field printed (a title is a sentence; a path is rarely longer).
MAX_FIELD_CHARS = 300

# C0/C1 controls, zero-width and bidirectional formatting characters, line and
# paragraph separators: none belongs in a one-line field.
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]+")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` in its number: "1 session", "2 sessions", "1 evidence item"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def flatten(value: object) -> str:
    """``value`` as one line: controls and line breaks become single spaces."""
    return " ".join(_INVISIBLE.sub(" ", str(value)).split())


def one_line(value: object, limit: int = MAX_FIELD_CHARS) -> str:
    """``flatten(value)`` capped at ``limit`` characters (an ellipsis marks the cut)."""
    text = flatten(value)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def non_empty(value: object) -> str | None:
    """``value`` when it is a non-empty string, else None (log fields are untyped)."""
    return value if isinstance(value, str) and value else None


_EPOCH_MS_CUTOFF = 10_000_000_000


def parse_timestamp(value: Any) -> datetime | None:
    """Parse an ISO 8601 string or a unix time (seconds or ms) into an aware UTC datetime."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            seconds = value / 1000 if value > _EPOCH_MS_CUTOFF else value
            return datetime.fromtimestamp(seconds, UTC)
        if isinstance(value, str):
            dt = datetime.fromisoformat(value)
            if dt.tzinfo is None:
                return dt.replace(tzinfo=UTC)
            return dt.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None
