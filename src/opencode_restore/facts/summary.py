"""The SESSION SUMMARY as the rules write it from the turns' facts: the offline
provider's answer, the fallback of a failed synthesis, and what a model's summary is
merged with (``pipeline.stages.synthesizer.merge_deterministic``)."""

from __future__ import annotations

import re
from typing import Any

from .decisions import key_decisions
from .fixes import errors_and_fixes
from .progress import done
from .state import compaction_notes, next_step, open_questions
from .text import clip, constraints, reverses, sentences
from .wording import capped, cite, cites, short

DONE_ITEMS = 40
ERROR_ITEMS = 20
FINDINGS = 3
EVIDENCE_FINDINGS = 1
#: Sizes of the synthesis's own lines: the summary must be read in one go.
GOAL_CHARS = 220


def _finding(item: dict[str, Any]) -> str | None:
    """An evidence result as a finding: what was found and where, cited; None if nothing."""
    labels = item.get("citations") or []
    result = str(item.get("result", ""))
    head = result.split("\n", 1)[0].split(" (", 1)[0].rstrip(":")
    if not labels or head.startswith("0 hit"):
        return None
    cite = f" [{', '.join(labels[:5])}]"
    if item.get("tool") != "READ_FILE":
        # Hit counts of the offline pass's own log searches (errors, repeated commands)
        # say nothing the errors and fixes above do not.
        return None
    path, _, lines = head.partition(", ")
    return f"Read `{short(path, 100)}` ({lines}) in the workspace; the log touches it at{cite}"


_GREETING = re.compile(r"(?:hi|hello|hey|thanks|thank you)\b\W*", re.I)


def _goal(f: dict[str, Any], turns: list[dict[str, Any]]) -> str:
    """The first request without its rules (they are listed as constraints), cited."""
    first = f.get("first_request")
    if not first:
        return "(no user request found in the log)"
    kept = [
        s
        for s in sentences(first["text"])
        if not constraints(s) and not s.endswith(":") and not _GREETING.fullmatch(s)
    ]
    return cite(clip(" ".join(kept) or first["text"], GOAL_CHARS), first.get("label"))


def _rejected(r: dict[str, Any]) -> str:
    return f"{r['tool']} of `{r['target']}`" if r.get("target") else str(r["tool"])


def _constraints(turns: list[dict[str, Any]]) -> list[str]:
    """The user's rules still in force: a later reversal drops the earlier rule it names."""
    held: list[dict[str, Any]] = []
    for t in turns:
        for r in t.get("reversals", []):
            held = [c for c in held if not reverses(r["text"], c["text"])]
        for c in t.get("constraints", []):
            if all(c["text"] != h["text"] for h in held):
                held.append(c)
    out = [cite(c["text"], c.get("label")) for c in held]
    out += [
        cite(
            f"Rejecting {_rejected(r)}, the user said: “{r['user_said']}”",
            r.get("label"),
        )
        for t in turns
        for r in t.get("rejected", [])
        if r.get("user_said")
    ]
    shown = " ".join(out)
    named = [
        f"`{i['text']}`{cites([i.get('label')])}"
        for t in turns
        for i in t.get("identifiers", [])
        if i["text"] not in shown
    ]
    if named:
        out.append("Identifiers the user named: " + ", ".join(dict.fromkeys(named)))
    return out


_STRONG_FINDING = ("finding", "found", "noticed", "turns out", "worth")


def _findings(turns: list[dict[str, Any]], evidence: list[dict[str, Any]]) -> list[str]:
    found = [x for t in turns for x in t.get("findings", [])]
    strong = [x for x in found if any(w in x["text"].lower() for w in _STRONG_FINDING)]
    out = [cite(x["text"], x.get("label")) for x in strong[:FINDINGS]]
    return out + [x for item in evidence if (x := _finding(item))][:EVIDENCE_FINDINGS]


def synthesis_from_facts(f: dict[str, Any]) -> dict[str, Any]:
    """The SESSION SUMMARY (as ``SessionSummary`` data) that the rules find in ``f``."""
    turns: list[dict[str, Any]] = f.get("parsed_turns", [])
    step, in_progress, current = next_step(turns)
    goal_label = (f.get("first_request") or {}).get("label")
    return {
        "goal": _goal(f, turns),
        "constraints_preferences": _constraints(turns),
        "progress": {
            "done": capped(done(turns, goal_label), DONE_ITEMS, "turns", keep_last=True),
            "in_progress": in_progress,
            # A turn the model could not summarize is a failed call, not work the session
            # was blocked on: the summary's "Incomplete" line names it (and the error).
            "blocked": [],
        },
        "key_decisions": key_decisions(turns),
        "errors_fixes_ruled_out": capped(
            errors_and_fixes(turns), ERROR_ITEMS, "errors", keep_last=True
        ),
        "findings": _findings(turns, f.get("evidence", [])),
        "current_work": current,
        "next_step": step,
        "open_questions": open_questions(turns),
        "compaction_notes": compaction_notes(turns),
    }
