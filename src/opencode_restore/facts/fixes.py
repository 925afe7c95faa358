"""Errors, fixes and ruled-out approaches: each failing command once with the run that
later passed (its fix), attempts that failed, errors the user pasted and what the turn
changed in answer, and approaches the agent ruled out (unless later work took them up)."""

from __future__ import annotations

import re
from typing import Any

from .decisions import later_texts, stale
from .progress import changes
from .wording import VERB, cite, cites, order, short

# A command the shell could not parse (an unclosed quote, a stray token): the agent's own
# typing slip, retried at once; it says nothing about the work.
_SLIP = re.compile(
    r"unexpected EOF while looking for matching|syntax error near unexpected token"
    r"|unterminated quoted string|unmatched [\"']|bad substitution",
    re.I,
)

_QUIET_FLAGS = re.compile(r"\s(?:-v+|-q+|--verbose|--quiet)(?=\s|$)")


def _run_key(command: str) -> str:
    """A command as the same run: whitespace and verbosity flags do not make another."""
    return _QUIET_FLAGS.sub("", " ".join(command.split()))


def errors_and_fixes(turns: list[dict[str, Any]]) -> list[str]:
    """Each failing command once: its error, the turns it failed again, and the run that
    passed after it (the fix), with the files changed in between."""
    runs: dict[str, dict[str, Any]] = {}
    refusals: dict[str, list[tuple[Any, dict[str, Any]]]] = {}
    later = later_texts(turns)
    for t in turns:
        n = t.get("turn_number")
        events = [(order(c.get("label")), 0, c) for c in t.get("failed_commands", [])]
        events += [(order(a.get("label")), 1, a) for a in t.get("artifacts", [])]
        events += [(order(c.get("label")), 2, c) for c in t.get("passed_commands", [])]
        for _, kind, x in sorted(events, key=lambda e: (e[0], e[1])):
            if kind == 0 and _SLIP.search(x.get("error") or ""):
                continue  # a quoting slip of the agent's, not a failure of the work
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
        out += _reported(t)
        for r in t.get("refused_commands", []):
            if r.get("by") == "policy":
                refusals.setdefault(r.get("reason") or "", []).append((n, r))
        out += [
            cite(f"Turn {n}: ruled out: {r['text']}", r.get("label"))
            for r in t.get("ruled_out", [])[:1]
            if not stale(r["text"], later.get(t.get("turn_number", 0), []))
        ]
    for reason, refused in refusals.items():
        runs_of = ", ".join(
            f"`{short(r['command'], 60)}` (turn {n}){cites([r.get('label')])}" for n, r in refused
        )
        why = f": {reason}" if reason else ""
        out.append(
            f"Refused before they ran, by an approval rule or reviewer (not the user): {runs_of}"
            f"{why}"
        )
    return out


def _reported(t: dict[str, Any]) -> list[str]:
    """Errors the user pasted, each with what the turn changed in answer (its fix, as far
    as the log shows: the files changed and the agent's account)."""
    reported = t.get("pasted_errors", [])
    if not reported:
        return []
    n = t.get("turn_number")
    quoted = "; ".join(f"“{e['text']}”" for e in reported)
    line = cite(f"Turn {n}: the user reported {quoted}", reported[0].get("label"))
    made = changes(t)
    if made and not t.get("interrupted"):
        line += f"; the turn then {made}"
    return [line]
