"""Short human titles for sessions: the first line of the first user request, cut.

Standard library only: the hook receiver imports it on every agent event.
"""

from __future__ import annotations

from typing import Any

TITLE_CHARS = 80


def short_title(text: Any) -> str | None:
    """The first non-empty line of ``text`` (or of the first string of a list), cut to 80."""
    if isinstance(text, list):
        text = next((t for t in text if isinstance(t, str) and t.strip()), None)
    if not isinstance(text, str) or not text.strip():
        return None
    first = text.strip().splitlines()[0].strip()
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1] + "…"


def request_title(text: Any) -> str | None:
    """The title of a user message's text, or None when it is no typed request.

    Agents put their own context into user messages too (Claude Code's
    ``<command-name>`` and ``<system-reminder>`` blocks, Codex's
    ``<environment_context>`` and AGENTS.md instructions): those name nothing.
    """
    if not isinstance(text, str):
        return None
    stripped = text.lstrip()
    if stripped.startswith(("<", "# AGENTS.md", "Caveat: ")):
        return None
    return short_title(stripped)


def content_text(content: Any) -> str | None:
    """The text of a message ``content``: a string, or the first text block of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") in ("text", "input_text"):
                text = block.get("text")
                if isinstance(text, str):
                    return text
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                return None
    return None
