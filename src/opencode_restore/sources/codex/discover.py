"""Where Codex CLI keeps sessions and what a rollout's first lines say of it.

``$CODEX_HOME`` (default ``~/.codex``): ``sessions/**/rollout-*.jsonl`` and
``archived_sessions/**/rollout-*.jsonl``. The id is the ``session_meta`` one, else
the uuid in the file name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...fields import non_empty, parse_timestamp
from ..base import Found
from ..discover import first_request, head_objects, last_activity

PATTERNS = ("rollout-*.jsonl",)
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def default_roots(home: Path) -> list[Path]:
    """``$CODEX_HOME`` (or ``~/.codex``): its ``sessions`` and ``archived_sessions``."""
    codex = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else None
    base = codex or home / ".codex"
    return [base / "sessions", base / "archived_sessions"]


def describe(path: Path) -> Found:
    """Session id, cwd, start and first typed request from the rollout's first lines."""
    heads = head_objects(path)
    meta = next(heads, None)
    payload = meta.get("payload") if meta and meta.get("type") == "session_meta" else None
    payload = payload if isinstance(payload, dict) else {}
    sid = non_empty(payload.get("id"))
    if sid is None:
        match = _UUID.search(path.name)
        sid = match.group(1) if match else path.stem
    started = parse_timestamp(payload.get("timestamp")) or parse_timestamp(
        (meta or {}).get("timestamp")
    )
    title = first_request(heads, "response_item", "payload")
    cwd = non_empty(payload.get("cwd"))
    return Found("codex", sid, path, cwd, title, started, last_activity(path))
