"""The offline provider: deterministic, no network, the default with no API key.

It answers each stage from the facts the pipeline attaches to the request (the user's
request, files, commands, errors seen in tool results, the last assistant text), so a user
without a key still gets a cited restore. What it writes is the fact rules' own wording
(``opencode_restore.facts``); this module only speaks the providers' protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..facts.summary import synthesis_from_facts
from ..facts.turn_summary import range_summary, turn_summary
from ..model import Usage
from .base import LLMRequest, LLMResult, ToolCallRequest

# A rough size of each request, as a model's usage would report it: the context budget
# learns its characters-per-token factor from it (``pipeline.budget``); the ledger counts
# offline answers apart and spends nothing on them (``llm.usage``).
_CHARS_PER_TOKEN = 3.5

_STAGES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "turn_summary": turn_summary,
    "synthesis": synthesis_from_facts,
    "range_summary": range_summary,
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
