"""Where the session stands at its end: the work cut off, the question the agent is
waiting on, a failure nothing fixed, what the agent said is left, and the compactions.
"None pending" is said only when none of these holds."""

from __future__ import annotations

import re
from typing import Any

from .progress import changes, end_state
from .text import answers, clip, sentences
from .wording import cite, cites, order, short

NEXT_CHARS = 200
#: What the agent's closing message says is still to do, at most this many sentences.
LEFT_SENTENCES = 2
CURRENT_MIN = 40

_LEFT = re.compile(
    r"\b(?:next steps?|still (?:need|needs|to do|open|pending|missing|failing|unverified)"
    r"|remaining|left to do|not (?:yet|been) (?:\w+ed|done|run|tested|verified|pushed|committed)"
    r"|outstanding|to ?do\b|follow[- ]up|unverified|untested|not (?:committed|pushed))",
    re.I,
)


def open_questions(turns: list[dict[str, Any]]) -> list[str]:
    """The questions the agent ended a turn with that no later request took up: those of
    the last turn, and an earlier one only when the next request went on to another
    subject without a word of it (``text.answers``)."""
    out = []
    for i, t in enumerate(turns):
        nxt = turns[i + 1].get("user_request") or "" if i + 1 < len(turns) else ""
        out += [
            cite(q["text"], q.get("label"))
            for q in t.get("questions", [])
            if not (nxt and answers(nxt, q["text"]))
        ]
    return out


def _unfixed(turns: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last turn's last failing command when the turn did nothing after it."""
    last = turns[-1] if turns else {}
    failures = last.get("failed_commands", [])
    if not failures:
        return None
    failed: dict[str, Any] = failures[-1]
    # Anything the turn did after the failure (a change, a commit, any run that passed)
    # may have dealt with it: only a failure that ends the turn's work is unresolved.
    after = [
        x.get("label")
        for x in [
            *last.get("passed_commands", []),
            *last.get("artifacts", []),
            *last.get("vcs", []),
        ]
        if x.get("action") != "read"
    ]
    if any(order(label) > order(failed.get("label")) for label in after):
        return None
    return failed


def _left(t: dict[str, Any]) -> list[str]:
    """What the agent's closing message says is still to do."""
    last = t.get("last_assistant")
    if not last:
        return []
    found = [s for s in sentences(last["text"]) if _LEFT.search(s) and not s.endswith("?")]
    return [cite(clip(s, NEXT_CHARS), last.get("label")) for s in found[:LEFT_SENTENCES]]


def next_step(turns: list[dict[str, Any]]) -> tuple[str, list[str], str]:
    """(next step, work in progress, current work) at the end of the session."""
    if not turns:
        return "", [], ""
    last = turns[-1]
    n = last.get("turn_number")
    labels = last.get("user_labels") or [None]
    if last.get("interrupted"):
        request = clip(" ".join((last.get("user_request") or "").split()), NEXT_CHARS)
        # The banner says it was cut off; this says how far it got.
        in_progress = [f"Turn {n} so far: {changes(last) or 'nothing changed yet'}"]
        call = last.get("unanswered_call")
        if call:
            shown = f"`{call['target']}`" if call.get("target") else str(call["tool"])
            in_progress.append(
                cite(f"Its last call has no result in the log: {shown}", call["label"])
            )
        step = f"Finish the user's last request (turn {n}): {cite(request, labels[0])}"
        current = ""
        words = last.get("last_assistant") or {}
        # The last words before a tool call, when they say more than "Now the tests.".
        if len(words.get("text", "")) >= CURRENT_MIN:
            current = cite(short(words["text"], 160), words.get("label"))
        return step, in_progress, current or end_state(turns)
    steps = [
        cite(f"Unresolved: the run ended in an error: {e['text']}", e.get("label"))
        for e in last.get("run_errors", [])
    ]
    failed = _unfixed(turns)
    if failed is not None:
        error = f": {failed['error']}" if failed.get("error") else ""
        steps.append(
            cite(
                f"Unresolved: `{short(failed['command'], 100)}` failed{error}", failed.get("label")
            )
        )
    questions = last.get("questions", [])
    if questions:
        q = questions[-1]
        steps.append("Answer the agent's question: " + cite(q["text"], q.get("label")))
    steps += _left(last)
    if not steps:
        answer = last.get("last_assistant") or {}
        steps = ["None pending: the last request was answered" + cites([answer.get("label")]) + "."]
    return " ".join(steps), [], end_state(turns)


def compaction_notes(turns: list[dict[str, Any]]) -> list[str]:
    """Each compaction and the turn it happened in; what its summary kept is listed with
    the restoration's compactions, read from the log (not repeated here)."""
    return [
        cite(f"Turn {t.get('turn_number')}: the context was compacted", c.get("label"))
        for t in turns
        for c in t.get("compactions", [])
    ]
