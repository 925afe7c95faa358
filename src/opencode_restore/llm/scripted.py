"""`scripted`: a deterministic provider for tests; replies come from a list, requests are kept.

A script item is a `ScriptedReply`, or a shorthand: `str` (text), `dict` (a
structured reply, validated against the request's schema like a real provider
would), `ToolCallRequest` or a list of them, or an exception instance to raise.
When the script runs out, `auto=True` answers with a minimal valid instance of the
requested schema; otherwise the provider raises `ScriptExhaustedError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from opencode_restore.llm.base import LLMRequest, LLMResult, ToolCallRequest, json_schema
from opencode_restore.llm.retry import RETRYABLE_STATUS
from opencode_restore.llm.schema_instance import minimal_instance
from opencode_restore.llm.structured import parse_structured
from opencode_restore.model import Usage


@dataclass(slots=True)
class ScriptedReply:
    """One scripted answer; `error` is raised instead of answering when set."""

    text: str = ""
    parsed: dict[str, Any] | None = None
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = "stop"
    error: BaseException | None = None


ScriptItem = ScriptedReply | str | dict[str, Any] | ToolCallRequest | list[ToolCallRequest]
ScriptStep = ScriptItem | BaseException


class ScriptExhaustedError(AssertionError):
    """The test asked for more replies than it scripted."""


class ScriptedStatusError(Exception):
    """A fake HTTP failure; `should_retry` treats it like an SDK status error."""

    def __init__(self, status_code: int, message: str = "scripted failure") -> None:
        self.status_code = status_code
        super().__init__(message)


class ScriptedProvider:
    """Replays `script` in order and records every request in `requests`."""

    name = "scripted"
    #: Tests read the facts of the requests it recorded.
    reads_facts = True

    def __init__(
        self,
        script: Iterable[ScriptStep] = (),
        *,
        model: str = "scripted",
        auto: bool = False,
        supports_native_tools: bool = True,
    ) -> None:
        self.model = model
        self.auto = auto
        self.supports_native_tools = supports_native_tools
        self.script: list[ScriptStep] = list(script)
        self.requests: list[LLMRequest] = []

    def should_retry(self, exc: BaseException) -> bool:
        """Timeouts, connection errors and retryable scripted statuses."""
        if isinstance(exc, TimeoutError | ConnectionError):
            return True
        status = getattr(exc, "status_code", None)
        return isinstance(status, int) and (status in RETRYABLE_STATUS or status >= 500)

    async def complete(self, request: LLMRequest) -> LLMResult:
        """Answer with the next scripted step."""
        self.requests.append(request)
        if self.script:
            reply = _as_reply(self.script.pop(0))
        elif self.auto:
            reply = _auto_reply(request)
        else:
            raise ScriptExhaustedError(f"script exhausted after {len(self.requests) - 1} replies")
        if reply.error is not None:
            raise reply.error
        return self._result(request, reply)

    def _result(self, request: LLMRequest, reply: ScriptedReply) -> LLMResult:
        text = reply.text
        if reply.parsed is not None and not text:
            text = json.dumps(reply.parsed)
        parsed = None
        if request.response_schema is not None and text:
            parsed, _ = parse_structured(text, request.response_schema)
        usage = reply.usage or Usage(input=_estimate(request), output=len(text) // 4)
        return LLMResult(
            text=text,
            parsed=parsed,
            tool_calls=list(reply.tool_calls),
            usage=usage,
            model=self.model,
            finish_reason=reply.finish_reason,
        )


def _as_reply(step: ScriptStep) -> ScriptedReply:
    if isinstance(step, ScriptedReply):
        return step
    if isinstance(step, BaseException):
        return ScriptedReply(error=step)
    if isinstance(step, str):
        return ScriptedReply(text=step)
    if isinstance(step, ToolCallRequest):
        return ScriptedReply(tool_calls=[step], finish_reason="tool_calls")
    if isinstance(step, list):
        return ScriptedReply(tool_calls=step, finish_reason="tool_calls")
    return ScriptedReply(parsed=step)


def _auto_reply(request: LLMRequest) -> ScriptedReply:
    if request.response_schema is None:
        return ScriptedReply(text="ok")
    return ScriptedReply(parsed=minimal_instance(json_schema(request.response_schema)))


def _estimate(request: LLMRequest) -> int:
    chars = sum(len(block.text) for block in request.system)
    chars += sum(len(message.content) for message in request.messages)
    return round(chars / 3.5)
