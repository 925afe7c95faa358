"""The few fields of a Claude Code line that the first pass needs, decoded cheaply.

``msgspec`` decodes straight into these structs and skips every other field (tool
output, file contents, hook payloads) without building Python objects for it, which
is most of the cost of a large log. A line whose fields have unexpected types is
parsed with orjson instead and the usable fields are kept (``coerce``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

from .convert import SYSTEM_NOISE, injected_reason

#: Entry kinds recorded by the first pass (one byte per entry).
NOISE = 0  # progress, attachment, hook and bookkeeping lines: in the tree, never messages
ASSISTANT = 1
TOOL_RESULT = 2  # a user line that carries tool results
PROMPT = 3  # a user line typed by a person (or a slash command): a rewind starts here
INJECTED = 4  # meta text, reminders, interrupts, compaction summaries
SYSTEM = 5  # compact boundary or another system line worth showing

_RAW_NULL = msgspec.Raw(b"null")


class Block(msgspec.Struct):
    """A content block: only what tells a prompt from a tool result."""

    type: str | None = None
    text: str | None = None


class LineMessage(msgspec.Struct):
    """The API message of a user or assistant line."""

    model: str | None = None
    content: str | list[Block] | None = None


class Data(msgspec.Struct):
    """A progress line's payload header."""

    type: str | None = None
    agentId: str | None = None


class Line(msgspec.Struct):
    """One transcript line, reduced to the fields the first pass reads."""

    type: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    isSidechain: bool | None = None
    isMeta: bool | None = None
    isCompactSummary: bool | None = None
    sessionId: str | None = None
    cwd: str | None = None
    version: str | None = None
    slug: str | None = None
    timestamp: str | None = None
    subtype: str | None = None
    content: str | None = None
    message: LineMessage | None = None
    data: Data | None = None
    toolUseResult: msgspec.Raw = _RAW_NULL
    compactMetadata: msgspec.Raw = _RAW_NULL
    parentToolUseID: str | None = None
    agentId: str | None = None
    summary: str | None = None
    leafUuid: str | None = None
    customTitle: str | None = None


DECODER = msgspec.json.Decoder(Line)
_PLAIN: dict[str, type] = {
    name: (bool if name.startswith("is") else str)
    for name in Line.__struct_fields__
    if name not in ("message", "data", "toolUseResult", "compactMetadata")
}


def coerce(obj: dict[str, Any]) -> Line:
    """A ``Line`` from a parsed object whose fields may have unexpected types."""
    kw: dict[str, Any] = {k: v for k, t in _PLAIN.items() if isinstance(v := obj.get(k), t)}
    message = obj.get("message")
    if isinstance(message, dict):
        model = message.get("model")
        content = message.get("content")
        blocks: str | list[Block] | None = content if isinstance(content, str) else None
        if isinstance(content, list):
            blocks = [_block(b) for b in content]
        kw["message"] = LineMessage(model if isinstance(model, str) else None, blocks)
    data = obj.get("data")
    if isinstance(data, dict):
        dt, agent = data.get("type"), data.get("agentId")
        kw["data"] = Data(
            dt if isinstance(dt, str) else None, agent if isinstance(agent, str) else None
        )
    for key in ("toolUseResult", "compactMetadata"):
        if key in obj:
            kw[key] = msgspec.Raw(orjson.dumps(obj[key]))
    return Line(**kw)


def _block(b: Any) -> Block:
    if isinstance(b, str):
        return Block("text", b)
    if not isinstance(b, dict):
        return Block()
    bt, text = b.get("type"), b.get("text")
    return Block(bt if isinstance(bt, str) else None, text if isinstance(text, str) else None)


def classify(line: Line) -> int:
    """The entry kind of a uuid-bearing line (see the module constants)."""
    typ = line.type
    if typ in ("user", "assistant") and line.message is None:
        return NOISE  # nothing to show; a later copy of the line may have it
    if typ == "assistant":
        return ASSISTANT
    if typ == "user":
        if line.isCompactSummary or line.isMeta:
            return INJECTED
        content = line.message.content if line.message is not None else None
        text: str | None = None
        if isinstance(content, list):
            for block in content:
                if block.type == "tool_result":
                    return TOOL_RESULT
            text = next((b.text or "" for b in content if b.type == "text"), None)
        else:
            text = content
        if text is not None and injected_reason(text) in ("interrupt", "reminder", "notice"):
            return INJECTED
        return PROMPT
    if typ == "system" and (
        line.subtype == "compact_boundary"
        or (line.subtype not in SYSTEM_NOISE and line.content is not None)
    ):
        return SYSTEM
    return NOISE
