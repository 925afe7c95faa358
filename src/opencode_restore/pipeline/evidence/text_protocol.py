"""The seed's text tool protocol, parsed tolerantly.

A model without native tool calling writes calls in its reply::

    [SEARCH_LOG: "Traceback" 5]
    [SEARCH_FILE: "src/app.py" "def main"]
    [READ_FILE: "src/app.py" 10-40]
    [LIST_ARTIFACTS]
    [COMPLETE_EVIDENCE_SEARCH: "the tests passed [M12]"]

Several calls may share one reply. Arguments are double- or single-quoted strings
(``\\"`` and ``\\\\`` unescape; any other backslash is kept, so regex escapes such as ``\\d``
survive), bare words, or ``key=value`` pairs. A bracket counts as a call when its name is a
known tool (any case) or looks like one (contains ``_``), so citations like ``[M14]`` and
prose like ``[see above]`` are left alone; a call that cannot be parsed comes back with an
``error`` for the model to read.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import regex

_NAME = regex.compile(r"\[\s*([A-Za-z][A-Za-z0-9_]*)\s*(:|\])")
_KEYWORD = regex.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
MAX_CALLS = 20
_MAX_CALL_CHARS = 2000


@dataclass
class TextCall:
    """One bracketed call: its name (upper case), arguments, source text, parse error."""

    name: str
    positional: list[str] = field(default_factory=list)
    keywords: dict[str, str] = field(default_factory=dict)
    raw: str = ""
    error: str | None = None


def parse_text_calls(text: str, known: Collection[str]) -> list[TextCall]:
    """Every tool call written in ``text`` (at most `MAX_CALLS`), in order."""
    names = {k.upper() for k in known}
    calls: list[TextCall] = []
    pos = 0
    while len(calls) < MAX_CALLS:
        match = _NAME.search(text, pos)
        if match is None:
            break
        name = match.group(1).upper()
        if name not in names and "_" not in name:
            pos = match.start() + 1
            continue
        if match.group(2) == "]":
            calls.append(TextCall(name, raw=match.group(0)))
            pos = match.end()
            continue
        call, pos = _arguments(text, match.end(), TextCall(name))
        call.raw = text[match.start() : pos][:_MAX_CALL_CHARS]
        calls.append(call)
    return calls


def _arguments(text: str, pos: int, call: TextCall) -> tuple[TextCall, int]:
    """Parse arguments from ``pos`` up to the closing bracket; returns the call and the end."""
    limit = min(len(text), pos + _MAX_CALL_CHARS)
    while pos < limit:
        char = text[pos]
        if char in " \t\r\n,":
            pos += 1
            continue
        if char == "]":
            return call, pos + 1
        if char == "[":
            break  # the next call starts: this one was never closed
        key = None
        keyword = _KEYWORD.match(text, pos)
        if keyword is not None:
            key = keyword.group(1).lower()
            pos = keyword.end()
        if pos < limit and text[pos] in "\"'":
            value, pos, ok = _quoted(text, pos, limit)
            if not ok:
                call.error = "unterminated quoted argument"
                return call, pos
        else:
            start = pos
            while pos < limit and text[pos] not in " \t\r\n,[]":
                pos += 1
            value = text[start:pos]
        if key is None:
            call.positional.append(value)
        else:
            call.keywords[key] = value
    call.error = "missing closing ']'"
    return call, pos


def _quoted(text: str, pos: int, limit: int) -> tuple[str, int, bool]:
    quote = text[pos]
    out: list[str] = []
    pos += 1
    while pos < limit:
        char = text[pos]
        if char == "\\" and pos + 1 < limit and text[pos + 1] in (quote, "\\"):
            out.append(text[pos + 1])
            pos += 2
            continue
        if char == quote:
            return "".join(out), pos + 1, True
        out.append(char)
        pos += 1
    return "".join(out), pos, False
