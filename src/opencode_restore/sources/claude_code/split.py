"""Claude Code files as inspect_scout sees them: split on ``/clear``, merged by ``slug``.

* A ``/clear`` command inside one file ends a conversation: the file becomes
  transcripts ``<sid>-0``, ``<sid>-1``, … (the command line itself is dropped).
* Claude Code starts a new session file (new ``sessionId``, same ``slug``) when a
  plan is carried into a cleared context. The opening conversation of every file
  sharing a slug is one transcript: the earliest file's id, an info event
  "Context reset" between files, and ``meta["session_ids"]`` naming every session.
  Conversations after a ``/clear`` stay on their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from ...diagnostics import WarningSink
from ...model import Session, Timeline, TimelineEvent, TimelineSpan
from .convert import is_clear_command
from .session import read_session

_Content = list[TimelineEvent | TimelineSpan]


def split_transcripts(files: Sequence[Path], sink: WarningSink) -> list[Session]:
    """Each file read on its own, split on ``/clear``, then opening parts merged by slug."""
    parts: list[tuple[Session, int, str]] = []  # (segment, index within its file, source id)
    for path in files:
        whole = read_session([path], sink, with_agents=True)
        pieces = _split_on_clear(whole.timeline.root.content)
        for k, content in enumerate(pieces):
            if not any(isinstance(i, TimelineEvent) and i.message for i in content):
                continue
            seg_id = f"{whole.id}-{k}" if len(pieces) > 1 else whole.id
            parts.append((_segment(whole, seg_id, k, content), k, whole.id))
    groups: dict[str, list[tuple[Session, str]]] = {}
    for seg, k, source in parts:
        slug = seg.meta.get("slug")
        if k == 0 and isinstance(slug, str):
            groups.setdefault(slug, []).append((seg, source))
    out: list[Session] = []
    emitted: set[str] = set()
    for seg, k, _source in parts:
        slug = seg.meta.get("slug")
        members = groups.get(slug, []) if k == 0 and isinstance(slug, str) else []
        if len(members) < 2:
            out.append(seg)
        elif isinstance(slug, str) and slug not in emitted:
            emitted.add(slug)
            out.append(_merge(members))
    return out


def _split_on_clear(content: _Content) -> list[_Content]:
    pieces: list[_Content] = [[]]
    for item in content:
        m = item.message if isinstance(item, TimelineEvent) else None
        if m is not None and m.role == "user" and m.type == "text" and is_clear_command(m.text):
            pieces.append([])
            continue
        pieces[-1].append(item)
    return pieces


def _segment(whole: Session, seg_id: str, k: int, content: _Content) -> Session:
    started = next(
        (i.timestamp for i in content if isinstance(i, TimelineEvent) and i.timestamp), None
    )
    meta = dict(whole.meta)
    meta["segment"] = k
    return Session(
        id=seg_id,
        agent=whole.agent,
        files=list(whole.files),
        timeline=Timeline(_root(seg_id, content), whole.title or ""),
        cwd=whole.cwd,
        title=whole.title,
        model=whole.model,
        started_at=started,
        warnings=list(whole.warnings),
        meta=meta,
    )


def _merge(members: list[tuple[Session, str]]) -> Session:
    members = sorted(members, key=lambda m: _sort_key(m[0].started_at))
    first = members[0][0]
    content: _Content = []
    session_ids: list[str] = []
    files: list[str] = []
    for n, (seg, source) in enumerate(members):
        if n:
            content.append(
                TimelineEvent(
                    f"context-reset-{n}",
                    "info",
                    timestamp=seg.started_at,
                    text=f"Context reset: continued in session {source}",
                )
            )
        content.extend(seg.timeline.root.content)
        if source not in session_ids:
            session_ids.append(source)
        files.extend(f for f in seg.files if f not in files)
    meta = dict(first.meta)
    meta.pop("segment", None)
    meta["session_ids"] = session_ids
    return Session(
        id=first.id,
        agent=first.agent,
        files=files,
        timeline=Timeline(_root(first.id, content), first.title or ""),
        cwd=first.cwd,
        title=first.title,
        model=first.model,
        started_at=first.started_at,
        warnings=[w for seg, _ in members for w in seg.warnings],
        meta=meta,
    )


def _root(span_id: str, content: _Content) -> TimelineSpan:
    return TimelineSpan(span_id, "main", "agent", content=content)


def _sort_key(t: datetime | None) -> tuple[int, str]:
    return (0, t.isoformat()) if t is not None else (1, "")
