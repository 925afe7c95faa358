"""Claude Code's headless output: ``claude -p --output-format stream-json --verbose``.

One JSON object per line, as Claude Code prints them (users keep these from CI runs):
``system`` lines (``init`` with ``cwd``, ``model`` and ``session_id``; hook notices;
``compact_boundary``), ``assistant`` and ``user`` lines that carry the same Anthropic
API ``message`` as a transcript line (with ``session_id`` and ``parent_tool_use_id``
instead of ``sessionId`` and ``parentUuid``), optional ``stream_event`` deltas, and a
closing ``result`` line (final text, cost, usage). The prompt given to ``-p`` is not
printed unless ``--replay-user-messages`` was used, so such a run has no user request.

Lines with a ``parent_tool_use_id`` belong to a sub-agent: they become an ``agent``
span right after the message holding that tool call. A chain of streams (one per
``--continue`` run) reads as one session.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...model import EventKind, Message, Session, Timeline, TimelineEvent, TimelineSpan
from ..base import iter_json_lines
from .convert import Converter, attach_summaries

#: Line types of the stream; ``stream_event`` (partial deltas) repeats what the
#: ``assistant`` lines say in full, and ``result`` only closes the run.
_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event"})
_MESSAGE_TYPES = frozenset({"assistant", "user", "system"})


def is_stream_line(obj: Any) -> bool:
    """True for a line only the headless stream writes (``session_id``, never ``sessionId``)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        return False
    if obj["type"] not in _TYPES:
        return False
    if "sessionId" in obj or "parentUuid" in obj or not isinstance(obj.get("session_id"), str):
        return False
    typ = obj["type"]
    if typ in ("assistant", "user"):
        return isinstance(obj.get("message"), dict) and "parent_tool_use_id" in obj
    if typ == "system":
        return isinstance(obj.get("subtype"), str)
    return True


def is_stream_head(head: bytes) -> bool:
    """True when the first complete lines of ``head`` are stream-json lines."""
    lines = head.split(b"\n")[:-1] if not head.endswith(b"\n") else head.split(b"\n")
    for raw in lines[:50]:
        if not raw.lstrip().startswith(b"{"):
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        return is_stream_line(obj)
    return False


class _Run:
    """The session facts a stream states, gathered while its lines are read."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.model: str | None = None
        self.version: str | None = None
        self.results: list[dict[str, Any]] = []

    def note(self, obj: dict[str, Any], path: Path, line: int, sink: WarningSink) -> None:
        sid = obj.get("session_id")
        if isinstance(sid, str):
            if self.session_id is None:
                self.session_id = sid
            elif sid != self.session_id and obj.get("type") == "system":
                sink.warn(path, line, f"session_id {sid!r} differs from {self.session_id!r}")
        if obj.get("type") == "system" and obj.get("subtype") == "init":
            for attr, key in (
                ("cwd", "cwd"),
                ("model", "model"),
                ("version", "claude_code_version"),
            ):
                value = obj.get(key)
                if isinstance(value, str) and getattr(self, attr) is None:
                    setattr(self, attr, value)
        elif obj.get("type") == "result":
            self.results.append(obj)


def _lines(
    files: Sequence[Path], sink: WarningSink, run: _Run
) -> Iterator[tuple[str | None, Message]]:
    """``(parent tool call id, message)`` for every message of the chain, in order."""
    conv = Converter()
    for fi, path in enumerate(files):
        for line, obj in iter_json_lines(path, sink):
            run.note(obj, path, line, sink)
            typ = obj.get("type")
            typ = typ if isinstance(typ, str) else repr(typ)
            if typ not in _MESSAGE_TYPES:
                if typ not in _TYPES:
                    sink.warn(path, line, f"unknown stream line type {typ!r}; skipped")
                continue
            uid = obj.get("uuid")
            uid = uid if isinstance(uid, str) and uid else f"{fi}:{line}"
            parent = obj.get("parent_tool_use_id")
            for m in conv.convert(obj, uid, fi, line):
                yield (parent if isinstance(parent, str) else None), m


def iter_stream(files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
    """The main conversation of a chain of stream-json files (sub-agents left out)."""
    return attach_summaries(m for parent, m in _lines(files, sink, _Run()) if parent is None)


def _event(m: Message) -> TimelineEvent:
    kind: EventKind = "compaction" if m.compaction is not None else "message"
    return TimelineEvent(m.id, kind, message=m, compaction=m.compaction, timestamp=m.timestamp)


def read_stream(files: Sequence[Path], sink: WarningSink) -> Session:
    """The session of a chain of stream-json files; sub-agent lines become agent spans."""
    first_warning = len(sink.warnings)
    run = _Run()
    main: list[Message] = []
    agents: dict[str, list[Message]] = {}
    for parent, m in _lines(files, sink, run):
        (main if parent is None else agents.setdefault(parent, [])).append(m)
    sid = run.session_id or (files[0].stem if files else "claude-code")
    content: list[TimelineEvent | TimelineSpan] = []
    for m in attach_summaries(main):
        content.append(_event(m))
        if m.type == "tool_use" and m.tool_call_id in agents:
            content.append(_agent_span(m, agents.pop(m.tool_call_id)))
    # A sub-agent whose starting call is not in the stream still keeps its messages.
    content.extend(_agent_span(None, msgs, call_id) for call_id, msgs in agents.items())
    costs = [r.get("total_cost_usd") for r in run.results]
    meta: dict[str, Any] = {"source": "stream-json", "runs": len(run.results)}
    if run.version:
        meta["version"] = run.version
    if costs and all(isinstance(c, (int, float)) for c in costs):
        meta["reported_cost_usd"] = sum(costs)
    return Session(
        id=sid,
        agent="claude-code",
        files=[str(p) for p in files],
        timeline=Timeline(TimelineSpan(sid, "main", "agent", content)),
        cwd=run.cwd,
        model=run.model,
        warnings=list(sink.warnings[first_warning:]),
        meta=meta,
    )


def _agent_span(call: Message | None, messages: list[Message], call_id: str = "") -> TimelineSpan:
    link = call.tool_call_id if call is not None and call.tool_call_id else call_id
    name = "agent"
    if call is not None and call.tool_input:
        desc = call.tool_input.get("description") or call.tool_input.get("subagent_type")
        name = desc if isinstance(desc, str) and desc else name
    return TimelineSpan(
        f"agent@{link}",
        name,
        "agent",
        [_event(m) for m in attach_summaries(messages)],
        meta={"tool_use_id": link},
    )
