"""Claude Code sessions exported from the web (``{"loglines": [...]}``).

Claude Code on the web hands a session out as one JSON document whose ``loglines`` are
the transcript lines a local session writes to its JSONL file (simonw's
claude-code-transcripts reads it this way). The lines are read in order, each converted
as a transcript line; a line's ``entry_index`` is its 1-based place in ``loglines``.
Side-chain lines (a sub-agent's own conversation) are not part of the main one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...diagnostics import WarningSink
from ...fields import parse_timestamp
from ...model import Message, Session, Timeline, TimelineEvent, TimelineSpan
from ..base import load_json
from .convert import Converter, attach_summaries

_HEAD = re.compile(rb'^\s*\{\s*"loglines"\s*:\s*\[')


def is_web_head(head: bytes) -> bool:
    """True when ``head`` starts a ``{"loglines": [...]}`` export."""
    return _HEAD.match(head) is not None


def _loglines(
    files: Sequence[Path], sink: WarningSink
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for fi, path in enumerate(files):
        doc = load_json(path, sink)
        lines = doc.get("loglines") if isinstance(doc, dict) else None
        if not isinstance(lines, list):
            if doc is not None:
                sink.warn(path, 0, "no 'loglines' list; not a Claude Code web export")
            continue
        for k, obj in enumerate(lines, start=1):
            if isinstance(obj, dict):
                yield fi, k, obj
            else:
                sink.warn(path, 0, f"logline {k} is not an object; skipped")


def _messages(files: Sequence[Path], sink: WarningSink, facts: dict[str, str]) -> Iterator[Message]:
    conv = Converter()
    for fi, k, obj in _loglines(files, sink):
        for key, field in (("session_id", "sessionId"), ("cwd", "cwd"), ("started", "timestamp")):
            value = obj.get(field)
            if key not in facts and isinstance(value, str) and value:
                facts[key] = value
        if obj.get("isSidechain") is True:
            continue
        uid = obj.get("uuid")
        yield from conv.convert(obj, uid if isinstance(uid, str) and uid else f"{fi}:{k}", fi, k)


def iter_web(files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
    """The main conversation of web exports, in order."""
    return attach_summaries(_messages(files, sink, {}))


def read_web(files: Sequence[Path], sink: WarningSink) -> Session:
    """The session of web exports (one span: the main conversation)."""
    first_warning = len(sink.warnings)
    facts: dict[str, str] = {}
    messages = list(attach_summaries(_messages(files, sink, facts)))
    sid = facts.get("session_id") or (files[0].stem if files else "claude-code")
    content: list[TimelineEvent | TimelineSpan] = [
        TimelineEvent(
            m.id,
            "compaction" if m.compaction is not None else "message",
            message=m,
            compaction=m.compaction,
            timestamp=m.timestamp,
        )
        for m in messages
    ]
    return Session(
        id=sid,
        agent="claude-code",
        files=[str(p) for p in files],
        timeline=Timeline(TimelineSpan(sid, "main", "agent", content)),
        cwd=facts.get("cwd"),
        model=next((m.model for m in messages if m.model), None),
        started_at=parse_timestamp(facts.get("started")),
        warnings=list(sink.warnings[first_warning:]),
        meta={"source": "web-export"},
    )
