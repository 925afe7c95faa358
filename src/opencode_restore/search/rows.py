"""What one session puts in the index: a row per labelled message, tool call, tool result,
file path and command, and one per section of its latest restoration.

A message's rows are made from the raw message: ``message_rows`` redacts each string a row
takes, as ``redact_message`` would (a tool input's values with their names in view), and
no other (a tool call's JSON text when its input is there, ``meta``): a build is mostly
redaction. A restoration was written by a restore that redacted its own output; its text
is redacted again anyway, as ``sessions list`` does a stored title.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..model import Message
from ..redact import redact, redact_value
from ..store.db import iso_utc
from ..timeline.numbering import cited_labels

#: The most of a message's text that is indexed (a pasted log must not fill the index).
MESSAGE_CAP = 16_000
#: The most of a tool call's input, or of a tool result, that is indexed: its head.
TOOL_CAP = 2_000
#: The row kinds; ``kind:`` filters name them.
KINDS = frozenset(
    {"message", "tool", "error", "command", "file", "decision", "summary", "thinking"}
)
#: Where the agents' file tools name their file (their input's key).
PATH_KEYS = ("file_path", "path", "filePath", "absolute_path", "filename", "notebook_path")
#: Where the agents' shell tools name their command.
COMMAND_KEYS = ("command", "cmd")


@dataclass(frozen=True, slots=True)
class Row:
    """One indexed text: ``label`` is the message's ``[M#]`` number (None: a restoration
    section that cites nothing), ``time`` an ISO text or None."""

    label: int | None
    kind: str
    role: str | None
    time: str | None
    text: str


def _command(inp: dict[str, Any]) -> str | None:
    for key in COMMAND_KEYS:
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return None


def _path(inp: dict[str, Any]) -> str | None:
    for key in PATH_KEYS:
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def message_rows(m: Message, label: int, clean: Callable[[str], str]) -> Iterator[Row]:
    """The rows of raw message ``m``, labelled ``label`` (the number of its ``[M#]``),
    each string they take passed through ``clean`` (a ``Redactor.redact``) first; ``m``
    is left as it is."""
    time = iso_utc(m.timestamp) if m.timestamp is not None else None
    if m.type == "tool_use":
        inp = redact_value(m.tool_input, clean) if m.tool_input else {}
        command = _command(inp)
        # Values as they read (a command, a file's content), not JSON-escaped on one line.
        body = "\n".join(
            v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in inp.values()
        )
        body = (body or clean(m.text))[:TOOL_CAP]
        name = m.tool_name or "tool"
        yield Row(label, "command" if command else "tool", m.role, time, f"{name} {body}")
        path = _path(inp)
        if path:
            yield Row(label, "file", m.role, time, path)
        return
    if m.type == "tool_result":
        kind = "error" if m.is_error else "tool"
        yield Row(label, kind, m.role, time, clean(m.text)[:TOOL_CAP])
        return
    if m.type == "file_changes":
        for line in clean(m.text).splitlines():
            if line.strip():
                yield Row(label, "file", m.role, time, line.strip())
        return
    kind = "thinking" if m.type == "thinking" else ("error" if m.is_error else "message")
    text = clean(m.text)
    if m.compaction is not None and m.compaction.summary:
        text = f"{text}\n{clean(m.compaction.summary)}".strip()
    if text.strip():
        yield Row(label, kind, m.role, time, text[:MESSAGE_CAP])


def _first_label(text: str) -> int | None:
    cited = cited_labels(text, limit=1)
    return int(cited[0][1:]) if cited else None


def _texts(value: Any) -> Iterator[str]:
    """Every non-empty string in ``value`` (a section: a string, a list, a dict)."""
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)


def _items(value: Any) -> list[Any]:
    """A section's items: a list's elements, a group of lists' (progress), else itself."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return [item for v in value.values() for item in v]
    return [value]


def restoration_rows(summary_json: Any, created_at: str | None) -> Iterator[Row]:
    """The rows of a stored restoration (``Restoration.model_dump``): one per item of
    each section of its SESSION SUMMARY, decisions as ``decision``, the rest ``summary``."""
    summary = summary_json.get("summary") if isinstance(summary_json, dict) else None
    if not isinstance(summary, dict):
        return
    for section, value in summary.items():
        if section in ("stood_in", "rejected_candidates", "ignored_rejections"):
            continue  # the synthesizer's bookkeeping, not the session's story
        kind = "decision" if section == "key_decisions" else "summary"
        for item in _items(value):
            text = " — ".join(_texts(item))
            if text:
                clean = redact(text)[0]
                yield Row(_first_label(clean), kind, None, created_at, clean[:MESSAGE_CAP])
