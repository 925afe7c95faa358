"""Deterministic facts about a turn, read straight from the parsed log.

They go into every prompt as ground truth and are all the offline provider has to work with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex

from ..model import Message, Turn
from . import text as rules
from . import vcs
from .errors import (
    NO_OUTPUT,
    command_failed,
    error_lines,
    other_calls,
    read_results,
    refused,
    reports_failure,
    shell_outcomes,
)
from .wording import short

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


def _text_rules(turn: Turn, lab: Any) -> dict[str, Any]:
    """What the text rules (``rules``) find in the turn's words, each with its label."""
    out: dict[str, list[Any]] = {
        k: []
        for k in (
            "constraints",
            "reversals",
            "identifiers",
            "pasted_errors",
            "decisions",
            "ruled_out",
            "findings",
            "questions",
        )
    }
    texts = [m for m in turn.messages if m.role == "assistant" and m.type == "text" and m.text]
    for m, words in _user_words(turn):
        label = lab(m.id)
        out["constraints"] += [{"text": t, "label": label} for t in rules.constraints(words)]
        out["reversals"] += [{"text": t, "label": label} for t in rules.reversals(words)]
        out["identifiers"] += [{"text": t, "label": label} for t in rules.identifiers(words)]
        out["pasted_errors"] += [{"text": t, "label": label} for t in rules.pasted_errors(words)]
    prose = ""
    for m in texts:
        label = lab(m.id)
        # Markdown as prose, once per text: code blocks say no decision, links cite nothing.
        prose = rules.plain(m.text)
        out["decisions"] += [
            {"text": d, "reason": r, "label": label, "names": n}
            for d, r, n in rules.decisions(prose)
        ]
        out["ruled_out"] += [{"text": t, "label": label} for t in rules.ruled_out(prose)]
        out["findings"] += [{"text": t, "label": label} for t in rules.findings(prose)]
    if texts and not turn.interrupted:
        final = texts[-1]
        out["questions"] = [{"text": t, "label": lab(final.id)} for t in rules.questions(prose)]
    return {k: v for k, v in out.items() if v}


def _user_words(turn: Turn) -> list[tuple[Message, str]]:
    """What the user wrote in the turn: the requests, and the words a user gave when
    rejecting a tool call (the readers put them in ``meta["user_said"]``)."""
    out = [(m, m.text) for m in turn.messages if m.is_human]
    out += [
        (m, said)
        for m in turn.messages
        if m.type == "tool_result" and isinstance(said := m.meta.get("user_said"), str) and said
    ]
    return out


def _rejections(turn: Turn, lab: Any) -> list[dict[str, Any]]:
    """Tool calls the user rejected: nothing they asked for happened; what the user said
    when rejecting is kept with them."""
    calls = {m.tool_call_id: m for m in turn.messages if m.type == "tool_use" and m.tool_call_id}
    out = []
    for m in turn.messages:
        if m.type != "tool_result" or not m.meta.get("rejected"):
            continue
        call = calls.get(m.tool_call_id) if m.tool_call_id else None
        args = (call.tool_input or {}) if call is not None else {}
        what = next(
            (str(args[k]) for k in ("file_path", "path", "command", "cmd") if args.get(k)), ""
        )
        said = m.meta.get("user_said")
        out.append(
            {
                "tool": (call.tool_name if call is not None else None) or "tool call",
                "target": short(what, 120),
                "user_said": short(said, 300) if isinstance(said, str) else "",
                "label": lab(call.id if call is not None else m.id),
            }
        )
    return out


def _scores(turn: Turn, lab: Any) -> list[dict[str, Any]]:
    """How an eval scored the turn's work (the readers' ``meta["score"]``: Inspect)."""
    out = []
    for m in turn.messages:
        score = m.meta.get("score")
        if isinstance(score, dict) and score.get("value") is not None:
            out.append(
                {
                    "scorer": str(score.get("scorer") or "score"),
                    "value": short(str(score["value"]), 80),
                    "label": lab(m.id),
                }
            )
    return out


def _run_errors(turn: Turn, lab: Any) -> list[dict[str, Any]]:
    """Errors the run itself ended in (an eval sample's error: ``meta["sample_error"]``)."""
    return [
        {"text": short(str(m.meta["sample_error"]), 240), "label": lab(m.id)}
        for m in turn.messages
        if m.meta.get("sample_error")
    ]


def _unanswered(turn: Turn, lab: Any) -> dict[str, Any] | None:
    """The turn's last tool call when the log ends before its result: what the agent was
    doing when it was cut off (a commit issued, a test run started)."""
    answered = {m.tool_call_id for m in turn.messages if m.type == "tool_result"}
    last = next((m for m in reversed(turn.messages) if m.type == "tool_use"), None)
    if last is None or not last.tool_call_id or last.tool_call_id in answered:
        return None
    args = last.tool_input or {}
    what = next((str(args[k]) for k in ("command", "cmd", "file_path", "path") if args.get(k)), "")
    return {"tool": last.tool_name or "tool", "target": short(what, 160), "label": lab(last.id)}


# A failed call that the next call of the same tool on the same target put right (an edit
# whose old text did not match, a file not read first): a retry, not an error of the work.
def _retried(turn: Turn) -> set[str]:
    calls = [m for m in turn.messages if m.type == "tool_use"]
    results = {
        m.tool_call_id: m for m in turn.messages if m.type == "tool_result" and m.tool_call_id
    }

    def target(m: Message) -> tuple[str | None, str]:
        args = m.tool_input or {}
        return m.tool_name, str(args.get("file_path") or args.get("path") or "")

    out: set[str] = set()
    for i, call in enumerate(calls):
        res = results.get(call.tool_call_id) if call.tool_call_id else None
        if res is None or not res.is_error or not target(call)[1]:
            continue
        for later in calls[i + 1 :]:
            if target(later) != target(call):
                continue
            again = results.get(later.tool_call_id) if later.tool_call_id else None
            if again is not None and not again.is_error:
                out.add(res.id)
            break
    return out


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
    return short(_PREAMBLES.sub("", summary[: limit * 8]), limit)


def turn_facts(turn: Turn, label_of: Mapping[str, str]) -> dict[str, Any]:
    """Facts of one turn, each tied to the ``M#`` label of the message that shows it.

    The facts are raw log text; whoever puts them into a request redacts them
    (see ``render.redact_request``).
    """

    def lab(mid: str) -> str | None:
        return label_of.get(mid)

    human = [m for m in turn.messages if m.is_human]
    assistant_texts = [
        {"label": lab(m.id), "text": short(m.text, 600)}
        for m in turn.messages
        if m.role == "assistant" and m.type == "text" and m.text.strip()
    ]
    failures, passes = shell_outcomes(turn, lab)
    # Errors come from failing commands and failing tool calls, never from what a read
    # returned (source code that handles an error is not one), nor from a call the next
    # one retried with success, nor from a rejection (listed as such).
    looked = read_results(turn) | _retried(turn)
    errors = []
    for m in turn.messages:
        if m.role == "user" or m.id in looked or m.type == "text" or m.meta.get("rejected"):
            continue
        if m.type == "tool_result" and not reports_failure(m):
            continue
        for line in error_lines(m):
            if line != NO_OUTPUT:  # a failure that says nothing tells the reader nothing
                errors.append({"label": lab(m.id), "text": line})
    compactions = [
        {"label": lab(m.id), "summary": compaction_text(m.compaction.summary or "")}
        for m in turn.messages
        if m.type == "compaction" and m.compaction is not None
    ]
    # An attempt the turn then made good (the same file changed after it) was a retry.
    done_at: dict[str, int] = {}
    order = {m.id: i for i, m in enumerate(turn.messages)}
    for a in turn.artifacts:
        if a.action != "read":
            done_at[a.file_path] = max(done_at.get(a.file_path, -1), order.get(a.message_id, -1))
    failed = [
        {"path": a.file_path, "action": a.action, "label": lab(a.message_id)}
        for a in turn.failed_artifacts
        if done_at.get(a.file_path, -1) <= order.get(a.message_id, -1)
    ]
    closing = next(
        (
            m
            for m in reversed(turn.messages)
            if m.role == "assistant" and m.type == "text" and m.text.strip()
        ),
        None,
    )
    said = rules.account(closing.text) if closing is not None and not turn.interrupted else ""
    # The longer account, for when this turn is the session's last (``progress.outcome``).
    said_long = (
        rules.account(closing.text, rules.LAST_ACCOUNT_MIN, rules.LAST_ACCOUNT_CHARS)
        if said and closing is not None
        else ""
    )
    history = vcs.events(
        turn, lab, lambda cmd, run, out: command_failed(cmd, run.exit_code, run.is_error, out)
    )
    rejected = _rejections(turn, lab)
    stopped = refused(turn, lab)
    waiting = _unanswered(turn, lab) if turn.interrupted else None
    return {
        # Only when there are some: the facts travel in every turn's prompt.
        **({"failed_artifacts": failed} if failed else {}),
        **({"vcs": history} if history else {}),
        **({"rejected": rejected} if rejected else {}),
        **({"refused_commands": stopped} if stopped else {}),
        **({"tool_calls": called} if (called := other_calls(turn)) else {}),
        **({"scores": scored} if (scored := _scores(turn, lab)) else {}),
        **({"run_errors": broke} if (broke := _run_errors(turn, lab)) else {}),
        **({"unanswered_call": waiting} if waiting else {}),
        **(
            {"outcome": {"text": said, "label": lab(closing.id)}}
            | ({"closing_account": said_long} if said_long != said else {})
            if said and closing
            else {}
        ),
        "turn_number": turn.number,
        "user_request": cap_middle(turn.user_text, MAX_REQUEST_CHARS, "the request"),
        "user_labels": [lab(m.id) for m in human if lab(m.id)],
        "artifacts": [
            {"path": a.file_path, "action": a.action, "label": lab(a.message_id)}
            for a in turn.artifacts
        ],
        "commands": [
            {
                "command": short(c.command, 200),
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
