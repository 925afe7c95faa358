"""The SESSION SUMMARY as the rules write it from the turns' facts: the offline
provider's answer, the fallback of a failed synthesis, and what a model's summary is
merged with (``pipeline.stages.synthesizer.merge_deterministic``)."""

from __future__ import annotations

import re
from typing import Any

from .text import answers, clip, constraints, reverses, sentences
from .turn_summary import ruled_out_lines, turn_decisions
from .wording import VERB, capped, cite, cites, short

DONE_ITEMS = 40
ERROR_ITEMS = 20
DECISION_ITEMS = 8
FINDINGS = 3
EVIDENCE_FINDINGS = 1
#: Sizes of the synthesis's own lines: the summary must be read in one go.
GOAL_CHARS = 160
REQUEST_CHARS = 45
NEXT_CHARS = 240


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


def _changes(t: dict[str, Any]) -> str:
    """What a turn changed, by action; a file deleted and one created by the same call is
    a rename (``git mv``, a patch's move)."""
    by_action: dict[str, dict[str, str | None]] = {}
    for a in t.get("artifacts", []):
        if a["action"] != "read":
            by_action.setdefault(a["action"], {}).setdefault(a["path"], a.get("label"))
    created, deleted = by_action.get("created", {}), by_action.get("deleted", {})
    for path in created:  # a file made in this turn and then edited is just made
        by_action.get("edited", {}).pop(path, None)
    renames = []
    for old, label in list(deleted.items()):
        new = next((p for p, lb in created.items() if label and lb == label), None)
        if new is not None:
            renames.append(f"`{old}` → `{new}`{cites([label])}")
            del deleted[old], created[new]
    parts = [
        f"{action} " + ", ".join(f"`{p}`{cites([label])}" for p, label in files.items())
        for action, files in by_action.items()
        if files
    ]
    return "; ".join(parts + (["renamed " + ", ".join(renames)] if renames else []))


_COURTESY = re.compile(r"^(?:hi|hello|hey|thanks|thank you|ok|okay|great|good|cool)\b", re.I)


def _request_line(text: str) -> str:
    """A request in a few words: its first sentence that is not a greeting or a thanks."""
    parts = sentences(text) or [""]
    first = next((p for p in parts if not _COURTESY.match(p) or len(p.split()) > 6), parts[0])
    return clip(first, REQUEST_CHARS)


def _done(turns: list[dict[str, Any]]) -> list[str]:
    """One line per answered turn: the request and what changed (read-only work is not
    progress)."""
    out = []
    for t in turns:
        changes = _changes(t)
        if t.get("interrupted") or (t.get("failed_artifacts") and not changes):
            continue  # not answered, or every change it tried failed (listed as errors)
        labels = t.get("user_labels") or [None]
        request = _request_line(t.get("user_request") or "")
        line = f"Turn {t.get('turn_number')}: {cite(request, labels[0])}"
        out.append(f"{line} → {changes}" if changes else line)
    return out


_QUIET_FLAGS = re.compile(r"\s(?:-v+|-q+|--verbose|--quiet)(?=\s|$)")


def _run_key(command: str) -> str:
    """A command as the same run: whitespace and verbosity flags do not make another."""
    return _QUIET_FLAGS.sub("", " ".join(command.split()))


def _order(label: str | None) -> int:
    return int(label[1:]) if label and label[1:].isdigit() else 0


def _errors_and_fixes(turns: list[dict[str, Any]]) -> list[str]:
    """Each failing command once: its error, the turns it failed again, and the run that
    passed after it (the fix), with the files changed in between."""
    runs: dict[str, dict[str, Any]] = {}
    for t in turns:
        n = t.get("turn_number")
        events = [(_order(c.get("label")), 0, c) for c in t.get("failed_commands", [])]
        events += [(_order(a.get("label")), 1, a) for a in t.get("artifacts", [])]
        events += [(_order(c.get("label")), 2, c) for c in t.get("passed_commands", [])]
        for _, kind, x in sorted(events, key=lambda e: (e[0], e[1])):
            if kind == 0:
                run = runs.setdefault(_run_key(x["command"]), {"first": (n, x), "again": []})
                if run["first"][1] is not x:
                    run["again"].append((n, x.get("label")))
                run.update(fixed=None, edits={})
            elif kind == 1 and x["action"] != "read":
                for run in runs.values():
                    if run["fixed"] is None:
                        run["edits"].setdefault(x["path"], x.get("label"))
            elif kind == 2:
                passed = runs.get(_run_key(x["command"]))
                if passed is not None and passed["fixed"] is None:
                    passed["fixed"] = (n, x.get("label"))
    out = []
    for key, run in runs.items():
        n, c = run["first"]
        code = f" (exit {c['exit_code']})" if c.get("exit_code") else ""
        error = f": {c['error']}" if c.get("error") else ""
        line = cite(f"Turn {n}: `{short(key, 80)}` failed{code}{error}", c.get("label"))
        if run["again"]:
            line += "; again in turn " + ", ".join(
                f"{m}{cites([label])}" for m, label in run["again"][:3]
            )
        if run["fixed"] is not None:
            m, label = run["fixed"]
            edits = list(run["edits"].items())[-2:]
            after = (
                " after edits to " + ", ".join(f"`{p}`{cites([lb])}" for p, lb in edits)
                if edits
                else ""
            )
            line += f"; fixed: passes in turn {m}{cites([label])}{after}"
        out.append(line)
    for t in turns:
        n = t.get("turn_number")
        for a in t.get("failed_artifacts", []):
            if a["action"] != "read":
                verb = VERB.get(a["action"], a["action"])
                out.append(
                    cite(f"Turn {n}: tried to {verb} `{a['path']}`; it failed", a.get("label"))
                )
        out += [cite(f"Turn {n}: {e['text']}", e.get("label")) for e in t.get("errors", [])]
        out += ruled_out_lines(t)
    return out


_STRONG_FINDING = ("finding", "found", "noticed", "turns out", "worth")


def _findings(turns: list[dict[str, Any]], evidence: list[dict[str, Any]]) -> list[str]:
    found = [x for t in turns for x in t.get("findings", [])]
    strong = [x for x in found if any(w in x["text"].lower() for w in _STRONG_FINDING)]
    out = [cite(x["text"], x.get("label")) for x in strong[:FINDINGS]]
    return out + [x for item in evidence if (x := _finding(item))][:EVIDENCE_FINDINGS]


def _open_questions(turns: list[dict[str, Any]]) -> list[str]:
    """Questions the agent ended a turn with that the next request does not answer."""
    out = []
    for i, t in enumerate(turns):
        nxt = turns[i + 1].get("user_request") or "" if i + 1 < len(turns) else ""
        out += [
            cite(q["text"], q.get("label"))
            for q in t.get("questions", [])
            if not (nxt and answers(nxt, q["text"]))
        ]
    return out


def synthesis_from_facts(f: dict[str, Any]) -> dict[str, Any]:
    """The SESSION SUMMARY (as ``SessionSummary`` data) that the rules find in ``f``."""
    turns: list[dict[str, Any]] = f.get("parsed_turns", [])
    last = turns[-1] if turns else None
    in_progress: list[str] = []
    next_step = ""
    # What the agent was doing when cut off is in the turn's changes (in progress); its
    # last words before a tool call add nothing the next step does not say.
    current = ""
    if last is not None and last.get("interrupted"):
        labels = last.get("user_labels") or [None]
        request = clip(" ".join((last.get("user_request") or "").split()), NEXT_CHARS)
        changes = _changes(last)
        # The banner says it was cut off; this says how far it got.
        so_far = changes or "nothing changed yet"
        in_progress = [f"Turn {last.get('turn_number')} so far: {so_far}"]
        next_step = f"Finish the user's last request (turn {last.get('turn_number')})" + (
            f": {cite(request, labels[0])}"
        )
        if last.get("last_assistant"):
            current = cite(
                short(last["last_assistant"]["text"], 160), last["last_assistant"].get("label")
            )
    elif last is not None:
        answer = last.get("last_assistant") or {}
        next_step = (
            "None pending: the last request was answered" + cites([answer.get("label")]) + "."
        )
    failed = [f"Turn {n} could not be summarized" for n in f.get("failed_turns", [])]
    decisions = [
        {"decision": cite(d["text"], d.get("label")), "reason": d.get("reason", "")}
        for t in turns
        for d in turn_decisions(t)
    ]
    return {
        "goal": _goal(f, turns),
        "constraints_preferences": _constraints(turns),
        "progress": {
            "done": capped(_done(turns), DONE_ITEMS, "turns", keep_last=True),
            "in_progress": in_progress,
            "blocked": failed,
        },
        "key_decisions": decisions[-DECISION_ITEMS:],
        "errors_fixes_ruled_out": capped(
            _errors_and_fixes(turns), ERROR_ITEMS, "errors", keep_last=True
        ),
        "findings": _findings(turns, f.get("evidence", [])),
        "current_work": current,
        "next_step": next_step,
        "open_questions": _open_questions(turns),
        # The compaction points, with what each kept, are listed from the log itself.
        "compaction_notes": [],
    }
