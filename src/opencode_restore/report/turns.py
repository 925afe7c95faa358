"""Render parsed turns (the `turns` command)."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from ..model import Turn
from .messages import iso


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def turns_markdown(turns: Sequence[Turn]) -> str:
    """A readable list of turns: request, files touched, commands run."""
    out: list[str] = []
    for t in turns:
        first = t.messages[0] if t.messages else None
        where = f"file {first.file_index} entries {t.start_line}-{t.end_line}" if first else ""
        out.append(f"## Turn {t.number} ({len(t.messages)} messages, {where})\n")
        out.append(f"**Request:** {_one_line(t.user_text) or '(none)'}\n")
        if t.artifacts:
            out.append("**Files:**")
            out.extend(
                f"- {a.action} `{a.file_path}` (message {a.message_id}, line {a.line_number})"
                for a in t.artifacts
            )
            out.append("")
        if t.commands:
            out.append("**Commands:**")
            for c in t.commands:
                status = "" if c.exit_code is None else f" → exit {c.exit_code}"
                status += " (error)" if c.is_error else ""
                out.append(f"- `{_one_line(c.command, 160)}`{status}")
            out.append("")
        out.append("")
    return "\n".join(out)


def turns_json(turns: Sequence[Turn]) -> str:
    """Turns as a JSON array (ids, request, artifacts, commands)."""
    data = [
        {
            "number": t.number,
            "user_text": t.user_text,
            "message_ids": t.message_ids,
            "first_timestamp": iso(t.messages[0].timestamp) if t.messages else None,
            "artifacts": [
                {
                    "file_path": a.file_path,
                    "action": a.action,
                    "message_id": a.message_id,
                    "line_number": a.line_number,
                }
                for a in t.artifacts
            ],
            "commands": [
                {
                    "command": c.command,
                    "message_id": c.message_id,
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
