"""Render messages in seed 004's shape as JSON, JSON lines or markdown."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from itertools import repeat, tee
from typing import Any

import orjson

from ..model import Labelled, Message

_SECONDS = orjson.OPT_UTC_Z | orjson.OPT_OMIT_MICROSECONDS


def iso(ts: datetime | None) -> str | None:
    """An aware datetime as ``2026-02-11T10:30:00Z`` (milliseconds kept when present)."""
    if ts is None:
        return None
    if ts.tzinfo is UTC:
        # orjson formats a datetime 3x faster than isoformat() (1.5 us, a tenth of
        # `messages` on a large log); its microseconds are cut to milliseconds.
        if not ts.microsecond:
            return orjson.dumps(ts, option=_SECONDS)[1:-1].decode()
        return orjson.dumps(ts, option=orjson.OPT_UTC_Z)[1:24].decode() + "Z"
    text = ts.isoformat(timespec="milliseconds" if ts.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def message_record(m: Message) -> dict[str, Any]:
    """The API shape of one message (FR2), plus tool fields when they apply."""
    ts = m.timestamp
    rec: dict[str, Any] = {
        "id": m.id,
        "role": m.role,
        "type": m.type,
        "text": m.text,
        "timestamp": None if ts is None else iso(ts),
        "entry_index": m.entry_index,
        "file_index": m.file_index,
    }
    if m.tool_name is not None:
        rec["tool_name"] = m.tool_name
    if m.tool_call_id is not None:
        rec["tool_call_id"] = m.tool_call_id
    if m.tool_input is not None:
        rec["tool_input"] = m.tool_input
    if m.is_error:
        rec["is_error"] = True
    injected, context = injected_of(m)
    if injected is not None:
        rec["injected"] = injected
    if context is not None:
        rec["context"] = context
    return rec


def injected_of(m: Message) -> tuple[str | None, dict[str, str] | None]:
    """How ``m`` is context rather than the user's words, for a viewer to fold it:
    ``(kind, None)`` when the whole message was put there by the harness (an
    environment block, AGENTS.md, a plugin list, an interrupt note: ``meta["injected"]``),
    ``(None, {"kind", "text"})`` when a request came wrapped in context that was taken
    off its text (``meta["injected_context"]``, e.g. an IDE's open files)."""
    kind = m.meta.get("injected") if m.meta else None
    wrapped = m.meta.get("injected_context") if m.meta else None
    context = None
    if isinstance(wrapped, dict) and isinstance(wrapped.get("text"), str):
        context = {"kind": str(wrapped.get("kind") or "context"), "text": wrapped["text"]}
    return (kind if isinstance(kind, str) and kind else None), context


def unzip(pairs: Iterable[Labelled]) -> tuple[Iterator[Message], Iterator[str | None]]:
    """The messages and their labels as two iterators read in step (never held whole)."""
    left, right = tee(pairs)
    return (m for m, _ in left), (lab for _, lab in right)


#: Messages per chunk of :func:`iter_jsonl`: one write per chunk, not per message.
JSONL_BATCH = 256


def iter_jsonl(
    messages: Iterable[Message], labels: Iterable[str | None] | None = None
) -> Iterator[bytes]:
    """One JSON document per line, yielded in chunks of up to :data:`JSONL_BATCH` lines.

    With ``labels`` (one per message, in order) each record carries its ``label``.
    """
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    batch: list[bytes] = []
    for rec in _records(messages, labels):
        batch.append(dumps(rec, option=newline))
        if len(batch) >= JSONL_BATCH:
            yield b"".join(batch)
            batch.clear()
    if batch:
        yield b"".join(batch)


def iter_json(
    header: dict[str, Any],
    messages: Iterable[Message],
    labels: Iterable[str | None] | None = None,
) -> Iterator[bytes]:
    """``{...header, "messages": [...]}``, streamed piece by piece (never built in memory);
    ``labels`` as in `iter_jsonl`."""
    head = orjson.dumps(header)
    yield head[:-1] + (b',"messages":[' if len(header) else b'"messages":[')
    first = True
    for rec in _records(messages, labels):
        yield (b"" if first else b",") + orjson.dumps(rec)
        first = False
    yield b"]}\n"


def _records(
    messages: Iterable[Message], labels: Iterable[str | None] | None
) -> Iterator[dict[str, Any]]:
    if labels is None:
        yield from map(message_record, messages)
        return
    for m, label in zip(messages, labels, strict=True):
        rec = message_record(m)
        rec["label"] = label
        yield rec


_LABEL = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}


def iter_markdown(
    messages: Iterable[Message], labels: Iterable[str | None] | None = None
) -> Iterator[str]:
    """A readable transcript in pieces, one heading per message (``[M#]`` first, with
    ``labels`` as in `iter_jsonl`)."""
    shown = repeat(None) if labels is None else labels
    for m, label in zip(messages, shown, strict=labels is not None):
        role = _LABEL[m.role]
        kind = "" if m.type == "text" else f" · {m.type}"
        if m.tool_name:
            kind += f" `{m.tool_name}`"
        injected, context = injected_of(m)
        if injected is not None:
            kind += f" · context ({injected})"
        ts = iso(m.timestamp) or ""
        cite = f"[{label}] " if label else ""
        yield f"### {cite}{role}{kind} — file {m.file_index} entry {m.entry_index} {ts}\n\n"
        if context is not None:
            quoted = "\n".join("> " + line for line in context["text"].splitlines())
            yield f"> context ({context['kind']}):\n{quoted}\n\n"
        call = None
        if m.tool_input is not None:
            call = orjson.dumps(m.tool_input).decode()
            yield "```json\n" + call + "\n```\n\n"
        # A tool call's text is often its input as JSON again: shown once.
        if m.text and m.text != call:
            yield m.text.rstrip() + "\n\n"
