"""Deterministic facts about a turn, read straight from the parsed log.

They go into every prompt as ground truth and are all the offline provider has to work with.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import regex

from ..model import Message, Turn
from . import text as rules

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


_READ_TOOLS = frozenset(
    {
        "read",
        "read_file",
        "readfile",
        "view",
        "glob",
        "grep",
        "ls",
        "list",
        "list_directory",
        "search",
        "search_file_content",
        "find",
        "webfetch",
        "web_fetch",
        "websearch",
        "todoread",
    }
)
_READ_PROGRAMS = frozenset(
    {
        "cat",
        "head",
        "tail",
        "grep",
        "rg",
        "ls",
        "find",
        "wc",
        "nl",
        "less",
        "more",
        "tree",
        "file",
        "stat",
        "pwd",
        "echo",
        "which",
        "type",
        "du",
        "df",
        "diff",
        "cmp",
    }
)
_GIT_READS = frozenset({"status", "diff", "log", "show", "grep", "blame", "branch", "ls-files"})
_EXCEPTION = regex.compile(r"^\s*(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt|Warning)\b.*")
_FAILED_OUTPUT = regex.compile(
    r"Traceback \(most recent|\bFAILED\b|\bexit (?:code|status):? [1-9]", regex.I
)


def read_only(command: str) -> bool:
    """True for a shell command that only looks (``cat``, ``sed -n``, ``grep``, ``git diff``):
    no program of it writes, and its output is file or repository content, not a result."""
    if ">" in command.replace("2>&1", "").replace(">/dev/null", ""):
        return False
    for part in regex.split(r"&&|\|\||;|\|", command):
        words = part.split()
        if not words:
            continue
        prog = words[0].rsplit("/", 1)[-1]
        if prog == "sed" and "-i" not in words and not any(w.startswith("-i") for w in words):
            continue
        if prog == "git" and len(words) > 1 and words[1] in _GIT_READS:
            continue
        if prog not in _READ_PROGRAMS:
            return False
    return True


def _read_results(turn: Turn) -> set[str]:
    """Ids of the tool results that hold what a read returned (a read tool, a read-only
    command) or a command's output (its failure is taken from ``_shell_outcomes``)."""
    calls = {m.tool_call_id: m for m in turn.messages if m.type == "tool_use" and m.tool_call_id}
    out = set()
    for m in turn.messages:
        call = calls.get(m.tool_call_id) if m.type == "tool_result" and m.tool_call_id else None
        if call is None or (m.is_error and (call.tool_name or "").lower() in _READ_TOOLS):
            continue  # a read that failed says why in its result: that is an error
        name = (call.tool_name or "").lower()
        command = (call.tool_input or {}).get("command") or (call.tool_input or {}).get("cmd")
        if name in _READ_TOOLS or isinstance(command, (str, list)):
            out.add(m.id)
    return out


def _exception_line(text: str) -> str | None:
    """The exception line of a traceback or test run (the last one), if the output has one."""
    found = None
    for line in scanned_text(text).splitlines():
        if _EXCEPTION.match(line) and ":" in line:
            found = line.strip()
    return _clip(found, 200) if found else None


def _shell_outcomes(turn: Turn, lab: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The turn's failing commands (with their error line) and its passing ones; read-only
    commands that succeed are neither (their output is content, not an outcome)."""
    results = {
        m.tool_call_id: m for m in turn.messages if m.type == "tool_result" and m.tool_call_id
    }
    calls = {m.id: m for m in turn.messages if m.type == "tool_use"}
    failures: list[dict[str, Any]] = []
    passes: list[dict[str, Any]] = []
    for c in turn.commands:
        call = calls.get(c.message_id)
        res = results.get(call.tool_call_id) if call is not None and call.tool_call_id else None
        text = res.text if res is not None else ""
        failed = bool(c.exit_code) or c.is_error
        if c.exit_code is None and not c.is_error and text:
            failed = _FAILED_OUTPUT.search(scanned_text(text)) is not None
        item = {"command": _clip(c.command, 160), "label": lab(c.message_id)}
        if failed:
            error = _exception_line(text) or next(iter(error_lines(res)), None) if res else None
            failures.append(item | {"exit_code": c.exit_code, "error": error or ""})
        elif not read_only(c.command):
            passes.append(item)
    return failures, passes


def _text_rules(turn: Turn, lab: Any) -> dict[str, Any]:
    """What the text rules (``rules``) find in the turn's words, each with its label."""
    out: dict[str, list[Any]] = {
        k: []
        for k in (
            "constraints",
            "reversals",
            "identifiers",
            "decisions",
            "ruled_out",
            "findings",
            "questions",
        )
    }
    texts = [m for m in turn.messages if m.role == "assistant" and m.type == "text" and m.text]
    for m in turn.messages:
        if not m.is_human:
            continue
        label = lab(m.id)
        out["constraints"] += [{"text": t, "label": label} for t in rules.constraints(m.text)]
        out["reversals"] += [{"text": t, "label": label} for t in rules.reversals(m.text)]
        out["identifiers"] += [{"text": t, "label": label} for t in rules.identifiers(m.text)]
    for m in texts:
        label = lab(m.id)
        out["decisions"] += [
            {"text": d, "reason": r, "label": label} for d, r in rules.decisions(m.text)
        ]
        out["ruled_out"] += [{"text": t, "label": label} for t in rules.ruled_out(m.text)]
        out["findings"] += [{"text": t, "label": label} for t in rules.findings(m.text)]
    if texts and not turn.interrupted:
        final = texts[-1]
        out["questions"] = [
            {"text": t, "label": lab(final.id)} for t in rules.questions(final.text)
        ]
    return {k: v for k, v in out.items() if v}


# The fixed words agents wrap a compaction summary in (Claude Code's continuation notice
# and closing instructions, Codex's hand-over note): not what the compaction kept.
_PREAMBLES = regex.compile(
    r"This session is being continued from a previous conversation[^.]*\.\s*"
    r"(?:The (?:conversation|summary)[^.:]*[.:]\s*)?(?:Summary:\s*)?"
    r"|If you need specific details from before compaction.*"
    r"|Continue the conversation from where it left off.*"
    r"|Another language model started to solve this problem.*?summary[^:]*:\s*"
    r"|^\s*#+\s*",
    regex.IGNORECASE | regex.DOTALL | regex.MULTILINE,
)


def compaction_text(summary: str, limit: int = 600) -> str:
    """What a compaction kept: its summary without the agent's fixed preamble and closing
    instructions, headings as plain words, on one line."""
    return _clip(_PREAMBLES.sub("", summary[: limit * 8]), limit)


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
    failures, passes = _shell_outcomes(turn, lab)
    # Errors come from failing commands and failing tool calls, never from what a read
    # returned (source code that handles an error is not one).
    looked = _read_results(turn)
    errors = []
    for m in turn.messages:
        if m.role == "user" or m.id in looked or m.type == "text":
            continue
        for line in error_lines(m):
            errors.append({"label": lab(m.id), "text": line})
    compactions = [
        {"label": lab(m.id), "summary": compaction_text(m.compaction.summary or "")}
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
        "failed_commands": failures,
        "passed_commands": passes,
        "interrupted": turn.interrupted,
        **_text_rules(turn, lab),
        "assistant_texts": assistant_texts,
        "last_assistant": assistant_texts[-1] if assistant_texts else None,
        "compactions": compactions,
    }
