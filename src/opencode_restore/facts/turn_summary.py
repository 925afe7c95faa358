"""A turn's TURN SUMMARY as the rules write it from the turn's facts (``turn.turn_facts``):
what the offline provider answers, and the fallback of a failed model call."""

from __future__ import annotations

import re
from typing import Any

from .wording import VERB, capped, cite, short

#: Caps on listed items; what a cap leaves out is counted in a line of its own.
TURN_OUTCOMES = 20
TURN_ERRORS = 10


def turn_summary(f: dict[str, Any]) -> dict[str, Any]:
    labels = f.get("user_labels") or []
    first_label = labels[0] if labels else None
    request = short(f.get("user_request") or "(no user request in this turn)")
    last = f.get("last_assistant")
    # One outcome per (action, file), citing every message that shows it.
    changed: dict[tuple[str, str], list[str]] = {}
    for a in f.get("artifacts", []):
        if a["action"] != "read":
            labels = changed.setdefault((a["action"], a["path"]), [])
            if a.get("label") and a["label"] not in labels:
                labels.append(a["label"])
    outcomes = [
        f"{action.capitalize()} `{path}`" + (f" [{', '.join(labels)}]" if labels else "")
        for (action, path), labels in changed.items()
    ]
    shown = {label for labels in changed.values() for label in labels}
    for c in f.get("commands", []):
        if c["command"].lstrip().startswith("apply_patch") and c.get("label") in shown:
            continue  # a patch applied through the shell: its files are listed above
        status = ""
        if c.get("exit_code") is not None:
            status = f" (exit {c['exit_code']})"
        elif c.get("is_error"):
            status = " (failed)"
        outcomes.append(cite(f"Ran `{short(c['command'], 120)}`{status}", c.get("label")))
    outcomes += _history(f)
    if last:
        response = cite(short(last["text"]), last.get("label"))
    elif outcomes:
        response = "Worked with tools only; no reply text in this turn."
    else:
        response = "No agent response recorded in this turn."
    # Attempts whose tool call failed are not outcomes (nothing changed), but they matter.
    errors = [
        cite(
            f"Tried to {VERB.get(a['action'], a['action'])} `{a['path']}`; it failed",
            a.get("label"),
        )
        for a in f.get("failed_artifacts", [])
        if a["action"] != "read"
    ]
    errors += [cite(f"Error seen: {e['text']}", e.get("label")) for e in f.get("errors", [])]
    errors += [
        cite(f"The user reported: “{e['text']}”", e.get("label"))
        for e in f.get("pasted_errors", [])
    ]
    errors += [
        cite(
            f"`{short(r['command'], 100)}` was refused before it ran"
            + (" by the user" if r.get("by") == "user" else " by an approval rule or reviewer")
            + (f": {r['reason']}" if r.get("reason") else ""),
            r.get("label"),
        )
        for r in f.get("refused_commands", [])
    ]
    changes = [
        cite(f"Context compacted: {short(c['summary'], 160)}", c.get("label"))
        for c in f.get("compactions", [])
    ]
    return {
        "turn_number": f.get("turn_number", 0),
        "user_request_summary": cite(request, first_label),
        "agent_response_summary": response,
        "key_outcomes": capped(outcomes, TURN_OUTCOMES, "outcomes of this turn"),
        "state_changes": changes,
        "artifacts_modified": [
            {"path": a["path"], "note": cite(a["action"], a.get("label"))}
            for a in f.get("artifacts", [])
            if a["action"] != "read"
        ],
        "constraints_assumptions_added": [
            cite(c["text"], c.get("label")) for c in f.get("constraints", [])
        ],
        "decisions": [
            {"decision": cite(d["text"], d.get("label")), "reason": d.get("reason", "")}
            for d in turn_decisions(f)
        ],
        "errors_and_fixes": capped(
            errors + _failures(f) + ruled_out_lines(f), TURN_ERRORS, "errors of this turn"
        ),
        "open_questions": [cite(q["text"], q.get("label")) for q in f.get("questions", [])],
        "resolved_questions": [],
    }


def _history(f: dict[str, Any]) -> list[str]:
    """The turn's commits, pushes and pull requests (``vcs.events``), as outcomes."""
    out = []
    for e in f.get("vcs", []):
        if e["kind"] == "commit":
            verb = "Amended the commit as" if e.get("amend") else "Committed"
            out.append(cite(f"{verb} `{e['sha']}` “{short(e['subject'], 90)}”", e.get("label")))
        elif e["kind"] == "push":
            out.append(cite("Pushed", e.get("label")))
        elif e["kind"] in ("pr_opened", "pr_merged"):
            verb = "Opened" if e["kind"] == "pr_opened" else "Merged"
            out.append(cite(f"{verb} PR #{e['number']}", e.get("label")))
    return out


def _failures(f: dict[str, Any]) -> list[str]:
    out = []
    for c in f.get("failed_commands", []):
        code = f" (exit {c['exit_code']})" if c.get("exit_code") else ""
        error = f": {c['error']}" if c.get("error") else ""
        out.append(cite(f"`{short(c['command'], 100)}` failed{code}{error}", c.get("label")))
    return out


def ruled_out_lines(f: dict[str, Any]) -> list[str]:
    return [cite(f"Ruled out: {r['text']}", r.get("label")) for r in f.get("ruled_out", [])[:1]]


_EXPLICIT = ("decision", "decided", "decide")


def turn_decisions(f: dict[str, Any]) -> list[dict[str, Any]]:
    """At most two decisions a turn: the ones the agent calls decisions first, then the
    others in order; one that repeats the code names of one kept is left out."""
    found: list[dict[str, Any]] = f.get("decisions", [])
    ranked = sorted(found, key=lambda d: not any(w in d["text"].lower() for w in _EXPLICIT))
    kept: list[dict[str, Any]] = []
    for d in ranked:
        names = set(re.findall(r"`([^`]+)`", d["text"]))
        if names and any(names <= set(re.findall(r"`([^`]+)`", k["text"])) for k in kept):
            continue
        kept.append(d)
        if len(kept) == 2:
            break
    return sorted(kept, key=found.index)


def range_summary(f: dict[str, Any]) -> dict[str, Any]:
    """Earlier turns folded into one block: a line per turn."""
    lines = [
        f"Turn {t['turn_number']}: {t['user_request_summary']} → {t['agent_response_summary']}"
        for t in f.get("turn_summaries", [])
    ]
    return {"summary": "\n".join(lines)}
