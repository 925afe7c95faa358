"""Deterministic facts about a turn, read straight from the parsed log.

They go into every prompt as ground truth and are all the offline provider has to work with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex

from ..model import Message, Turn

_ERROR_LINE = regex.compile(
    r"^.*(?:Traceback \(most recent call last\)|\b\w*Error\b:|\bERROR\b|\bFAILED\b|\bfatal:|"
    r"\bcommand not found\b|\bNo such file or directory\b|\bexit (?:code|status) [1-9]).*$",
    regex.MULTILINE,
)
_MAX_FACT_CHARS = 300


def _clip(text: str, limit: int = _MAX_FACT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_lines(m: Message) -> list[str]:
    """Error evidence in a tool result or assistant text: failing exits, tracebacks, errors."""
    if m.type not in ("tool_result", "text"):
        return []
    found = [match.group(0).strip() for match in _ERROR_LINE.finditer(m.text)]
    if m.type == "tool_result" and m.is_error and not found:
        first = next((ln for ln in m.text.splitlines() if ln.strip()), "(error, no output)")
        found = [first.strip()]
    # The exception line of a traceback is the last one that names an error.
    if any(f.startswith("Traceback") for f in found):
        named = [f for f in found if not f.startswith("Traceback")]
        found = named[-1:] or found[:1]
    return [_clip(f) for f in found[:3]]


def turn_facts(turn: Turn, label_of: Mapping[str, str]) -> dict[str, Any]:
    """Facts of one turn, each tied to the ``M#`` label of the message that shows it."""

    def lab(mid: str) -> str | None:
        return label_of.get(mid)

    human = [m for m in turn.messages if m.is_human]
    assistant_texts = [
        {"label": lab(m.id), "text": _clip(m.text, 600)}
        for m in turn.messages
        if m.role == "assistant" and m.type == "text" and m.text.strip()
    ]
    errors = []
    for m in turn.messages:
        if m.role == "user":
            continue
        for line in error_lines(m):
            errors.append({"label": lab(m.id), "text": line})
    compactions = [
        {"label": lab(m.id), "summary": _clip(m.compaction.summary or "", 600)}
        for m in turn.messages
        if m.type == "compaction" and m.compaction is not None
    ]
    return {
        "turn_number": turn.number,
        "user_request": turn.user_text,
        "user_labels": [lab(m.id) for m in human if lab(m.id)],
        "artifacts": [
            {"path": a.file_path, "action": a.action, "label": lab(a.message_id)}
            for a in turn.artifacts
        ],
        "commands": [
            {
                "command": _clip(c.command, 200),
                "label": lab(c.message_id),
                "exit_code": c.exit_code,
                "is_error": c.is_error,
            }
            for c in turn.commands
        ],
        "errors": errors[:10],
        "assistant_texts": assistant_texts,
        "last_assistant": assistant_texts[-1] if assistant_texts else None,
        "compactions": compactions,
    }
