"""The offline provider: deterministic, no network, the default with no API key.

It answers each stage from the facts the pipeline attaches to the request (the user's
request, files, commands, errors seen in tool results, the last assistant text), so a user
without a key still gets a cited restore. It speaks the same protocol as the real
providers: the pipeline cannot tell the difference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model import Usage
from ..timeline.numbering import uncite
from .base import LLMRequest, LLMResult, ToolCallRequest

# Rough prompt size accounting so the progress bar and ledgers show something honest.
_CHARS_PER_TOKEN = 3.5
#: Caps on listed items; what a cap leaves out is counted in a line of its own.
TURN_OUTCOMES = 20
TURN_ERRORS = 10
DONE_ITEMS = 40
ERROR_ITEMS = 20


def _cite(text: str, label: str | None) -> str:
    # Log text copied into the summary must not cite: only the labels added here do.
    return f"{uncite(text)} [{label}]" if label else uncite(text)


def _short(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _capped(items: list[str], limit: int, what: str, keep_last: bool = False) -> list[str]:
    """At most ``limit`` items; when some are left out, a last (or first) line says how many."""
    if len(items) <= limit:
        return items
    left_out = len(items) - (limit - 1)
    if keep_last:
        return [f"({left_out} earlier {what} not listed here)", *items[-(limit - 1) :]]
    return [*items[: limit - 1], f"(and {left_out} more {what} not listed here)"]


_VERB = {"edited": "edit", "created": "create", "deleted": "delete"}


def _turn_summary(f: dict[str, Any]) -> dict[str, Any]:
    labels = f.get("user_labels") or []
    first_label = labels[0] if labels else None
    request = _short(f.get("user_request") or "(no user request in this turn)")
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
        outcomes.append(_cite(f"Ran `{_short(c['command'], 120)}`{status}", c.get("label")))
    if last:
        response = _cite(_short(last["text"]), last.get("label"))
    elif outcomes:
        response = "Worked with tools only; no reply text in this turn."
    else:
        response = "No agent response recorded in this turn."
    # Attempts whose tool call failed are not outcomes (nothing changed), but they matter.
    errors = [
        _cite(
            f"Tried to {_VERB.get(a['action'], a['action'])} `{a['path']}`; it failed",
            a.get("label"),
        )
        for a in f.get("failed_artifacts", [])
        if a["action"] != "read"
    ]
    errors += [_cite(f"Error seen: {e['text']}", e.get("label")) for e in f.get("errors", [])]
    changes = [
        _cite(f"Context compacted: {_short(c['summary'], 160)}", c.get("label"))
        for c in f.get("compactions", [])
    ]
    return {
        "turn_number": f.get("turn_number", 0),
        "user_request_summary": _cite(request, first_label),
        "agent_response_summary": response,
        "key_outcomes": _capped(outcomes, TURN_OUTCOMES, "outcomes of this turn"),
        "state_changes": changes,
        "artifacts_modified": [
            {"path": a["path"], "note": _cite(a["action"], a.get("label"))}
            for a in f.get("artifacts", [])
            if a["action"] != "read"
        ],
        "constraints_assumptions_added": [],
        "decisions": [],
        "errors_and_fixes": _capped(errors, TURN_ERRORS, "errors of this turn"),
        "open_questions": [],
        "resolved_questions": [],
    }


def _finding(item: dict[str, Any]) -> str | None:
    """An evidence result as a finding: what was found and where, cited; None if nothing."""
    labels = item.get("citations") or []
    result = str(item.get("result", ""))
    head = result.split("\n", 1)[0].split(" (", 1)[0].rstrip(":")
    if not labels or head.startswith("0 hit"):
        return None
    cite = f" [{', '.join(labels[:5])}]"
    query = str(item.get("query", ""))
    if item.get("tool") == "READ_FILE":
        path, _, lines = head.partition(", ")
        return f"Read `{_short(path, 100)}` ({lines}) in the workspace; the log touches it at{cite}"
    # The offline pass's own error pattern is long and unreadable: name it instead.
    what = "errors" if "Traceback" in query else f"`{_short(query, 60)}`"
    return f"Log search for {what}: {_short(uncite(head), 80)}{cite}"


def _synthesis(f: dict[str, Any]) -> dict[str, Any]:
    turns: list[dict[str, Any]] = f.get("turn_summaries", [])
    first = f.get("first_request")
    if turns and (turns[0].get("turn_number") == 1 or not first):
        goal = turns[0]["user_request_summary"]
    elif first:  # the first turn failed: its request is still a fact of the log
        goal = _cite(_short(first["text"], 400), first.get("label"))
    else:
        goal = "(no user request found in the log)"
    done = [o for t in turns for o in t.get("key_outcomes", [])]
    errors: list[str] = []
    for t in turns:
        errors.extend(t.get("errors_and_fixes", []))
    last = turns[-1] if turns else None
    current = last["agent_response_summary"] if last else ""
    failed = [f"Turn {n} could not be summarized" for n in f.get("failed_turns", [])]
    compactions = [
        c for t in turns for c in t.get("state_changes", []) if c.startswith("Context compacted")
    ]
    findings = [found for item in f.get("evidence", []) if (found := _finding(item))]
    return {
        "goal": goal,
        "constraints_preferences": f.get("constraints", []),
        "progress": {
            "done": _capped(done, DONE_ITEMS, "outcomes", keep_last=True),
            "in_progress": [last["user_request_summary"]] if last else [],
            "blocked": failed,
        },
        "key_decisions": f.get("decisions", []),
        "errors_fixes_ruled_out": _capped(errors, ERROR_ITEMS, "errors", keep_last=True),
        "findings": findings,
        "current_work": current,
        "next_step": "",
        "open_questions": f.get("open_questions", []),
        "compaction_notes": compactions,
    }


def _range_summary(f: dict[str, Any]) -> dict[str, Any]:
    lines = [
        f"Turn {t['turn_number']}: {t['user_request_summary']} → {t['agent_response_summary']}"
        for t in f.get("turn_summaries", [])
    ]
    return {"summary": "\n".join(lines)}


_STAGES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "turn_summary": _turn_summary,
    "synthesis": _synthesis,
    "range_summary": _range_summary,
}


class OfflineProvider:
    """A deterministic provider that needs no network and no key."""

    name = "offline"
    supports_native_tools = True
    #: It writes its answers from ``LLMRequest.facts`` (network providers never see them).
    reads_facts = True

    def __init__(self, model: str = "rules") -> None:
        self.model = model

    async def complete(self, request: LLMRequest) -> LLMResult:
        """Answer from ``request.facts``; evidence search uses its planned tool calls."""
        prompt_chars = sum(len(b.text) for b in request.system) + sum(
            len(m.content) for m in request.messages
        )
        usage = Usage(input=int(prompt_chars / _CHARS_PER_TOKEN))
        if request.stage == "evidence":
            return self._evidence(request, usage)
        build = _STAGES.get(request.stage)
        data = build(request.facts) if build is not None else {}
        if request.response_schema is None:
            text = str(data.get("summary", "")) if data else ""
            return LLMResult(text=text, usage=usage, model=self.model, finish_reason="stop")
        parsed = request.response_schema.model_validate(data)
        text = parsed.model_dump_json()
        usage.output = int(len(text) / _CHARS_PER_TOKEN)
        return LLMResult(
            text=text, parsed=parsed, usage=usage, model=self.model, finish_reason="stop"
        )

    def _evidence(self, request: LLMRequest, usage: Usage) -> LLMResult:
        # The pipeline plans the deterministic searches; this provider issues them one
        # per call (as a model would), then completes.
        planned: list[dict[str, Any]] = request.facts.get("planned_tool_calls", [])
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < len(planned):
            call = planned[done]
            return LLMResult(
                text="",
                tool_calls=[ToolCallRequest(f"offline-{done}", call["name"], call["arguments"])],
                usage=usage,
                model=self.model,
                finish_reason="tool_calls",
            )
        return LLMResult(
            text="",
            tool_calls=[ToolCallRequest(f"offline-{done}", "COMPLETE_EVIDENCE_SEARCH", {})],
            usage=usage,
            model=self.model,
            finish_reason="tool_calls",
        )

    def should_retry(self, exc: BaseException) -> bool:
        """Nothing offline is transient."""
        return False
