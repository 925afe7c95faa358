"""Where Claude Code keeps sessions and what a transcript's first lines say of it.

``~/.claude/projects/<encoded-cwd>/<session>.jsonl``. Sub-agent files are no sessions of
their own: they sit under ``<session>/subagents/``, are named ``agent-*.jsonl``, or
(Claude Code 2.0) sit next to their parent with its ``sessionId`` and entries marked
``isSidechain``. Files of one folder that share a ``slug`` are one session across
``/clear`` (see ``sources.base.merge_slugs``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...fields import non_empty, parse_timestamp
from ...titles import content_text, request_title
from ..base import Found
from ..discover import head_objects, last_activity

PATTERNS = ("*.jsonl",)
_HEAD_BYTES = 256 * 1024
_TAIL_BYTES = 256 * 1024
_SLUG = re.compile(rb'"slug"\s*:\s*"([^"\\]+)"')


def default_roots(home: Path) -> list[Path]:
    """``~/.claude/projects``."""
    return [home / ".claude" / "projects"]


def describe(path: Path) -> Found:
    """Session id, cwd, start and first typed request from the transcript's first lines."""
    found = Found("claude-code", path.stem, path, updated=last_activity(path))
    found.sidechain = "subagents" in path.parts or path.name.startswith("agent-")
    sid = None
    for obj in head_objects(path):
        if sid is None and (sid := non_empty(obj.get("sessionId"))) is not None:
            # Sub-agent files of Claude Code 2.0 sit next to their parent, named by its
            # file stem but carrying the parent's sessionId: their entries are sidechains.
            found.sidechain = found.sidechain or obj.get("isSidechain") is True
        found.cwd = found.cwd or non_empty(obj.get("cwd"))
        found.started = found.started or parse_timestamp(obj.get("timestamp"))
        if found.title is None and obj.get("type") == "user" and not obj.get("isMeta"):
            message = obj.get("message")
            if isinstance(message, dict):
                found.title = request_title(content_text(message.get("content")))
        if sid and found.cwd and found.started and found.title:
            break
    found.session_id = sid or path.stem
    found.slug = _slug(path)
    return found


def _slug(path: Path) -> str | None:
    """The file's ``slug``: in its first lines or, once assigned, on its last ones."""
    try:
        with path.open("rb") as fh:
            match = _SLUG.search(fh.read(_HEAD_BYTES))
            if match is None:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - _TAIL_BYTES))
                tail = list(_SLUG.finditer(fh.read()))
                match = tail[-1] if tail else None
    except OSError:
        return None
    return match.group(1).decode("utf-8", "replace") if match else None
