"""What a session did to version control, read from the output of its commands: the
commits it made (``[branch sha] subject``), pushes that went through, pull requests it
opened or merged. These are the identifiers a successor needs, and the log states them
exactly, so they are kept whatever else is cut."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from ..model import Message, Turn
from .errors import output_body

# git's own report of a commit: "[main 37016ac] subject" or "[main (root-commit) 1a2b3c4] …".
_COMMIT = regex.compile(r"(?m)^\[([^\]\s]+)(?: \([^)\n]*\))? ([0-9a-f]{7,40})\] ([^\n]{1,200})$")
# A push that did not go through says so even where the log has no exit status.
_REJECTED_PUSH = regex.compile(
    r"\[(?:remote )?rejected\]|error: failed to push|^fatal:", regex.I | regex.M
)
_PR_URL = regex.compile(r"https://github\.com/[\w.-]+/[\w.-]+/pull/(\d+)")
_GIT_PUSH = regex.compile(r"(?:^|[;&|(]\s*|\s)git(?:\s+-C\s+\S+)?\s+push\b")
_GIT_COMMIT = regex.compile(r"(?:^|[;&|(]\s*|\s)git(?:\s+-C\s+\S+)?\s+commit\b")
_GIT_STATUS = regex.compile(r"(?:^|[;&|(]\s*|\s)git(?:\s+-C\s+\S+)?\s+status\b")
# ``git status`` in its short form ("?? path", " M path") and its long form (the
# "Untracked files:" and "Changes not staged" sections, "\tmodified:   path").
_SHORT_ENTRY = regex.compile(r"(?m)^([ MADRCU?!]{2}) (\S.*)$")
_LONG_MODIFIED = regex.compile(r"(?m)^\t(?:modified|deleted|new file|renamed):\s+(\S.*)$")
# A section headed "Untracked files:" (git) or any "Untracked" heading a wrapper prints,
# then its indented paths.
_UNTRACKED = regex.compile(r"(?im)^[^\n]*\buntracked\b[^\n]*\n((?:[ \t]+\S[^\n]*\n?)+)")
_LISTED = regex.compile(r"^[\w.~/-][^\s]*$")
# A commit that takes every change with it (``git add -A``, ``git add .``, ``commit -a``).
_ALL = regex.compile(r"\bgit\s+add\s+(?:-A|--all|\.(?:\s|$))|\bcommit\s+(?:-\w*a\b|--all)")
#: Paths a status lists, kept per kind.
STATUS_PATHS = 3
_GH_PR = regex.compile(r"\bgh\s+pr\s+(create|merge)\b(?:\s+(\d+))?")


def status(output: str) -> dict[str, Any]:
    """What a ``git status`` output lists as not committed: changed and untracked paths."""
    text = output[:100_000]
    changed: list[str] = []
    untracked: list[str] = []
    for code, path in _SHORT_ENTRY.findall(text):
        (untracked if code == "??" else changed).append(path.strip())
    changed += [p.strip() for p in _LONG_MODIFIED.findall(text)]
    block = _UNTRACKED.search(text)
    if block is not None:
        listed = [p.strip() for p in block.group(1).splitlines()]
        untracked += [p for p in listed if _LISTED.match(p)]
        more = sum(int(m) for p in listed for m in regex.findall(r"\+(\d+) more", p))
    else:
        more = 0
    return {
        "changed": list(dict.fromkeys(changed))[:STATUS_PATHS],
        "untracked": list(dict.fromkeys(untracked))[:STATUS_PATHS],
        "counts": [len(set(changed)), len(set(untracked)) + more],
    }


def _results(turn: Turn) -> dict[str, Message]:
    return {m.tool_call_id: m for m in turn.messages if m.type == "tool_result" and m.tool_call_id}


def events(
    turn: Turn, lab: Callable[[str], str | None], failed: Callable[[str, Any, str], bool]
) -> list[dict[str, Any]]:
    """The turn's commits, pushes and pull requests, in order, each with its label.

    ``failed(command, run, output)`` says whether a run failed (``errors.command_failed``
    over the run's exit status): a failed push or PR command is no event.
    """
    results = _results(turn)
    calls = {m.id: m for m in turn.messages if m.type == "tool_use"}
    out: list[dict[str, Any]] = []
    for run in turn.commands:
        call = calls.get(run.message_id)
        res = results.get(call.tool_call_id) if call is not None and call.tool_call_id else None
        output = res.text if res is not None else ""
        label = lab(run.message_id)
        bad = failed(run.command, run, output)
        if _GIT_COMMIT.search(run.command) or _COMMIT.search(output):
            amend = "--amend" in run.command
            everything = bool(_ALL.search(run.command))
            for m in _COMMIT.finditer(output[:200_000]):
                branch, sha, subject = m.group(1), m.group(2), m.group(3).strip()
                out.append(
                    {
                        "kind": "commit",
                        "sha": sha,
                        "branch": branch,
                        "subject": subject,
                        "amend": amend,
                        "all": everything,
                        "label": label,
                    }
                )
        pushed = _GIT_PUSH.search(run.command) and res is not None and not bad
        if pushed and not _REJECTED_PUSH.search(output):
            out.append({"kind": "push", "label": label})
        if _GIT_STATUS.search(run.command) and res is not None and not bad:
            out.append({"kind": "status", "label": label, **status(output_body(output))})
        pr = _GH_PR.search(run.command)
        if pr is not None and not bad:
            url = _PR_URL.search(output) or _PR_URL.search(run.command)
            number = (url.group(1) if url else None) or pr.group(2)
            if number:
                kind = "pr_opened" if pr.group(1) == "create" else "pr_merged"
                out.append({"kind": kind, "number": number, "label": label})
    return out
