"""Deterministic facts about a turn, read straight from the parsed log.

They go into every prompt as ground truth and are all the offline provider has to work with.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import regex

from ..model import Message, Turn

# No leading `^.*`: that form backtracks over the whole of a huge line at every match
# attempt. A hit is widened to its line afterwards, with plain string searches.
_ERROR_MARK = regex.compile(
    r"Traceback \(most recent call last\)|Error:|\bERROR\b|\bFAILED\b|\bfatal:|"
    r"\bcommand not found\b|\bNo such file or directory\b|\bexit (?:code|status) [1-9]"
)
_MAX_FACT_CHARS = 300
_LEAD_CHARS = 80
# Of a huge tool output only the head and the tail are scanned: errors show up at the
# start (a refused command) or the end (a traceback, a failing exit), seldom in between.
SCAN_HEAD_CHARS = 100_000
SCAN_TAIL_CHARS = 100_000
# Enough hits for the traceback rule below; more lines only cost time.
_MAX_HITS = 200


#: Longest user request put in a prompt's facts or quoted in the summary: a 50 MB message
#: must not be sent whole (the turn's transcript has its own cap, ``max_turn_chars``).
MAX_REQUEST_CHARS = 8000


def cap_middle(text: str, limit: int, what: str = "this turn") -> str:
    """Keep the start and end of an oversized text; the cut is marked so the model knows."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[… {cut} characters of {what} omitted …]\n{text[-half:]}"


def _clip(text: str, limit: int = _MAX_FACT_CHARS) -> str:
    # Only a bounded head is flattened: a fact never needs more of a huge text.
    head = text[: limit * 4]
    flat = " ".join(head.split())
    if len(flat) <= limit and len(head) == len(text):
        return flat
    return flat[: limit - 1] + "…"


def scanned_text(text: str) -> str:
    """The part of ``text`` searched for errors: all of it, or its head and tail when huge."""
    if len(text) <= SCAN_HEAD_CHARS + SCAN_TAIL_CHARS:
        return text
    return f"{text[:SCAN_HEAD_CHARS]}\n{text[-SCAN_TAIL_CHARS:]}"


def _error_hits(text: str) -> list[str]:
    """The lines that hold an error mark, each cut to a window around the mark."""
    found: list[str] = []
    pos = 0
    while len(found) < _MAX_HITS and (match := _ERROR_MARK.search(text, pos)) is not None:
        start, end = match.span()
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        # A long line is cut to a little before the mark and the rest of the fact after it
        # (a multi-megabyte line is never flattened whole).
        lead = max(line_start, start - _LEAD_CHARS)
        piece = text[lead : min(line_end, end + _MAX_FACT_CHARS)].strip()
        found.append(f"…{piece}" if lead > line_start else piece)
        pos = line_end + 1
    return found


@lru_cache(maxsize=1024)
def _error_lines(kind: str, is_error: bool, text: str) -> tuple[str, ...]:
    found = _error_hits(text)
    if kind == "tool_result" and is_error and not found:
        first = next((ln for ln in text.splitlines() if ln.strip()), "(error, no output)")
        found = [first.strip()]
    # The exception line of a traceback is the last one that names an error.
    if any(f.startswith("Traceback") for f in found):
        named = [f for f in found if not f.startswith("Traceback")]
        found = named[-1:] or found[:1]
    return tuple(_clip(f) for f in found[:3])


def error_lines(m: Message) -> list[str]:
    """Error evidence in a tool result or assistant text: failing exits, tracebacks, errors.

    Computed once per distinct (scanned) text: the same message is asked about by every
    stage that builds facts.
    """
    if m.type not in ("tool_result", "text"):
        return []
    return list(_error_lines(m.type, bool(m.is_error), scanned_text(m.text)))


def turn_facts(turn: Turn, label_of: Mapping[str, str]) -> dict[str, Any]:
    """Facts of one turn, each tied to the ``M#`` label of the message that shows it.

    The facts are raw log text; whoever puts them into a request redacts them
    (see ``render.redact_request``).
    """

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
    failed = [
        {"path": a.file_path, "action": a.action, "label": lab(a.message_id)}
        for a in turn.failed_artifacts
    ]
    return {
        # Only when there are some: the facts travel in every turn's prompt.
        **({"failed_artifacts": failed} if failed else {}),
        "turn_number": turn.number,
        "user_request": cap_middle(turn.user_text, MAX_REQUEST_CHARS, "the request"),
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
