"""AnthropicProvider against the real SDK over a MockTransport speaking the Messages format."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from pydantic import BaseModel

from opencode_restore.errors import ProviderError
from opencode_restore.llm.anthropic_provider import AnthropicProvider, structured_tool_name
from opencode_restore.llm.base import (
    ChatMessage,
    LLMRequest,
    SystemBlock,
    ToolCallRequest,
    ToolSpec,
)
from opencode_restore.llm.retry import RetryPolicy, call_with_retry
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.llm.strict_schema import strict_json_schema
from tests.llm.conftest import Recorder, SleepLog, anthropic_error, anthropic_reply

pytestmark = pytest.mark.anyio


class TurnVerdict(BaseModel):
    outcome: str
    files: list[str] = []


def provider(recorder: Recorder, **settings: Any) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-test", ProviderSettings(**settings), "sk-ant-test", http_client=recorder.client()
    )


def request(**kwargs: object) -> LLMRequest:
    return LLMRequest(messages=[ChatMessage("user", "Summarize turn 1")], **kwargs)  # type: ignore[arg-type]


async def test_success_maps_text_and_usage_with_cache_tokens() -> None:
    recorder = Recorder(
        [
            anthropic_reply(
                [{"type": "text", "text": "Fixed "}, {"type": "text", "text": "it."}],
                input_tokens=40,
                output_tokens=7,
                cache_read=3000,
                cache_write=120,
            )
        ]
    )
    result = await provider(recorder).complete(request(max_tokens=500))
    assert result.text == "Fixed it."
    assert result.model == "claude-test-4"
    assert result.finish_reason == "end_turn"
    usage = result.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (40, 7, 3000, 120)
    sent = recorder.requests[0]
    assert sent.url.path == "/v1/messages"
    assert "anthropic-version" in sent.headers
    body = recorder.body()
    assert body["max_tokens"] == 500
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Summarize turn 1"}]}
    ]
    assert "system" not in body
    assert "tools" not in body
    assert "temperature" not in body


async def test_null_cache_fields_count_as_zero() -> None:
    recorder = Recorder([anthropic_reply(cache_read=None, cache_write=None)])
    result = await provider(recorder).complete(request())
    assert (result.usage.cache_read, result.usage.cache_write) == (0, 0)


async def test_cache_control_lands_on_flagged_blocks_in_the_request_body() -> None:
    recorder = Recorder([anthropic_reply()])
    req = LLMRequest(
        system=[SystemBlock("rules", cache_breakpoint=True), SystemBlock("volatile note")],
        messages=[
            ChatMessage("user", "session header", cache_breakpoint=True),
            ChatMessage("user", "turn transcript"),
        ],
    )
    await provider(recorder).complete(req)
    body = recorder.body()
    assert body["system"] == [
        {"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "volatile note"},
    ]
    # Consecutive user messages merge into one turn; the flag stays on its own block.
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "session header", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "turn transcript"},
            ],
        }
    ]


async def test_at_most_four_breakpoints_keep_the_last_four() -> None:
    recorder = Recorder([anthropic_reply()])
    messages = []
    for number in range(6):
        role = "user" if number % 2 == 0 else "assistant"
        messages.append(ChatMessage(role, f"m{number}", cache_breakpoint=True))  # type: ignore[arg-type]
    req = LLMRequest(system=[SystemBlock("sys", cache_breakpoint=True)], messages=messages)
    await provider(recorder).complete(req)
    body = recorder.body()
    assert "cache_control" not in body["system"][0]
    flagged = [
        block["text"]
        for turn in body["messages"]
        for block in turn["content"]
        if "cache_control" in block
    ]
    assert flagged == ["m2", "m3", "m4", "m5"]


async def test_structured_output_uses_a_forced_tool() -> None:
    name = structured_tool_name(TurnVerdict)
    assert name == "emit_turn_verdict"
    tool_use = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": name,
        "input": {"outcome": "tests pass", "files": ["a.py"]},
    }
    recorder = Recorder([anthropic_reply([tool_use], stop_reason="tool_use")])
    result = await provider(recorder).complete(request(response_schema=TurnVerdict))
    assert result.parsed == TurnVerdict(outcome="tests pass", files=["a.py"])
    assert result.tool_calls == []
    body = recorder.body()
    assert body["tool_choice"] == {"type": "tool", "name": name}
    assert body["tools"][-1]["name"] == name
    assert body["tools"][-1]["input_schema"] == strict_json_schema(TurnVerdict)


async def test_invalid_forced_tool_input_leaves_parsed_none_and_keeps_json_text() -> None:
    tool_use = {"type": "tool_use", "id": "t", "name": "emit_turn_verdict", "input": {"files": 3}}
    recorder = Recorder([anthropic_reply([tool_use])])
    result = await provider(recorder).complete(request(response_schema=TurnVerdict))
    assert result.parsed is None
    assert result.text == '{"files": 3}'


async def test_prose_reply_to_a_schema_request_is_parsed_leniently() -> None:
    text = 'Here: {"outcome": "ok", "files": [],}'
    recorder = Recorder([anthropic_reply([{"type": "text", "text": text}])])
    result = await provider(recorder).complete(request(response_schema=TurnVerdict))
    assert result.parsed == TurnVerdict(outcome="ok")


async def test_empty_reply() -> None:
    recorder = Recorder([anthropic_reply([], output_tokens=0, stop_reason="max_tokens")])
    result = await provider(recorder).complete(request(response_schema=TurnVerdict))
    assert (result.text, result.parsed, result.finish_reason) == ("", None, "max_tokens")


async def test_native_tools_and_tool_results() -> None:
    tool_use = {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "a.py"}}
    recorder = Recorder([anthropic_reply([{"type": "text", "text": "Reading."}, tool_use])])
    history = [
        ChatMessage("system", "late system note", cache_breakpoint=True),
        ChatMessage("user", "go"),
        ChatMessage("assistant", "", tool_calls=[ToolCallRequest("toolu_1", "list_artifacts", {})]),
        ChatMessage("tool", "a.py", tool_call_id="toolu_1"),
        ChatMessage("user", "continue"),
    ]
    tools = [ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}})]
    result = await provider(recorder, temperature=0.3).complete(
        LLMRequest(messages=history, tools=tools, temperature=0.1)
    )
    assert result.text == "Reading."
    assert result.tool_calls == [ToolCallRequest("toolu_9", "read_file", {"path": "a.py"})]
    body = recorder.body()
    assert "temperature" not in body  # deprecated by the API, rejected by the SDK
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {}},
        }
    ]
    assert body["system"] == [
        {"type": "text", "text": "late system note", "cache_control": {"type": "ephemeral"}}
    ]
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "list_artifacts", "input": {}}
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"},
        {"type": "text", "text": "continue"},
    ]


async def test_text_tool_mode_sends_no_native_tools() -> None:
    recorder = Recorder([anthropic_reply()])
    llm = provider(recorder, tool_mode="text")
    await llm.complete(request(tools=[ToolSpec("read_file", "Read", {"type": "object"})]))
    assert llm.supports_native_tools is False
    assert "tools" not in recorder.body()


async def test_empty_user_message_is_not_sent_as_an_empty_block() -> None:
    recorder = Recorder([anthropic_reply()])
    await provider(recorder).complete(LLMRequest(messages=[ChatMessage("user", "")]))
    assert recorder.body()["messages"][0]["content"] == [{"type": "text", "text": "(empty)"}]


async def test_overloaded_529_then_success(policy: RetryPolicy, sleeps: SleepLog) -> None:
    recorder = Recorder(
        [anthropic_error(529, "Overloaded", {"retry-after-ms": "250"}), anthropic_reply()]
    )
    result = await call_with_retry(provider(recorder), request(), policy)
    assert result.attempts == 2
    assert sleeps.waits == [0.25]


async def test_5xx_until_retries_run_out_names_the_anthropic_message(policy: RetryPolicy) -> None:
    recorder = Recorder([anthropic_error(500, "Internal server error") for _ in range(3)])
    with pytest.raises(ProviderError) as info:
        await call_with_retry(provider(recorder), request(), policy)
    assert str(info.value) == "anthropic:claude-test (HTTP 500): Internal server error"
    assert len(recorder.requests) == 3


async def test_timeout_gives_up_without_status(policy: RetryPolicy) -> None:
    recorder = Recorder([httpx2.ReadTimeout("slow") for _ in range(3)])
    with pytest.raises(ProviderError) as info:
        await call_with_retry(provider(recorder), request(), policy)
    assert info.value.status is None
    assert info.value.provider == "anthropic"


async def test_bad_request_is_not_retried(policy: RetryPolicy) -> None:
    recorder = Recorder([anthropic_error(400, "messages: roles must alternate")])
    with pytest.raises(ProviderError, match="roles must alternate"):
        await call_with_retry(provider(recorder), request(), policy)
    assert len(recorder.requests) == 1


async def test_output_limit_above_the_model_maximum_is_capped_for_the_run() -> None:
    too_many = (
        "max_tokens: 16384 > 8192, which is the maximum allowed number of output tokens "
        "for claude-3-5-haiku-20241022"
    )
    recorder = Recorder([anthropic_error(400, too_many), anthropic_reply(), anthropic_reply()])
    notes: list[str] = []
    llm = AnthropicProvider(
        "claude-3-5-haiku",
        ProviderSettings(max_tokens=16384),
        "sk-ant-test",
        http_client=recorder.client(),
        notify=notes.append,
    )
    await llm.complete(request(max_tokens=16384))
    await llm.complete(request(max_tokens=16384))
    assert [r["max_tokens"] for r in map(recorder.body, range(3))] == [16384, 8192, 8192]
    assert len(notes) == 1
    assert "capped at 8192" in notes[0]
