"""One Codex rollout payload becomes one unified ``Message`` (or nothing).

Pure functions, no state: the stream (``stream.py``) decides which payloads to keep.
Only reasoning *summaries* are ever turned into text: ``encrypted_content`` and raw
``reasoning_text`` content are never read.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import regex

from ...fields import non_empty
from ...model import Compaction, Message, MessageType, Role, Usage
from ..base import loads_capped, token_count
from ..rejections import mark_rejection


@dataclass(slots=True, frozen=True)
class Where:
    """Where a payload was read: chain file, 1-based line, line timestamp, current model."""

    file_index: int
    line: int
    timestamp: datetime | None
    model: str | None = None

    @property
    def ref(self) -> str:
        """The positional message id ``"{file_index}:{line}"``."""
        return f"{self.file_index}:{self.line}"


# Text Codex injects into the conversation as "user" messages; none of it was typed by a
# person. The kind each is marked with (``meta["injected"]``): a tag's name, or these.
_INJECTED_PREFIXES = {
    "<environment_context>": "environment_context",
    "<user_instructions>": "instructions",
    "<turn_aborted>": "interrupt",
    "<user_shell_command>": "user_shell_command",
    "<INSTRUCTIONS>": "instructions",
    "<skills_instructions>": "instructions",
    "<permissions instructions>": "instructions",
    "<collaboration_mode>": "collaboration_mode",
    "<subagent_notification>": "notice",
    "<personality_spec>": "instructions",
    "<model_switch>": "model_switch",
    "# AGENTS.md instructions": "instructions",
}
# The preamble Codex puts before a compaction summary it hands back to the model.
_SUMMARY_PREAMBLE = "Another language model started to solve this problem"
# A message that is one XML-ish element from start to end is harness text (future tags too).
_WRAPPED = regex.compile(r"^\s*<([A-Za-z_][\w -]{0,60})>.*</\1>\s*$", regex.DOTALL)
# The IDE extension (and Desktop) put what the editor shows before the request:
# ``# Context from my IDE setup:`` (active file, open tabs, selection) or ``# Files
# mentioned by the user:``, then ``## My request for Codex:`` and the request itself.
_IDE_CONTEXT = ("# Context from my IDE setup:", "# Files mentioned by the user:")
_IDE_REQUEST = regex.compile(r"^## My request for Codex:[ \t]*(?:\r?\n)?", regex.MULTILINE)
_EXIT_CODE = regex.compile(
    r"^(?:Process exited with code|Exit code:)\s*(-?\d+)\s*$", regex.MULTILINE
)
_HEADER_LINES = 6
_IMAGE = "<image />"

TOOL_CALL_TYPES = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
TOOL_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})


def content_text(content: Any) -> str:
    """Text of a Responses API content value: a string or a list of content items."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            kind = item.get("type")
            text = item.get("text")
            if isinstance(text, str):
                parts.append(text)
            elif isinstance(item.get("refusal"), str):
                parts.append(item["refusal"])
            elif kind in ("input_image", "image", "Image"):
                parts.append(_IMAGE)
    return "\n".join(parts)


def dedupe_key(text: str) -> str:
    """Text normalized for matching an event copy with its response item (images ignored)."""
    return " ".join(text.replace(_IMAGE, " ").split())


def _text_kind(text: str) -> str | None:
    stripped = text.lstrip()
    if stripped.startswith(_SUMMARY_PREAMBLE):
        return "compaction_summary"
    for prefix, kind in _INJECTED_PREFIXES.items():
        if stripped.startswith(prefix):
            return kind
    wrapped = _WRAPPED.match(stripped)
    if wrapped:
        return str(wrapped.group(1)).strip().lower().replace(" ", "_")
    if stripped.startswith(_IDE_CONTEXT) and not _IDE_REQUEST.search(stripped):
        return "ide_context"  # the editor's context with no request after it
    return None


def injected_kind(text: str, payload: dict[str, Any] | None = None) -> str | None:
    """Why a user-role text was put there by the harness (``environment_context``,
    ``instructions``, ``interrupt``, a tag's name...), or ``None`` when a person typed it.

    A message of several content items (Codex Desktop's first one: the plugin list, the
    AGENTS.md text and the environment) is injected when every item is.
    """
    if payload is not None:
        passthrough = payload.get("internal_chat_message_metadata_passthrough")
        if isinstance(passthrough, dict):
            kinds = passthrough.get("content_item_kinds")
            if isinstance(kinds, list) and kinds:
                if any(isinstance(k, str) and k.startswith("user.") for k in kinds):
                    return None
                first = kinds[0]
                return first if isinstance(first, str) and first else "harness"
        content = payload.get("content")
        if isinstance(content, list):
            texts = [
                item["text"]
                for item in content
                if isinstance(item, dict) and isinstance(item.get("text"), str)
            ]
            if len(texts) > 1:
                found = [_text_kind(t) for t in texts if t.strip()]
                # Every item the harness's, or one a person typed among them.
                return found[0] if found and all(found) else None
    return _text_kind(text)


def is_injected(text: str, payload: dict[str, Any] | None = None) -> bool:
    """True when a user-role text was put there by the harness, not typed by a person."""
    return injected_kind(text, payload) is not None


def split_ide_context(text: str) -> tuple[str, str | None]:
    """``(request, context)`` of a prompt the IDE extension wrapped in its context
    (``context`` is ``None`` when ``text`` is not wrapped, and ``request`` is ``text``)."""
    stripped = text.lstrip()
    if not stripped.startswith(_IDE_CONTEXT):
        return text, None
    heading = _IDE_REQUEST.search(stripped)
    if heading is None:
        return text, None
    request = stripped[heading.end() :].strip()
    if not request:
        return text, None
    return request, stripped[: heading.start()].rstrip()


def user_meta(text: str, payload: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """A user-role text as the message shows it, with its meta: injected text is marked
    ``synthetic`` with its kind (``injected``); a prompt wrapped in IDE context keeps the
    request as its text and the context in ``meta["injected_context"]``."""
    kind = injected_kind(text, payload)
    if kind is not None:
        return text, {"synthetic": True, "injected": kind}
    request, context = split_ide_context(text)
    if context is None:
        return text, {}
    return request, {"injected_context": {"kind": "ide_context", "text": context}}


def new_message(
    where: Where, msg_id: Any, role: Role, type_: MessageType, text: str, **kw: Any
) -> Message:
    """A message read at ``where``; ``msg_id`` if it is a non-empty string, else positional."""
    return Message(
        id=msg_id if isinstance(msg_id, str) and msg_id else where.ref,
        role=role,
        type=type_,
        text=text,
        timestamp=where.timestamp,
        file_index=where.file_index,
        entry_index=where.line,
        **kw,
    )


def response_message(p: dict[str, Any], where: Where) -> Message | None:
    """A ``message`` item: user / assistant text, developer and system text as ``system``."""
    role = p.get("role")
    text = content_text(p.get("content"))
    if not text.strip():
        return None
    meta: dict[str, Any] = {}
    if role == "user":
        text, meta = user_meta(text, p)
        return new_message(where, non_empty(p.get("id")), "user", "text", text, meta=meta)
    if role == "assistant":
        if isinstance(p.get("phase"), str):
            meta["phase"] = p["phase"]
        return new_message(
            where, non_empty(p.get("id")), "assistant", "text", text, model=where.model, meta=meta
        )
    if role in ("developer", "system"):
        meta["source_role"] = role
        return new_message(where, non_empty(p.get("id")), "system", "text", text, meta=meta)
    return None


def summary_parts(summary: Any) -> list[str]:
    """The texts of a reasoning ``summary`` list (or of a list of plain strings)."""
    if not isinstance(summary, list):
        return []
    out: list[str] = []
    for part in summary:
        text = part.get("text") if isinstance(part, dict) else part
        if isinstance(text, str) and text.strip():
            out.append(text)
    return out


def reasoning(p: dict[str, Any], where: Where) -> Message | None:
    """A ``reasoning`` item as a thinking block: its summary only, or nothing."""
    parts = summary_parts(p.get("summary"))
    if not parts:
        return None
    return new_message(
        where,
        non_empty(p.get("id")),
        "assistant",
        "thinking",
        "\n\n".join(parts),
        model=where.model,
    )


def parse_arguments(raw: Any) -> dict[str, Any]:
    """``function_call.arguments`` (a JSON string, parsed a second time) as a dict."""
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return {}
    if not isinstance(raw, str):
        return {"arguments": raw}
    try:
        value = loads_capped(raw)
    except orjson.JSONDecodeError:
        return {"raw_arguments": raw}
    return value if isinstance(value, dict) else {"arguments": value}


def _web_search_text(action: dict[str, Any]) -> str:
    kind = action.get("type")
    if kind == "search":
        return f"search: {action.get('query') or ''}".strip()
    if kind == "open_page":
        return f"open_page: {action.get('url') or ''}".strip()
    if kind == "find_in_page":
        return f"find_in_page: {action.get('pattern') or ''} in {action.get('url') or ''}"
    return str(kind or "web_search")


def tool_call(p: dict[str, Any], where: Where) -> Message | None:
    """A tool call item (function, custom, local shell or web search) as a ``tool_use`` block."""
    kind = p.get("type")
    call_id = non_empty(p.get("call_id"))
    meta: dict[str, Any] = {"item_type": kind}
    if kind == "function_call":
        name = non_empty(p.get("name")) or "function"
        raw = p.get("arguments")
        tool_input = parse_arguments(raw)
        text = raw if isinstance(raw, str) else (orjson.dumps(raw).decode() if raw else "")
        if isinstance(p.get("summary"), str):
            meta["summary"] = p["summary"]
    elif kind == "custom_tool_call":
        name = non_empty(p.get("name")) or "custom_tool"
        raw_input = p.get("input")
        text = raw_input if isinstance(raw_input, str) else ""
        tool_input = {"input": text}
    elif kind == "local_shell_call":
        name = "local_shell"
        action = p.get("action")
        tool_input = action if isinstance(action, dict) else {}
        cmd = tool_input.get("command")
        if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd):
            text = shlex.join(cmd)
        else:
            text = str(cmd or "")
    elif kind == "web_search_call":
        name = "web_search"
        action = p.get("action")
        tool_input = action if isinstance(action, dict) else {}
        text = _web_search_text(tool_input)
        call_id = call_id or non_empty(p.get("id"))
    else:
        return None
    if isinstance(p.get("status"), str):
        meta["status"] = p["status"]
    return new_message(
        where,
        non_empty(p.get("id")),
        "assistant",
        "tool_use",
        text,
        tool_name=name,
        tool_call_id=call_id,
        tool_input=tool_input,
        model=where.model,
        meta=meta,
    )


def _exit_code(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return None


def normalize_output(output: Any) -> tuple[str, int | None, bool]:
    """Tool output as ``(text, exit_code, is_error)``.

    Output is a plain string, a list of content items, an object ``{"content", "success"}``,
    or (older builds) JSON text ``{"output": ..., "metadata": {"exit_code": ...}}``. Newer
    exec outputs put ``Process exited with code N`` / ``Exit code: N`` in a short header.
    """
    exit_code: int | None = None
    failed = False
    if isinstance(output, str) and output.lstrip().startswith("{"):
        try:
            decoded = loads_capped(output)
        except orjson.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict) and "output" in decoded:
            output = decoded
    if isinstance(output, dict):
        metadata = output.get("metadata")
        if isinstance(metadata, dict):
            exit_code = _exit_code(metadata.get("exit_code"))
        failed = output.get("success") is False
        body = output.get("output", output.get("content"))
        text = content_text(body) if body is not None else orjson.dumps(output).decode()
    else:
        text = content_text(output) if output is not None else ""
    if exit_code is None:
        head = "\n".join(text.splitlines()[:_HEADER_LINES])
        found = _EXIT_CODE.search(head)
        if found:
            exit_code = int(found.group(1))
    return text, exit_code, failed or (exit_code is not None and exit_code != 0)


def tool_output(p: dict[str, Any], where: Where, tool_name: str | None) -> Message:
    """A ``*_output`` item as a ``tool_result`` block."""
    text, exit_code, is_error = normalize_output(p.get("output"))
    meta: dict[str, Any] = {"item_type": p.get("type")}
    if exit_code is not None:
        meta["exit_code"] = exit_code
    return mark_rejection(
        new_message(
            where,
            non_empty(p.get("id")),
            "tool",
            "tool_result",
            text,
            tool_name=tool_name,
            tool_call_id=non_empty(p.get("call_id")),
            is_error=is_error,
            meta=meta,
        )
    )


def usage_of(counts: Any) -> Usage | None:
    """A Responses API usage object (``input_tokens`` includes cached input) as ``Usage``."""
    if not isinstance(counts, dict):
        return None

    def num(key: str) -> int:
        return token_count(counts.get(key))

    if not any(num(k) for k in ("input_tokens", "output_tokens", "cached_input_tokens")):
        return None
    cached = num("cached_input_tokens")
    return Usage(
        input=max(0, num("input_tokens") - cached),
        output=num("output_tokens"),
        cache_read=cached,
        cache_write=num("cache_write_input_tokens"),
    )


def _replacement_summary(history: Any) -> str | None:
    """The summary text held in a ``replacement_history`` (or its messages, flattened)."""
    if not isinstance(history, list):
        return None
    lines: list[str] = []
    for item in history:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        text = content_text(item.get("content"))
        passthrough = item.get("internal_chat_message_metadata_passthrough")
        kinds = passthrough.get("content_item_kinds") if isinstance(passthrough, dict) else None
        if (isinstance(kinds, list) and "compaction.summary" in kinds) or text.lstrip().startswith(
            _SUMMARY_PREAMBLE
        ):
            return text
        role = item.get("role")
        if text.strip() and role in ("user", "assistant") and not is_injected(text, item):
            lines.append(f"{role}: {text}")
    return "\n\n".join(lines) or None


def compaction(p: dict[str, Any], where: Where) -> Message:
    """A ``compacted`` line as a ``system``/``compaction`` marker carrying the summary."""
    message = p.get("message")
    summary = message if isinstance(message, str) and message.strip() else None
    if summary is None:
        summary = _replacement_summary(p.get("replacement_history"))
    meta: dict[str, Any] = {}
    history = p.get("replacement_history")
    if isinstance(history, list):
        meta["replacement_history_items"] = len(history)
    if isinstance(p.get("window_number"), int):
        meta["window_number"] = p["window_number"]
    return new_message(
        where,
        None,
        "system",
        "compaction",
        summary or "",
        compaction=Compaction(kind="summary", summary=summary),
        meta=meta,
    )


def compaction_event(where: Where) -> Message:
    """A bare ``context_compacted`` event: a marker with no summary."""
    return new_message(
        where,
        None,
        "system",
        "compaction",
        "",
        compaction=Compaction(kind="summary"),
        meta={"from_event": True},
    )
