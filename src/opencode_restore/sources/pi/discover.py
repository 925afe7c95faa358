"""Where pi keeps sessions and what a session file's header says of it.

``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``; the first line is the
``session`` header (id, cwd, timestamp).
"""

from __future__ import annotations

from pathlib import Path

from ...fields import non_empty, parse_timestamp
from ..base import Found
from ..discover import first_request, head_objects, last_activity

PATTERNS = ("*.jsonl",)


def default_roots(home: Path) -> list[Path]:
    """``~/.pi/agent/sessions``."""
    return [home / ".pi" / "agent" / "sessions"]


def describe(path: Path) -> Found:
    """Session id, cwd, start and first typed request from the header and first entries."""
    heads = head_objects(path)
    header = next(heads, None) or {}
    sid = non_empty(header.get("id")) if header.get("type") == "session" else None
    started = parse_timestamp(header.get("timestamp"))
    cwd = non_empty(header.get("cwd"))
    title = first_request(heads, "message", "message")
    return Found("pi", sid or path.stem, path, cwd, title, started, last_activity(path))
