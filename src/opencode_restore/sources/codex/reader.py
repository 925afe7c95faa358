"""The Codex reader: format sniffing, message streaming and the session timeline.

Three line formats are read: ``codex exec --json`` output (``exec_json``), and two
rollout formats. The envelope format (Codex 0.3x and later) wraps every line
as ``{"timestamp", "type", "payload"}`` with ``type`` one of ``session_meta``,
``response_item``, ``event_msg``, ``turn_context`` or ``compacted``. The legacy
pre-envelope format starts with a bare ``{"id", "timestamp", ...}`` meta object,
followed by bare response items and ``{"record_type": "state"}`` lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import regex

from ...diagnostics import WarningSink
from ...model import Message, Session, Timeline, TimelineSpan
from ..base import SNIFF_BYTES, Found
from ..chain import ChainLink
from ..discover import Discovery
from . import discover
from .chain import chain_link
from .events import Header
from .exec_json import is_exec_event, iter_exec
from .stream import iter_thread
from .threads import attach_children, events_of

_ENVELOPE_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
# A first line too long for the sniff window (0.1xx builds put the whole system prompt in
# session_meta) is recognized by its opening keys, which Codex always writes in this order.
_ENVELOPE_PREFIX = regex.compile(
    rb'^\s*\{"timestamp":"[^"]*",(?:"ordinal":\d+,)?"type":"(?:session_meta|response_item|'
    rb'event_msg|turn_context|compacted)","payload":\{'
)
_LEGACY_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
    }
)
_ROLLOUT_NAME = regex.compile(r"^rollout-.*\.jsonl$")
_SNIFF_LINES = 20


def _objects(head: bytes) -> tuple[list[Any], bytes]:
    """The parsed complete lines of ``head`` (``None`` for junk) and its first non-blank line."""
    lines = [raw for raw in head.split(b"\n") if raw.strip()]
    first = lines[0] if lines else b""
    if lines and not head.endswith(b"\n"):
        lines = lines[:-1]  # cut off by the sniff window
    out: list[Any] = []
    for raw in lines[:_SNIFF_LINES]:
        if not raw.lstrip().startswith(b"{"):
            out.append(None)  # no object; a failed parse costs an exception
            continue
        try:
            out.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            out.append(None)
    return out, first


def _is_legacy_meta(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and "type" not in obj
        and "payload" not in obj
        and isinstance(obj.get("id"), str)
        and "timestamp" in obj
        and "sessionId" not in obj
    )


def _is_legacy_item(obj: Any) -> bool:
    if not isinstance(obj, dict) or "payload" in obj:
        return False
    if obj.get("record_type") == "state":
        return True
    kind = _kind(obj)
    if kind == "message":
        return "role" in obj and "content" in obj
    return kind in _LEGACY_ITEM_TYPES and ("call_id" in obj or "summary" in obj)


def _kind(obj: dict[str, Any]) -> str | None:
    kind = obj.get("type")
    return kind if isinstance(kind, str) else None


def _is_exec_output(path: Path) -> bool:
    """True when ``path`` starts with a ``codex exec --json`` event."""
    try:
        with path.open("rb") as fh:
            objs, _ = _objects(fh.read(SNIFF_BYTES))
    except OSError:
        return False  # the rollout reader reports the file
    return is_exec_event(objs[0] if objs else None)


class CodexReader(Discovery):
    """Reads OpenAI Codex CLI rollout JSONL (envelope and legacy formats)."""

    name = "codex"
    description = "OpenAI Codex CLI rollout JSONL (~/.codex/sessions/**/rollout-*.jsonl)"

    file_patterns = discover.PATTERNS

    def sniff(self, path: Path, head: bytes) -> float:
        """Confidence that ``head`` starts a Codex rollout file."""
        objs, first = _objects(head)
        lead = objs[0] if objs else None
        if is_exec_event(lead):
            return 0.9  # `codex exec --json`
        if lead is None:
            return 0.9 if _ENVELOPE_PREFIX.match(first) else 0.0
        if isinstance(lead, dict) and _kind(lead) in _ENVELOPE_TYPES:
            if isinstance(lead.get("payload"), dict):
                return 0.99 if lead["type"] == "session_meta" else 0.95
            return 0.0
        if _is_legacy_meta(lead):
            if any(_is_legacy_item(o) for o in objs[1:]):
                return 0.9
            if _ROLLOUT_NAME.match(path.name):
                return 0.6
        return 0.0

    def iter_messages(self, files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
        """Stream the thread's messages across its chain of files, oldest first."""
        if files and _is_exec_output(files[0]):
            return iter_exec(files, sink, Header())
        return iter_thread(files, sink, Header())

    def chain_link(self, path: Path) -> ChainLink:
        """What ``path`` records about its session, to check a chain of files."""
        return chain_link(path)

    def read(self, files: Sequence[Path], sink: WarningSink) -> Session:
        """Read the thread into a session; sub-agent threads become ``agent`` spans."""
        first_warning = len(sink.warnings)
        header = Header()
        exec_output = bool(files) and _is_exec_output(files[0])
        stream = iter_exec if exec_output else iter_thread
        messages = list(stream(files, sink, header))
        session_id = header.id or (files[0].stem if files else "codex")
        root = TimelineSpan(id=session_id, name="codex", span_type="agent")
        root.content = events_of(messages)
        child_files = (
            attach_children(root, session_id, files, sink) if files and not exec_output else []
        )
        meta = dict(header.meta)
        if exec_output:
            meta["source"] = "exec-json"
        if child_files:
            meta["child_files"] = child_files
        if header.parent_thread_id:
            meta["parent_thread_id"] = header.parent_thread_id
        return Session(
            id=session_id,
            agent=self.name,
            files=[str(f) for f in files],
            timeline=Timeline(root=root, name=session_id),
            cwd=header.cwd,
            model=header.model,
            started_at=header.started_at,
            warnings=list(sink.warnings[first_warning:]),
            meta=meta,
        )

    def default_roots(self, home: Path) -> list[Path]:
        """Where the agent writes sessions under ``home`` (see ``discover``)."""
        return discover.default_roots(home)

    def describe(self, path: Path) -> Found | None:
        """What the file's first lines say of its session (see ``discover``)."""
        return discover.describe(path)


READER = CodexReader()
