"""What the formats share for finding sessions on disk: file patterns and cheap head reads.

Each format's own ``discover`` module says where its agent writes sessions and what a
session file's first lines tell (id, cwd, title, times); readers inherit
:class:`Discovery` and delegate to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import regex

from ..diagnostics import WarningSink
from ..fields import parse_timestamp
from ..titles import content_text, request_title
from .base import Found

#: How many lines of a file discovery reads at most.
HEAD_LINES = 40
#: How much of a file's end is searched for its last entry time.
TAIL_BYTES = 256 * 1024
#: The time fields the file-based agents write on their entries (ISO 8601 strings).
_STAMP = regex.compile(rb'"(?:timestamp|lastUpdated)"\s*:\s*"(\d{4}-\d\d-\d\d[T ][^"]{4,40})"')


class Discovery:
    """Discovery defaults for a format with one session per file: they find nothing.

    A reader sets ``file_patterns`` (file name globs searched recursively under a root) and
    overrides ``default_roots`` and ``describe`` where its agent has a place of its own.
    """

    #: File name patterns of session files, searched recursively under a root.
    file_patterns: tuple[str, ...] = ()

    def default_roots(self, home: Path) -> list[Path]:
        """Where the agent writes sessions under ``home``: none by default."""
        return []

    def session_files(self, root: Path) -> list[Path]:
        """The files under ``root`` matching ``file_patterns``, sorted."""
        return files_matching(root, self.file_patterns)

    def describe(self, path: Path) -> Found | None:
        """What a session file says of itself: nothing by default."""
        return None

    def list_sessions(self, path: Path, sink: WarningSink) -> list[Found]:
        """The one session of a session file, as :meth:`describe` tells it."""
        found = self.describe(path)
        return [found] if found is not None else []


def files_matching(root: Path, patterns: Sequence[str]) -> list[Path]:
    """Regular files under ``root`` (recursively) whose names match any of ``patterns``."""
    out: set[Path] = set()
    for pattern in patterns:
        out.update(p for p in root.rglob(pattern) if p.is_file())
    return sorted(out)


def head_objects(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects on the first lines of a JSONL file (bad lines skipped)."""
    try:
        with path.open("rb") as fh:
            for k, raw in enumerate(fh):
                if k >= HEAD_LINES:
                    return
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict):
                    yield obj
    except OSError:
        return


def mtime(path: Path) -> datetime | None:
    """The file's last modification, as an aware UTC time (None when it is gone)."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None


def last_activity(path: Path) -> datetime | None:
    """When the session was last active: the newest entry time in the file's tail, else the
    file's mtime (a copied or restored file's mtime is the copy's time, not the session's)."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read()
    except OSError:
        return None
    stamps = (parse_timestamp(m.group(1).decode("ascii", "replace")) for m in _STAMP.finditer(tail))
    return max((t for t in stamps if t is not None), default=None) or mtime(path)


def first_request(objs: Iterator[dict[str, Any]], kind: str, key: str) -> str | None:
    """The title of the first typed user request among entries ``{"type": kind, key: msg}``."""
    for obj in objs:
        message = obj.get(key)
        if obj.get("type") != kind or not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            title = request_title(content_text(message.get("content")))
            if title:
                return title
    return None
