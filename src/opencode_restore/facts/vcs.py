"""What a session did to version control, read from the output of its commands: the
commits it made (``[branch sha] subject``), pushes that went through, pull requests it
opened or merged. These are the identifiers a successor needs, and the log states them
exactly, so they are kept whatever else is cut."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from ..model import Message, Turn

# git's own report of a commit: "[main 37016ac] subject" or "[main (root-commit) 1a2b3c4] …".
_COMMIT = regex.compile(r"(?m)^\[([^\]\s]+)(?: \([^)\n]*\))? ([0-9a-f]{7,40})\] ([^\n]{1,200})$")
# A push that did not go through says so even where the log has no exit status.
_REJECTED_PUSH = regex.compile(
    r"\[(?:remote )?rejected\]|error: failed to push|^fatal:", regex.I | regex.M
)
_PR_URL = regex.compile(r"https://github\.com/[\w.-]+/[\w.-]+/pull/(\d+)")
_GIT_PUSH = regex.compile(r"(?:^|[;&|(]\s*|\s)git(?:\s+-C\s+\S+)?\s+push\b")
_GIT_COMMIT = regex.compile(r"(?:^|[;&|(]\s*|\s)git(?:\s+-C\s+\S+)?\s+commit\b")
_GH_PR = regex.compile(r"\bgh\s+pr\s+(create|merge)\b(?:\s+(\d+))?")


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
            for m in _COMMIT.finditer(output[:200_000]):
                branch, sha, subject = m.group(1), m.group(2), m.group(3).strip()
                out.append(
                    {
                        "kind": "commit",
                        "sha": sha,
                        "branch": branch,
                        "subject": subject,
                        "amend": amend,
                        "label": label,
                    }
                )
        pushed = _GIT_PUSH.search(run.command) and res is not None and not bad
        if pushed and not _REJECTED_PUSH.search(output):
            out.append({"kind": "push", "label": label})
        pr = _GH_PR.search(run.command)
        if pr is not None and not bad:
            url = _PR_URL.search(output) or _PR_URL.search(run.command)
            number = (url.group(1) if url else None) or pr.group(2)
            if number:
                kind = "pr_opened" if pr.group(1) == "create" else "pr_merged"
                out.append({"kind": kind, "number": number, "label": label})
    return out
