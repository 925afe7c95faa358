"""Render one message (one content block) as plain text for an LLM.

The shape follows inspect_scout's ``message_as_str`` so prompts read the same way::

    USER:
    please fix the test

    ASSISTANT:
    Tool Call: Read
    Arguments:
    file_path: src/app.py

    TOOL:
    Tool Result: Read
    <file text, capped>

Every block ends with a newline, output depends only on the message (argument keys are
sorted, non-string values are JSON with sorted keys), and flags the model must notice
(errors, compactions) are spelled out on their own line.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from opencode_restore.model import Compaction, Message
from opencode_restore.timeline.preprocess import DEFAULT_PREPROCESSOR, MessagesPreprocessor

ERROR_FLAG = "[ERROR]"
_JSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def role_label(message: Message) -> str:
    """The upper-cased role, or ``meta["role_label"]`` when a reader set one."""
    label = message.meta.get("role_label")
    if isinstance(label, str) and label:
        return label.upper()
    return message.role.upper()


def message_as_str(
    message: Message, preprocessor: MessagesPreprocessor | None = None
) -> str | None:
    """Render ``message`` as ``ROLE:\\n<body>\\n``, or None when it shows nothing.

    None means the preprocessor excludes the message or its body is empty (an empty
    text block would only waste an ``[M#]`` label).
    """
    options = preprocessor or DEFAULT_PREPROCESSOR
    if not message_shown(message, options):
        return None
    body = _body(message, options)
    if message.is_error and message.type != "tool_result":
        body = f"{ERROR_FLAG}\n{body}"
    return f"{role_label(message)}:\n{body}\n"


#: The types whose body always shows something (a header, a tag), whatever their text.
_NEVER_EMPTY = frozenset(
    {"thinking", "tool_use", "tool_result", "compaction", "summary", "file_changes"}
)


def message_shown(message: Message, preprocessor: MessagesPreprocessor | None = None) -> bool:
    """Whether ``message_as_str`` shows ``message`` (kept by the preprocessor, its body not
    blank), told without rendering it: a label is issued for each message a stream shows,
    and a tool call's arguments were rendered only to be found not empty."""
    if not (preprocessor or DEFAULT_PREPROCESSOR).keeps(message):
        return False
    return message.type in _NEVER_EMPTY or bool(message.text.strip())


def _body(message: Message, options: MessagesPreprocessor) -> str:
    match message.type:
        case "thinking":
            return (
                f"<thinking>{message.text}</thinking>" if message.text else "<thinking_redacted/>"
            )
        case "tool_use":
            return _tool_call(message, options)
        case "tool_result":
            return _tool_result(message, options)
        case "compaction":
            return _compaction(message)
        case "summary":
            return f"[compaction summary]\n{message.text}"
        case "file_changes":
            return "Files changed in this step:\n" + message.text
        case _:
            return message.text


def _tool_call(message: Message, options: MessagesPreprocessor) -> str:
    shown = message.tool_input is not None and not _is_input(message.text, message.tool_input)
    lines = [message.text] if shown and message.text.strip() else []
    lines.append(f"Tool Call: {message.tool_name or 'unknown'}")
    if message.tool_input is None:
        # No structured input: the block's text is the best record of the arguments.
        lines.append(f"Arguments: {options.cap(message.text)}" if message.text else "Arguments:")
    else:
        lines.append("Arguments:")
        for key in sorted(message.tool_input, key=str):
            lines.append(f"{key}: {options.cap(value_text(message.tool_input[key]))}")
    return "\n".join(lines)


def _is_input(text: str, tool_input: dict[str, Any]) -> bool:
    """True when ``text`` is the call's input as JSON again (Claude Code's tool calls).

    Shown, it repeated every argument uncapped before the capped list: a Write's whole
    file, sent twice in each turn's prompt.
    """
    if not text.startswith("{"):
        return False
    try:
        return bool(orjson.loads(text) == tool_input)
    except orjson.JSONDecodeError:
        return False


def _tool_result(message: Message, options: MessagesPreprocessor) -> str:
    header = f"Tool Result: {message.tool_name or 'unknown'}"
    if message.is_error:
        header = f"{header} {ERROR_FLAG}"
    return f"{header}\n{options.cap(message.text)}"


def _compaction(message: Message) -> str:
    compaction = message.compaction
    text = message.text or (compaction.summary if compaction and compaction.summary else "")
    header = _compaction_header(compaction)
    return f"{header}\n{text}" if text else header


def _compaction_header(compaction: Compaction | None) -> str:
    if compaction is None:
        return "[context compacted]"
    details: list[str] = [compaction.kind]
    if compaction.tokens_before is not None:
        after = "?" if compaction.tokens_after is None else str(compaction.tokens_after)
        details.append(f"{compaction.tokens_before} -> {after} tokens")
    if compaction.trigger:
        details.append(compaction.trigger)
    return f"[context compacted: {', '.join(details)}]"


def value_text(value: Any) -> str:
    """A value as text: strings as they are, anything else as JSON with sorted keys."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=_JSON_OPTIONS, default=str).decode()
    except TypeError:
        # orjson refuses integers wider than 64 bits; the stdlib encoder does not.
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
