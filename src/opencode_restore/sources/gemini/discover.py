"""Where Gemini CLI keeps sessions and what a chat file's head says of it.

``~/.gemini/tmp/<project>/chats/session-*.json`` (legacy) and ``.jsonl``; the project
directory is in ``tmp/<project>/.project_root`` beside ``chats/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from ...fields import parse_timestamp
from ...titles import request_title
from ..base import Found
from ..discover import last_activity

PATTERNS = ("session-*.json", "session-*.jsonl")
_HEAD_BYTES = 256 * 1024
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"]+)"')
_START = re.compile(rb'"startTime"\s*:\s*"([^"]+)"')
_USER = re.compile(rb'"type"\s*:\s*"user"\s*,\s*"content"\s*:\s*("(?:[^"\\]|\\.)*"|\[)')
_FIRST_PART = re.compile(rb'\[\s*\{\s*"text"\s*:\s*("(?:[^"\\]|\\.)*")')


def default_roots(home: Path) -> list[Path]:
    """``~/.gemini/tmp``."""
    return [home / ".gemini" / "tmp"]


def describe(path: Path) -> Found | None:
    """Session id, project, start and first request from the chat's head (None: unreadable)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return None
    match = _SESSION_ID.search(head)
    sid = match.group(1).decode("utf-8", "replace") if match else path.stem
    started = None
    stamp = _START.search(head)
    if stamp:
        started = parse_timestamp(stamp.group(1).decode("ascii", "replace"))
    cwd = project_root(path)
    return Found("gemini", sid, path, cwd, _title(head), started, last_activity(path))


def project_root(path: Path) -> str | None:
    """The project directory Gemini CLI wrote to ``tmp/<project>/.project_root`` beside ``chats/``.

    A chat's head holds no cwd (the reader finds it later in the session context), so
    without this file ``sessions list --cwd`` and ``restore --latest --cwd`` miss the session.
    """
    try:
        with (path.parent.parent / ".project_root").open("rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return None
    text = raw.decode("utf-8", "replace").strip()
    return text if text and "\n" not in text else None


def _title(head: bytes) -> str | None:
    """The first user request in the head of a Gemini chat (legacy JSON or JSONL)."""
    for match in _USER.finditer(head):
        raw = match.group(1)
        if raw == b"[":  # content as parts: [{"text": ...}]
            parts = _FIRST_PART.match(head[match.start(1) :])
            raw = parts.group(1) if parts else b'""'
        try:
            title = request_title(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
        if title:
            return title
    return None
