"""Render parsed turns (the `turns` command)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import orjson

from ..fields import counted
from ..model import Turn
from .messages import iso


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def turn_labels(t: Turn, labels: Mapping[str, str]) -> tuple[str, str] | None:
    """The first and last ``[M#]`` label of the turn's messages, or None when it has none."""
    issued = [label for m in t.messages if (label := labels.get(m.id)) is not None]
    return (issued[0], issued[-1]) if issued else None


def _span(span: tuple[str, str] | None) -> str:
    if span is None:
        return ""
    first, last = span
    return f"[{first}], " if first == last else f"[{first}-{last}], "


def turns_markdown(turns: Sequence[Turn], labels: Mapping[str, str]) -> str:
    """A readable list of turns: their ``[M#]`` labels (``labels``: by message id), the
    request, files touched, commands run."""
    out: list[str] = []
    for t in turns:
        first = t.messages[0] if t.messages else None
        where = f"file {first.file_index} entries {t.start_line}-{t.end_line}" if first else ""
        span = _span(turn_labels(t, labels))
        out.append(f"## Turn {t.number} ({counted(len(t.messages), 'message')}, {span}{where})\n")
        out.append(f"**Request:** {_one_line(t.user_text) or '(none)'}\n")
        if t.artifacts:
            out.append("**Files:**")
            for a in t.artifacts:
                cited = _cited(labels, a.message_id)
                out.append(f"- {a.action} `{a.file_path}` ({cited}, line {a.line_number})")
            out.append("")
        if t.commands:
            out.append("**Commands:**")
            for c in t.commands:
                status = "" if c.exit_code is None else f" → exit {c.exit_code}"
                status += " (error)" if c.is_error else ""
                cited = _cited(labels, c.message_id)
                out.append(f"- `{_one_line(c.command, 160)}`{status} ({cited})")
            out.append("")
        out.append("")
    return "\n".join(out)


def _cited(labels: Mapping[str, str], message_id: str) -> str:
    """``[M#]`` of the message, or its id when a restore gives it no label."""
    label = labels.get(message_id)
    return f"[{label}]" if label is not None else f"message {message_id}"


def _label_span(t: Turn, labels: Mapping[str, str]) -> dict[str, str | None]:
    span = turn_labels(t, labels)
    return {"first_label": span and span[0], "last_label": span and span[1]}


def turns_json(turns: Sequence[Turn], labels: Mapping[str, str]) -> str:
    """Turns as a JSON array (labels, ids, request, artifacts, commands)."""
    data = [
        {
            "number": t.number,
            **_label_span(t, labels),
            "user_text": t.user_text,
            "message_ids": t.message_ids,
            "first_timestamp": iso(t.messages[0].timestamp) if t.messages else None,
            "artifacts": [
                {
                    "file_path": a.file_path,
                    "action": a.action,
                    "message_id": a.message_id,
                    "label": labels.get(a.message_id),
                    "line_number": a.line_number,
                }
                for a in t.artifacts
            ],
            "commands": [
                {
                    "command": c.command,
                    "message_id": c.message_id,
                    "label": labels.get(c.message_id),
                    "line_number": c.line_number,
                    "exit_code": c.exit_code,
                    "is_error": c.is_error,
                }
                for c in t.commands
            ],
        }
        for t in turns
    ]
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
