"""Timeline building, and sub-agent threads found next to their parent's rollout file.

A child thread's ``session_meta.payload.source.subagent.thread_spawn.parent_thread_id``
names its parent. Children are looked for next to the parent file (its folder and the
folders right below it: Codex writes both into the same day folder), read as their own
threads, and attached as ``agent`` spans right after the parent's spawn call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain, islice
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...model import EventKind, Message, TimelineEvent, TimelineSpan
from .events import Header, parent_spawn
from .stream import iter_thread

#: Limits that keep a scan of a big sessions folder cheap.
_MAX_SCANNED_FILES = 5000
_MAX_META_BYTES = 4 * 1024 * 1024
_MAX_DEPTH = 5


def events_of(messages: Iterable[Message]) -> list[TimelineEvent | TimelineSpan]:
    """Message events in order; a compaction marker is a ``compaction`` event (message kept)."""
    out: list[TimelineEvent | TimelineSpan] = []
    for m in messages:
        kind: EventKind = "compaction" if m.compaction is not None else "message"
        out.append(
            TimelineEvent(
                uuid=m.id,
                kind=kind,
                message=m,
                compaction=m.compaction,
                timestamp=m.timestamp,
            )
        )
    return out


def first_meta(path: Path) -> dict[str, Any] | None:
    """The ``session_meta`` payload on the first line of ``path``, if it has one."""
    try:
        with path.open("rb") as fh:
            raw = fh.readline(_MAX_META_BYTES)
    except OSError:
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or obj.get("type") != "session_meta":
        return None
    payload = obj.get("payload")
    return payload if isinstance(payload, dict) else None


def _candidates(root: Path) -> list[Path]:
    """``*.jsonl`` files in ``root`` and one folder below, at most ``_MAX_SCANNED_FILES``.

    Not a full recursive walk: a log passed from a big folder (a home directory) must not
    make the reader crawl it. Codex keeps a parent and its children in one day folder.
    """
    found = islice(chain(root.glob("*.jsonl"), root.glob("*/*.jsonl")), _MAX_SCANNED_FILES)
    try:
        return sorted(found)
    except OSError:
        return []


def find_children(parent_id: str, files: Sequence[Path]) -> list[Path]:
    """Rollout files next to ``files`` whose thread was spawned by ``parent_id``."""
    own = {p.resolve() for p in files}
    found: list[Path] = []
    for root in dict.fromkeys(p.parent for p in files):
        for path in _candidates(root):
            if path.resolve() in own or not path.is_file():
                continue
            meta = first_meta(path)
            spawn = parent_spawn(meta) if meta is not None else None
            if spawn is not None and spawn.get("parent_thread_id") == parent_id:
                found.append(path)
    return found


def _spawn_name(content: list[TimelineEvent | TimelineSpan], call_id: str | None) -> str | None:
    for item in content:
        m = item.message if isinstance(item, TimelineEvent) else None
        if m is not None and call_id and m.tool_call_id == call_id and m.type == "tool_use":
            for key in ("task_name", "agent_type", "name"):
                value = (m.tool_input or {}).get(key)
                if isinstance(value, str) and value:
                    return value
    return None


def _insert_after_spawn(
    content: list[TimelineEvent | TimelineSpan], span: TimelineSpan, call_id: str | None
) -> None:
    for i, item in enumerate(content):
        m = item.message if isinstance(item, TimelineEvent) else None
        if m is not None and call_id and m.tool_call_id == call_id and m.type == "tool_use":
            content.insert(i + 1, span)
            return
    content.append(span)


def attach_children(
    span: TimelineSpan,
    thread_id: str,
    files: Sequence[Path],
    sink: WarningSink,
    visited: set[str] | None = None,
    depth: int = 0,
) -> list[str]:
    """Read the child threads of ``thread_id`` into ``agent`` spans inside ``span``.

    Returns the files read (grandchildren included). Cycles and very deep trees stop.
    """
    visited = visited if visited is not None else {thread_id}
    read: list[str] = []
    if depth >= _MAX_DEPTH:
        return read
    for path in find_children(thread_id, files):
        header = Header()
        messages = list(iter_thread([path], sink, header))
        child_id = header.id or path.stem
        if child_id in visited:
            continue
        visited.add(child_id)
        name = header.agent_name or _spawn_name(span.content, header.spawn_call_id) or "subagent"
        child = TimelineSpan(
            id=child_id,
            name=name,
            span_type="agent",
            content=events_of(messages),
            meta={
                "file": str(path),
                "parent_thread_id": header.parent_thread_id,
                "spawn_call_id": header.spawn_call_id,
                # The unified link to the call that started it (as the other readers set).
                "tool_use_id": header.spawn_call_id,
                "cwd": header.cwd,
                "model": header.model,
            },
        )
        read.append(str(path))
        read.extend(attach_children(child, child_id, [path], sink, visited, depth + 1))
        _insert_after_spawn(span.content, child, header.spawn_call_id)
    return read
