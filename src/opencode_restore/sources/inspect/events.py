"""Inspect event and ChatMessage dicts converted into the unified model.

Inspect writes a conversation as ``ChatMessage`` dicts (``id``, ``role``, ``content``
as a string or a list of typed parts, ``tool_calls``, ``tool_call_id``, ``function``,
``error``) and a run as event dicts discriminated by ``event``. Everything here is
tolerant: a missing or oddly typed field becomes an empty value, never an exception.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, cast, get_args

import orjson

from ...fields import non_empty, parse_timestamp
from ...model import (
    Compaction,
    CompactionKind,
    Message,
    MessageType,
    ModelCall,
    Role,
    TimelineEvent,
    ToolCall,
    Usage,
)
from ..base import text_of as _text_of
from ..base import token_count

_ROLES: frozenset[str] = frozenset(get_args(Role))
_COMPACTION_KINDS: frozenset[str] = frozenset(get_args(CompactionKind))
_MEDIA = ("image", "audio", "video", "document")
#: Longest detail kept in an info event's text (sandbox output can be megabytes).
_DETAIL_CHARS = 300


def text_of(value: Any) -> str:
    """``base.text_of`` that also survives values orjson cannot encode (huge integers)."""
    try:
        return _text_of(value)
    except TypeError:
        return str(value)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    return {} if value is None else {"arguments": value}


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:  # e.g. a dict with non-string keys
        return str(value)


def _part_block(part: Any) -> tuple[MessageType, str, dict[str, Any]]:
    """One content part as (type, text, extra Message fields)."""
    if not isinstance(part, dict):
        return "text", text_of(part), {}
    kind = part.get("type")
    if kind == "reasoning":
        redacted = bool(part.get("redacted"))
        text = non_empty(part.get("summary")) if redacted else None
        text = text or non_empty(part.get("reasoning")) or non_empty(part.get("summary")) or ""
        return "thinking", text, {"meta": {"redacted": True}} if redacted else {}
    if kind in _MEDIA:
        return "text", f"<{kind} />", {"meta": {"media": kind}}
    if kind == "tool_use":
        extra = {
            "tool_name": non_empty(part.get("name")),
            "tool_call_id": non_empty(part.get("id")),
            "tool_input": _arguments(part.get("arguments")),
        }
        return "tool_use", text_of(part.get("result")), extra
    if kind == "data":
        return "text", _json(part.get("data")), {"meta": {"data": True}}
    return "text", text_of(part), {}


def _blocks(msg: dict[str, Any], role: str) -> list[tuple[MessageType, str, dict[str, Any]]]:
    """The content blocks of one ChatMessage, in order."""
    content = msg.get("content")
    tool_calls = [c for c in _list(msg.get("tool_calls")) if isinstance(c, dict)]
    if role == "tool":
        error = msg.get("error")
        text = text_of(content)
        if not text and isinstance(error, dict):
            text = text_of(error.get("message"))
        extra: dict[str, Any] = {
            "tool_call_id": non_empty(msg.get("tool_call_id")),
            "tool_name": non_empty(msg.get("function")),
            "is_error": bool(error),
        }
        if error:
            extra["meta"] = {"error": error}
        return [("tool_result", text, extra)]
    blocks: list[tuple[MessageType, str, dict[str, Any]]] = []
    if isinstance(content, list):
        blocks = [_part_block(p) for p in content]
    elif content is not None and (content != "" or not tool_calls):
        blocks = [("text", text_of(content), {})]
    for call in tool_calls:
        extra = {
            "tool_name": non_empty(call.get("function")),
            "tool_call_id": non_empty(call.get("id")),
            "tool_input": _arguments(call.get("arguments")),
        }
        blocks.append(("tool_use", "", extra))
    return blocks or [("text", "", {})]


def chat_messages_to_messages(
    messages: Iterable[Any],
    *,
    file_index: int = 0,
    id_prefix: str | None = None,
    start_index: int = 1,
    timestamp: datetime | None = None,
) -> list[Message]:
    """Convert Inspect ChatMessage dicts into block-level ``Message`` records.

    Each content block becomes one ``Message``: reasoning becomes ``thinking``,
    assistant ``tool_calls`` become ``tool_use`` (``tool_input`` = arguments), a tool
    message becomes one ``tool_result`` (``is_error`` when it carries an ``error``).
    The first block keeps the ChatMessage ``id`` (so trim-compaction id matching
    works); further blocks get ``"<id>#1"``, ``"<id>#2"``... All blocks of one
    ChatMessage share ``group``. A message without an id gets
    ``"{id_prefix}{entry_index}"`` (default prefix ``"{file_index}:"``). Entries that
    are not objects or have an unknown role are skipped.
    """
    prefix = f"{file_index}:" if id_prefix is None else id_prefix
    out: list[Message] = []
    for entry_index, msg in enumerate(messages, start_index):
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            continue
        mid = non_empty(msg.get("id")) or f"{prefix}{entry_index}"
        when = parse_timestamp(msg.get("timestamp")) or timestamp
        meta: dict[str, Any] = {}
        if non_empty(msg.get("source")):
            meta["source"] = msg["source"]
        for k, (kind, text, extra) in enumerate(_blocks(msg, role)):
            block_meta = {**meta, **extra.pop("meta", {})}
            out.append(
                Message(
                    id=mid if k == 0 else f"{mid}#{k}",
                    role=cast(Role, role),
                    type=kind,
                    text=text,
                    timestamp=when,
                    file_index=file_index,
                    entry_index=entry_index,
                    group=mid,
                    model=non_empty(msg.get("model")),
                    meta=block_meta,
                    **extra,
                )
            )
    return out


def usage_of(value: Any) -> Usage | None:
    """An Inspect ``ModelUsage`` dict as ``Usage`` (cache tokens kept apart)."""
    if not isinstance(value, dict):
        return None
    return Usage(
        input=token_count(value.get("input_tokens")),
        output=token_count(value.get("output_tokens")),
        cache_read=token_count(value.get("input_tokens_cache_read")),
        cache_write=token_count(value.get("input_tokens_cache_write")),
    )


def output_message(event: dict[str, Any]) -> dict[str, Any] | None:
    """The first choice's message of a model event, with ``role`` defaulted."""
    choices = _list(_dict(event.get("output")).get("choices"))
    if not choices or not isinstance(choices[0], dict):
        return None
    msg = choices[0].get("message")
    if not isinstance(msg, dict):
        return None
    return msg if "role" in msg else {**msg, "role": "assistant"}


def _model_call(event: dict[str, Any], uuid: str, when: datetime | None) -> ModelCall:
    output = _dict(event.get("output"))
    out_msg = output_message(event)
    usage = usage_of(output.get("usage"))
    out_blocks = chat_messages_to_messages(
        [out_msg] if out_msg else [], id_prefix=f"{uuid}:out:", timestamp=when
    )
    if out_blocks and usage is not None:
        out_blocks[0].usage = usage
    return ModelCall(
        input=chat_messages_to_messages(_list(event.get("input")), id_prefix=f"{uuid}:in:"),
        output=out_blocks,
        model=non_empty(event.get("model")) or non_empty(output.get("model")),
        usage=usage,
    )


def _tool_call(event: dict[str, Any]) -> ToolCall:
    error = event.get("error")
    message = _dict(error).get("message") if isinstance(error, dict) else error
    return ToolCall(
        id=str(event.get("id") or ""),
        function=str(event.get("function") or ""),
        arguments=_arguments(event.get("arguments")),
        result=text_of(event.get("result")),
        error=text_of(message) if error else None,
    )


def _compaction(event: dict[str, Any]) -> Compaction:
    kind = event.get("type") if isinstance(event.get("type"), str) else None
    before, after = event.get("tokens_before"), event.get("tokens_after")
    return Compaction(
        kind=cast(CompactionKind, kind if kind in _COMPACTION_KINDS else "summary"),
        tokens_before=before if isinstance(before, int) else None,
        tokens_after=after if isinstance(after, int) else None,
    )


def _detail(event: dict[str, Any]) -> str:
    """A short human description of a non-conversation event."""
    kind = event.get("event")
    if kind == "span_begin":
        detail = " ".join(
            s for s in (non_empty(event.get("type")), non_empty(event.get("name"))) if s
        )
    elif kind == "span_end":
        detail = text_of(event.get("id"))
    elif kind == "info":
        data = event.get("data")
        detail = " ".join(s for s in (non_empty(event.get("source")), non_empty(data)) if s)
        if data is not None and not isinstance(data, str):
            detail = f"{detail} {_json(data)}".strip()
    elif kind == "error":
        detail = text_of(_dict(event.get("error")).get("message"))
    elif kind == "score":
        detail = text_of(_dict(event.get("score")).get("value"))
    elif kind == "logger":
        detail = text_of(_dict(event.get("message")).get("message"))
    elif kind == "sandbox":
        detail = " ".join(text_of(event.get(k)) for k in ("action", "cmd", "file") if event.get(k))
    elif kind == "branch":
        detail = f"from {text_of(event.get('from_anchor'))}"
    else:
        detail = text_of(event.get("message") or event.get("input") or "")
    return detail[:_DETAIL_CHARS]


def to_timeline_event(event: dict[str, Any], uuid: str) -> TimelineEvent:
    """Wrap one Inspect event dict as a ``TimelineEvent``.

    ``model`` events carry a ``ModelCall``, ``tool`` events a ``ToolCall``,
    ``compaction`` events a ``Compaction``; every other event becomes ``info`` whose
    text starts with the Inspect event name (``"sandbox: exec ls"``).
    """
    kind = str(event.get("event") or "unknown")
    when = parse_timestamp(event.get("timestamp"))
    if kind == "model":
        return TimelineEvent(uuid, "model", model=_model_call(event, uuid, when), timestamp=when)
    if kind == "tool":
        return TimelineEvent(uuid, "tool", tool=_tool_call(event), timestamp=when)
    if kind == "compaction":
        compaction = _compaction(event)
        text = f"compaction: {compaction.kind}"
        return TimelineEvent(uuid, "compaction", compaction=compaction, timestamp=when, text=text)
    detail = _detail(event)
    return TimelineEvent(uuid, "info", timestamp=when, text=f"{kind}: {detail}" if detail else kind)
