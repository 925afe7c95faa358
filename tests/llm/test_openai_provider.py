"""OpenAIProvider against the real SDK over a MockTransport speaking the Chat Completions format."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import openai
import pytest
from pydantic import BaseModel

from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import (
    ChatMessage,
    LLMRequest,
    SystemBlock,
    ToolCallRequest,
    ToolSpec,
    ToolsUnsupportedError,
)
from opencode_restore.llm.openai_provider import OpenAIProvider
from opencode_restore.llm.retry import RetryPolicy, call_with_retry, error_message
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.llm.strict_schema import MAX_STRING_CHARS
from opencode_restore.llm.usage import UsageLedger
from opencode_restore.llm.window import Overflow, parse_overflow
from tests.fakes.sse import completion_events
from tests.llm.conftest import Recorder, SleepLog, openai_error, openai_reply, streamed_if_asked

pytestmark = pytest.mark.anyio


class Verdict(BaseModel):
    outcome: str
    score: int


# What json_object carries for llama.cpp's grammar: the strict schema, strings bounded.
VERDICT_GRAMMAR = {
    "additionalProperties": False,
    "properties": {
        "outcome": {"maxLength": MAX_STRING_CHARS, "title": "Outcome", "type": "string"},
        "score": {"title": "Score", "type": "integer"},
    },
    "required": ["outcome", "score"],
    "title": "Verdict",
    "type": "object",
}


def provider(recorder: Recorder, **settings: Any) -> OpenAIProvider:
    return OpenAIProvider(
        "gpt-test", ProviderSettings(**settings), "sk-test", http_client=recorder.client()
    )


def request(**kwargs: object) -> LLMRequest:
    return LLMRequest(messages=[ChatMessage("user", "Summarize turn 3")], **kwargs)  # type: ignore[arg-type]


async def test_success_maps_text_usage_and_sends_chat_completion() -> None:
    recorder = Recorder([openai_reply("Turn 3 fixed the parser.", prompt=1500, cached=1024)])
    result = await provider(recorder).complete(
        request(system=[SystemBlock("You are a summarizer.")], max_tokens=300, cache_key="sess-1")
    )
    assert result.text == "Turn 3 fixed the parser."
    assert result.parsed is None
    assert result.model == "gpt-test-2026"
    assert result.finish_reason == "stop"
    assert (result.usage.input, result.usage.cache_read, result.usage.output) == (476, 1024, 20)
    sent = recorder.requests[0]
    assert sent.url.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["x-stainless-retry-count"] == "0"
    assert sent.headers["content-type"] == "application/json"
    body = recorder.body()
    assert body["model"] == "gpt-test"
    assert body["messages"] == [
        {"role": "system", "content": "You are a summarizer."},
        {"role": "user", "content": "Summarize turn 3"},
    ]
    assert body["max_completion_tokens"] == 300
    assert body["prompt_cache_key"] == "sess-1"
    assert "temperature" not in body
    assert "tools" not in body


async def test_compatible_server_gets_max_tokens_capped_and_settings_temperature() -> None:
    recorder = Recorder([openai_reply()])
    llm = provider(recorder, base_url="http://127.0.0.1:11434/v1", max_tokens=256, temperature=0.2)
    await llm.complete(request(max_tokens=4000))
    assert recorder.requests[0].url.port == 11434
    body = recorder.body()
    assert body["max_tokens"] == 256
    assert body["temperature"] == 0.2
    assert "prompt_cache_key" not in body


async def test_structured_output_sends_strict_json_schema_and_parses() -> None:
    recorder = Recorder([openai_reply('{"outcome": "fixed", "score": 3}')])
    result = await provider(recorder).complete(request(response_schema=Verdict))
    assert result.parsed == Verdict(outcome="fixed", score=3)
    format_ = recorder.body()["response_format"]
    assert format_["type"] == "json_schema"
    assert format_["json_schema"]["name"] == "Verdict"
    assert format_["json_schema"]["strict"] is True
    schema = format_["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["outcome", "score"]


async def test_server_ignoring_response_format_is_parsed_leniently() -> None:
    chatty = 'Sure! Here it is:\n```json\n{"outcome": "done", "score": 2,}\n```\nAnything else?'
    recorder = Recorder([openai_reply(chatty)])
    result = await provider(recorder).complete(request(response_schema=Verdict))
    assert result.parsed == Verdict(outcome="done", score=2)
    assert result.text == chatty


async def test_invalid_structured_reply_returns_text_and_no_parsed() -> None:
    recorder = Recorder([openai_reply('{"outcome": "done"}')])
    result = await provider(recorder).complete(request(response_schema=Verdict))
    assert result.parsed is None
    assert result.text == '{"outcome": "done"}'


async def test_empty_reply() -> None:
    recorder = Recorder([openai_reply(None, completion=0, finish_reason="length")])
    result = await provider(recorder).complete(request(response_schema=Verdict))
    assert (result.text, result.parsed, result.tool_calls) == ("", None, [])
    assert result.finish_reason == "length"


async def test_no_choices_and_no_usage() -> None:
    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}
    recorder = Recorder([httpx2.Response(200, json=body)])
    result = await provider(recorder).complete(request())
    assert result.text == ""
    assert result.finish_reason is None
    assert result.usage.total == 0


async def test_a_minimal_compatible_reply_reads_as_the_sdk_type_with_fields_missing() -> None:
    # No id, created, object, finish_reason, model or usage (some local servers): the SDK's
    # ChatCompletion is built unvalidated, and what is missing reads as empty, not an error.
    body = {"choices": [{"message": {"content": "hi", "tool_calls": [{"id": None}]}}]}
    recorder = Recorder([httpx2.Response(200, json=body)])
    result = await provider(recorder).complete(request())
    assert (result.text, result.tool_calls, result.finish_reason) == ("hi", [], None)
    assert result.model == "gpt-test"
    assert result.usage.total == 0


async def test_a_refusal_is_the_text_and_cache_writes_are_counted() -> None:
    message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    usage = {
        "prompt_tokens": 3000,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 1500},
    }
    body = {"model": "m", "choices": [{"message": message, "finish_reason": "stop"}]}
    recorder = Recorder([httpx2.Response(200, json={**body, "usage": usage})])
    result = await provider(recorder).complete(request(response_schema=Verdict))
    assert (result.text, result.parsed) == ("I can't help with that.", None)
    usage_ = result.usage
    assert (usage_.input, usage_.cache_read, usage_.cache_write, usage_.output) == (
        476,
        1024,
        1500,
        5,
    )


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b"[1, 2]"])
async def test_a_2xx_that_is_no_json_object_is_a_clear_error(
    policy: RetryPolicy, body: bytes
) -> None:
    recorder = Recorder([httpx2.Response(200, content=body)])
    with pytest.raises(ProviderError, match="not a JSON object"):
        await call_with_retry(provider(recorder), request(), policy)
    assert len(recorder.requests) == 1


async def test_malformed_tool_calls_are_skipped() -> None:
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"arguments": "{}"}},
            {"id": "c2", "type": "custom", "custom": {"name": "x"}},
            {"id": "c3", "type": "function", "function": {"name": "grep", "arguments": None}},
        ],
    }
    body = {"model": "m", "choices": [{"message": message, "finish_reason": "tool_calls"}]}
    recorder = Recorder([httpx2.Response(200, json=body)])
    result = await provider(recorder).complete(request())
    assert result.tool_calls == [ToolCallRequest("c3", "grep", {})]


async def test_native_tools_round_trip() -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search_log", "arguments": '{"pattern": "Traceback"}'},
    }
    broken = {"id": "call_2", "type": "function", "function": {"name": "list", "arguments": "{"}}
    recorder = Recorder([openai_reply(None, tool_calls=[call, broken], finish_reason="tool_calls")])
    tools = [ToolSpec("search_log", "Search the log", {"type": "object", "properties": {}})]
    history = [
        ChatMessage("user", "find errors"),
        ChatMessage("assistant", "", tool_calls=[ToolCallRequest("call_0", "list_artifacts", {})]),
        ChatMessage("tool", "a.py edited", tool_call_id="call_0"),
    ]
    result = await provider(recorder).complete(LLMRequest(messages=history, tools=tools))
    assert result.tool_calls == [
        ToolCallRequest("call_1", "search_log", {"pattern": "Traceback"}),
        ToolCallRequest("call_2", "list", {}),
    ]
    body = recorder.body()
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "search_log",
            "description": "Search the log",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,  # only tools that say their schema is strict ask for it
        },
    }
    assistant, tool = body["messages"][1:]
    assert assistant["content"] is None
    assert assistant["tool_calls"][0]["function"] == {"name": "list_artifacts", "arguments": "{}"}
    assert tool == {"role": "tool", "tool_call_id": "call_0", "content": "a.py edited"}


async def test_text_mode_never_sends_tools() -> None:
    recorder = Recorder([openai_reply('[SEARCH_LOG: "x"]')])
    llm = provider(recorder, tool_mode="text")
    assert llm.supports_native_tools is False
    await llm.complete(request(tools=[ToolSpec("search_log", "Search", {"type": "object"})]))
    assert "tools" not in recorder.body()


async def test_auto_mode_switches_to_text_when_server_rejects_tools() -> None:
    rejection = openai_error(400, "registry.ollama.ai/library/gemma3 does not support tools")
    recorder = Recorder([rejection])
    llm = provider(recorder, base_url="http://127.0.0.1:11434/v1")
    with pytest.raises(ToolsUnsupportedError, match="does not support tools") as info:
        await llm.complete(request(tools=[ToolSpec("search_log", "Search", {"type": "object"})]))
    assert info.value.status == 400
    assert llm.supports_native_tools is False


async def test_auto_mode_reads_tool_call_tags_from_text() -> None:
    reply = (
        'Let me look.\n<tool_call>{"name": "search_log", "arguments": {"pattern": "OOM"}}'
        "</tool_call>"
    )
    recorder = Recorder([openai_reply(reply)])
    llm = provider(recorder)
    result = await llm.complete(
        request(tools=[ToolSpec("search_log", "Search", {"type": "object"})])
    )
    assert result.tool_calls == [ToolCallRequest("text_call_1", "search_log", {"pattern": "OOM"})]
    assert llm.supports_native_tools is False


async def test_other_bad_request_is_not_a_tool_switch(policy: RetryPolicy) -> None:
    recorder = Recorder([openai_error(400, "context length exceeded")])
    llm = provider(recorder)
    with pytest.raises(ProviderError) as info:
        await call_with_retry(llm, request(tools=[ToolSpec("t", "d", {"type": "object"})]), policy)
    assert not isinstance(info.value, ToolsUnsupportedError)
    assert llm.supports_native_tools is True
    assert len(recorder.requests) == 1


async def test_429_with_retry_after_then_success(policy: RetryPolicy, sleeps: SleepLog) -> None:
    recorder = Recorder(
        [openai_error(429, "Rate limit reached", {"retry-after": "2"}), openai_reply("ok")]
    )
    ledger = UsageLedger()
    result = await call_with_retry(
        provider(recorder), request(stage="turn_summary", template="turn.j2"), policy, ledger
    )
    assert result.text == "ok"
    assert result.attempts == 2
    assert sleeps.waits == [2.0]
    assert [call.ok for call in ledger.calls] == [True]
    assert ledger.calls[0].attempts == 2
    assert ledger.calls[0].template == "turn.j2"


async def test_5xx_until_retries_run_out(policy: RetryPolicy, sleeps: SleepLog) -> None:
    recorder = Recorder([openai_error(503, "The server is overloaded") for _ in range(3)])
    ledger = UsageLedger()
    with pytest.raises(ProviderError) as info:
        await call_with_retry(provider(recorder), request(stage="synthesis"), policy, ledger)
    error = info.value
    assert (error.provider, error.model, error.status) == ("openai", "gpt-test", 503)
    assert str(error) == "openai:gpt-test (HTTP 503): The server is overloaded"
    assert len(recorder.requests) == 3
    assert len(sleeps.waits) == 2
    assert all(0 <= w <= 0.05 for w in sleeps.waits)
    assert ledger.calls[0].error == str(error)
    assert ledger.by_stage()["synthesis"].errors == 1


async def test_timeout_is_retried_then_reported(policy: RetryPolicy) -> None:
    timeout = httpx2.ReadTimeout("read timed out")
    recorder = Recorder([timeout, timeout, timeout])
    with pytest.raises(ProviderError) as info:
        await call_with_retry(provider(recorder, timeout=0.5), request(), policy)
    assert info.value.status is None
    assert "timed out" in str(info.value).lower()
    assert len(recorder.requests) == 3


async def test_connection_error_then_success(policy: RetryPolicy) -> None:
    recorder = Recorder([httpx2.ConnectError("connection refused"), openai_reply("back")])
    result = await call_with_retry(provider(recorder), request(), policy)
    assert (result.text, result.attempts) == ("back", 2)


async def test_auth_error_is_not_retried(policy: RetryPolicy) -> None:
    recorder = Recorder([openai_error(401, "Incorrect API key provided: sk-test")])
    with pytest.raises(ProviderError, match=r"HTTP 401.*Incorrect API key"):
        await call_with_retry(provider(recorder), request(), policy)
    assert len(recorder.requests) == 1


async def test_x_should_retry_false_stops_a_429(policy: RetryPolicy) -> None:
    recorder = Recorder([openai_error(429, "quota exhausted", {"x-should-retry": "false"})])
    with pytest.raises(ProviderError, match="quota exhausted"):
        await call_with_retry(provider(recorder), request(), policy)
    assert len(recorder.requests) == 1


async def test_request_json_is_valid_for_every_message_kind() -> None:
    recorder = Recorder([openai_reply()])
    messages = [
        ChatMessage("system", "extra rule"),
        ChatMessage("user", "q", cache_breakpoint=True),
        ChatMessage("assistant", "a"),
    ]
    await provider(recorder).complete(LLMRequest(messages=messages, temperature=0.0))
    body = json.loads(recorder.requests[0].content)
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant"]
    assert body["temperature"] == 0.0


def _refusal(message: str, param: str | None, code: str | None) -> httpx2.Response:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return httpx2.Response(400, json={"error": error})


TEMPERATURE_REFUSED = _refusal(
    "Unsupported value: 'temperature' does not support 0.0 with this model. "
    "Only the default (1) value is supported.",
    "temperature",
    "unsupported_value",
)
MAX_TOKENS_REFUSED = _refusal(
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead.",
    "max_tokens",
    "unsupported_parameter",
)


def _learning(recorder: Recorder, model: str, notes: list[str], **settings: Any) -> OpenAIProvider:
    return OpenAIProvider(
        model,
        ProviderSettings(**settings),
        "sk-test",
        http_client=recorder.client(),
        notify=notes.append,
    )


@pytest.mark.parametrize("model", ["o4-mini", "gpt-5.1"])
async def test_reasoning_models_get_their_parameters_even_behind_a_gateway(model: str) -> None:
    recorder = Recorder([openai_reply("ok"), openai_reply("ok")])
    llm = _learning(
        recorder, model, [], base_url="http://gateway.test/v1", temperature=0.0, max_tokens=2048
    )
    await llm.complete(request(max_tokens=2048, temperature=0.0))
    body = recorder.body()
    assert "temperature" not in body
    assert "max_tokens" not in body
    assert body["max_completion_tokens"] == 2048 + 8192  # room for the hidden reasoning
    assert "reasoning_effort" not in body
    low = _learning(recorder, model, [], reasoning_effort="low", max_tokens=2048)
    await low.complete(request(max_tokens=2048))
    assert recorder.body()["reasoning_effort"] == "low"
    assert recorder.body()["max_completion_tokens"] == 2048 + 4096


async def test_unknown_model_is_corrected_once_per_refused_parameter_and_remembers() -> None:
    recorder = Recorder(
        [TEMPERATURE_REFUSED, MAX_TOKENS_REFUSED, openai_reply("first"), openai_reply("second")]
    )
    notes: list[str] = []
    llm = _learning(recorder, "acme-next", notes, base_url="http://gw.test/v1", temperature=0.0)
    first = await llm.complete(request(max_tokens=500))
    assert first.text == "first"
    sent = [json.loads(r.content) for r in recorder.requests]
    assert sent[0]["temperature"] == 0.0
    assert sent[0]["max_tokens"] == 500
    assert "temperature" not in sent[1]
    assert sent[1]["max_tokens"] == 500
    assert "max_tokens" not in sent[2]
    assert sent[2]["max_completion_tokens"] == 500
    # Remembered for the run: the next call is right the first time.
    assert (await llm.complete(request(max_tokens=500))).text == "second"
    assert len(recorder.requests) == 4
    assert set(llm.refused) == {"temperature", "max_tokens"}
    assert len(notes) == 2
    assert "'temperature'" in notes[0]
    assert "leaving it out" in notes[0]
    assert "max_completion_tokens instead" in notes[1]


async def test_parameter_refused_again_after_its_correction_fails_the_call(
    policy: RetryPolicy,
) -> None:
    refused_twice = _refusal("Unrecognized request argument supplied: reasoning_effort", None, None)
    recorder = Recorder(
        [
            refused_twice,
            _refusal("Unsupported parameter: 'reasoning_effort' is odd", None, None),
        ]
    )
    llm = _learning(recorder, "o4-mini", [], reasoning_effort="high")
    with pytest.raises(ProviderError):
        # The second request lacks the parameter; a 400 naming it again is not ours to fix.
        await call_with_retry(llm, request(), policy)
    assert len(recorder.requests) == 2
    assert "reasoning_effort" not in recorder.body()


async def test_other_400s_are_not_retried(policy: RetryPolicy) -> None:
    recorder = Recorder([_refusal("'messages' must contain the word 'json'", "messages", None)])
    with pytest.raises(ProviderError):
        await call_with_retry(_learning(recorder, "gpt-4o", []), request(), policy)
    assert len(recorder.requests) == 1


LOCAL = "http://127.0.0.1:8080/v1"
# llama-cpp-python 0.3.36 (FastAPI 0.165): a 500 carrying the body's validation error.
JSON_SCHEMA_REFUSED = httpx2.Response(
    500,
    json={
        "error": {
            "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
            "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
            "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n",
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    },
)


def _validation_422(loc: list[str], msg: str) -> httpx2.Response:
    return httpx2.Response(422, json={"detail": [{"type": "value_error", "loc": loc, "msg": msg}]})


def _local(recorder: Recorder, notes: list[str], **settings: Any) -> OpenAIProvider:
    return _learning(recorder, "smollm2", notes, base_url=LOCAL, **settings)


async def test_a_refused_response_format_type_steps_down_to_json_object_once() -> None:
    good = '{"outcome": "fixed", "score": 3}'
    recorder = Recorder([JSON_SCHEMA_REFUSED, openai_reply(good), openai_reply(good)])
    notes: list[str] = []
    llm = _local(recorder, notes)
    req = request(response_schema=Verdict, system=[SystemBlock("You summarize.")])
    first = await llm.complete(req)
    assert first.parsed == Verdict(outcome="fixed", score=3)
    refused, retried = recorder.body(0), recorder.body(1)
    assert refused["response_format"]["type"] == "json_schema"
    # The type itself is unknown: the non-strict json_schema would be refused the same way.
    assert retried["response_format"] == {"type": "json_object", "schema": VERDICT_GRAMMAR}
    system = retried["messages"][0]["content"]
    assert system.startswith("You summarize.\n\nReply with one JSON object")
    assert '"required":["outcome","score"]' in system
    await llm.complete(req)
    assert recorder.body(2)["response_format"] == {"type": "json_object", "schema": VERDICT_GRAMMAR}
    assert llm.structured_output == "json_object"
    assert list(llm.structured_refusals) == ["json_schema_strict"]
    assert len(notes) == 1
    assert "refused response_format json_schema (strict)" in notes[0]
    assert "response_format.type: Input should be 'text' or 'json_object'" in notes[0]
    assert "json_object with the schema in the prompt" in notes[0]


async def test_the_next_run_starts_at_the_learned_rung() -> None:
    good = '{"outcome": "fixed", "score": 3}'
    recorder = Recorder([JSON_SCHEMA_REFUSED, openai_reply(good), openai_reply(good)])
    await _local(recorder, []).complete(request(response_schema=Verdict))
    notes: list[str] = []
    again = _local(recorder, notes)  # a new run: a new provider object
    assert again.structured_output == "json_object"
    await again.complete(request(response_schema=Verdict))
    assert recorder.body()["response_format"] == {"type": "json_object", "schema": VERDICT_GRAMMAR}
    assert len(recorder.requests) == 3
    assert notes == []
    # Another model of the same server learned nothing yet; nor did api.openai.com.
    assert _learning(recorder, "qwen3", [], base_url=LOCAL).structured_output == (
        "json_schema_strict"
    )
    assert provider(recorder).structured_output == "json_schema_strict"


async def test_the_ladder_walks_down_to_plain_text_with_the_schema_in_the_prompt() -> None:
    strict = _validation_422(["body", "response_format", "json_schema", "strict"], "no strict")
    schema = _validation_422(["body", "response_format", "json_schema"], "no schemas")
    json_object = _validation_422(["body", "response_format", "type"], "only text")
    good = openai_reply('{"outcome": "fixed", "score": 3}')
    recorder = Recorder([strict, schema, json_object, good])
    notes: list[str] = []
    llm = _local(recorder, notes)
    result = await llm.complete(request(response_schema=Verdict))
    assert result.parsed == Verdict(outcome="fixed", score=3)
    formats = [recorder.body(i).get("response_format") for i in range(4)]
    assert [f and (f["type"], f.get("json_schema", {}).get("strict")) for f in formats] == [
        ("json_schema", True),
        ("json_schema", False),
        ("json_object", None),
        None,
    ]
    last = recorder.body()["messages"]
    assert last[0]["role"] == "system"
    assert "It must match this JSON schema" in last[0]["content"]
    assert last[1] == {"role": "user", "content": "Summarize turn 3"}
    assert llm.structured_output == "text"
    assert len(notes) == 3


async def test_a_configured_rung_is_never_left(policy: RetryPolicy) -> None:
    recorder = Recorder([JSON_SCHEMA_REFUSED])
    llm = _local(recorder, [], structured_output="json_schema")
    assert llm.structured_output == "json_schema"
    with pytest.raises(ProviderError, match="HTTP 500"):
        await call_with_retry(llm, request(response_schema=Verdict), policy)
    # A refusal is no server hiccup: sending it again would be refused word for word.
    assert len(recorder.requests) == 1
    assert recorder.body()["response_format"]["json_schema"]["strict"] is False


async def test_a_configured_lower_rung_is_asked_for_at_once() -> None:
    recorder = Recorder([openai_reply('{"outcome": "x", "score": 1}')])
    await provider(recorder, structured_output="text").complete(request(response_schema=Verdict))
    body = recorder.body()
    assert "response_format" not in body
    assert body["messages"][0]["role"] == "system"


async def test_workers_refused_at_once_step_down_once() -> None:
    arrived: list[httpx2.Request] = []
    both = anyio.Event()
    good = openai_reply('{"outcome": "fixed", "score": 3}')

    async def handler(request: httpx2.Request) -> httpx2.Response:
        arrived.append(request)
        if len(arrived) <= 2:
            if len(arrived) == 2:
                both.set()
            await both.wait()
            return JSON_SCHEMA_REFUSED
        return streamed_if_asked(request, good)

    notes: list[str] = []
    llm = OpenAIProvider(
        "smollm2",
        ProviderSettings(base_url=LOCAL),
        "sk-test",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        notify=notes.append,
    )
    results: list[Any] = []

    async def one() -> None:
        results.append(await llm.complete(request(response_schema=Verdict)))

    async with anyio.create_task_group() as group:
        group.start_soon(one)
        group.start_soon(one)
    assert [r.parsed for r in results] == [Verdict(outcome="fixed", score=3)] * 2
    assert len(arrived) == 4
    assert len(notes) == 1


async def test_a_500_naming_no_parameter_is_still_retried(policy: RetryPolicy) -> None:
    recorder = Recorder([openai_error(500, "The server had an error"), openai_reply("ok")])
    result = await call_with_retry(_local(recorder, []), request(), policy)
    assert (result.text, result.attempts) == ("ok", 2)


SEARCH = ToolSpec("SEARCH_LOG", "Search", {"type": "object"})


@pytest.mark.parametrize(
    "refusal",
    [
        _validation_422(["body", "tools", "0", "function"], "Field required"),
        httpx2.Response(500, json={"error": {"message": "tools param requires --jinja flag"}}),
    ],
)
async def test_tools_refused_with_any_status_go_to_the_text_protocol(
    refusal: httpx2.Response,
) -> None:
    recorder = Recorder([refusal])
    notes: list[str] = []
    llm = _local(recorder, notes)
    with pytest.raises(ToolsUnsupportedError):
        await llm.complete(request(tools=[SEARCH]))
    assert llm.supports_native_tools is False
    assert len(notes) == 1
    assert "refused tools" in notes[0]
    assert _local(recorder, []).supports_native_tools is False  # remembered


async def test_a_server_ignoring_tools_is_found_out_and_remembered() -> None:
    # llama-cpp-python drops tools unless tool_choice names one: the model answers in prose.
    recorder = Recorder([openai_reply("I would search the log for errors.")])
    notes: list[str] = []
    llm = _local(recorder, notes)
    with pytest.raises(ToolsUnsupportedError, match="ignored the tools"):
        await llm.complete(request(tools=[SEARCH]))
    assert llm.supports_native_tools is False
    assert llm.tools_given_up.startswith("ignored the tools")
    assert len(notes) == 1
    assert _local(recorder, []).supports_native_tools is False


async def test_a_reply_without_a_tool_call_is_fine_once_tools_were_seen_working() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "SEARCH_LOG", "arguments": "{}"}}
    recorder = Recorder(
        [openai_reply(None, tool_calls=[call]), openai_reply("Nothing more to search.")]
    )
    llm = _local(recorder, [])
    assert (await llm.complete(request(tools=[SEARCH]))).tool_calls
    assert (await llm.complete(request(tools=[SEARCH]))).text == "Nothing more to search."
    assert llm.supports_native_tools is True
    again = _local(Recorder([openai_reply("No search needed.")]), [])
    assert again.native_tools_seen is True  # remembered: no reply of the next run is doubted
    assert (await again.complete(request(tools=[SEARCH]))).text == "No search needed."


async def test_a_cut_off_reply_is_no_sign_of_ignored_tools() -> None:
    recorder = Recorder([openai_reply("Let me think about which", finish_reason="length")])
    llm = _local(recorder, [])
    assert (await llm.complete(request(tools=[SEARCH]))).finish_reason == "length"
    assert llm.supports_native_tools is True


async def test_a_structured_answer_to_a_request_with_tools_is_no_sign_of_ignored_tools() -> None:
    recorder = Recorder([openai_reply('{"outcome": "fixed", "score": 3}')])
    llm = _local(recorder, [])
    result = await llm.complete(request(tools=[SEARCH], response_schema=Verdict))
    assert result.parsed is not None
    assert llm.supports_native_tools is True


async def test_text_protocol_calls_in_a_native_reply_switch_modes() -> None:
    recorder = Recorder([openai_reply('[SEARCH_LOG: "Traceback"]')])
    notes: list[str] = []
    llm = _local(recorder, notes)
    result = await llm.complete(request(tools=[SEARCH]))
    assert result.text == '[SEARCH_LOG: "Traceback"]'  # the caller parses its protocol
    assert llm.supports_native_tools is False
    assert "answered tools in text" in notes[0]


async def test_tool_choice_names_the_tool_to_call() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "SEARCH_LOG", "arguments": "{}"}}
    recorder = Recorder([openai_reply(None, tool_calls=[call])])
    llm = _local(recorder, [])
    await llm.complete(request(tools=[SEARCH], tool_choice="SEARCH_LOG"))
    assert recorder.body()["tool_choice"] == {
        "type": "function",
        "function": {"name": "SEARCH_LOG"},
    }
    # A call the server was told to make says nothing of whether the model calls freely.
    assert llm.native_tools_seen is False


async def test_a_local_server_is_streamed_and_the_pieces_make_one_reply() -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search_log", "arguments": '{"pattern": "IntegrityError"}'},
    }
    recorder = Recorder([openai_reply("Turn 3 fixed the parser.", tool_calls=[call])])
    llm = provider(recorder, base_url=LOCAL)
    result = await llm.complete(request(tools=[ToolSpec("search_log", "Search the log.")]))
    body = recorder.body()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert result.text == "Turn 3 fixed the parser."
    assert result.tool_calls == [
        ToolCallRequest("call_1", "search_log", {"pattern": "IntegrityError"})
    ]
    assert result.finish_reason == "stop"
    assert (result.usage.input, result.usage.output) == (100, 20)


async def test_a_stream_without_usage_counts_its_pieces_and_no_prompt() -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        # llama-cpp-python ignores stream_options: no usage chunk comes.
        events = completion_events(openai_reply("a" * 30).json(), include_usage=False)
        return httpx2.Response(200, content=events, headers={"content-type": "text/event-stream"})

    llm = OpenAIProvider(
        "smollm2",
        ProviderSettings(base_url=LOCAL),
        "sk-test",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    result = await llm.complete(request())
    assert result.text == "a" * 30
    # Seven characters a piece (tests.fakes.sse): five content pieces.
    assert (result.usage.input, result.usage.output) == (0, 5)


async def test_a_remote_server_is_not_streamed() -> None:
    recorder = Recorder([openai_reply()])
    await provider(recorder, base_url="https://gateway.test/v1").complete(request())
    assert "stream" not in recorder.body()
    assert "stream_options" not in recorder.body()


async def test_a_stream_that_ends_before_its_first_piece_is_asked_again_whole() -> None:
    # llama-cpp-python 0.3.36 checks the window inside the stream: a 200, then nothing.
    opened = b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
    opened += b'"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}\n\n'
    overflow = openai_error(
        400,
        "This model's maximum context length is 512 tokens. However, you requested 881 "
        "tokens (831 in the messages, 50 in the completion).",
    )
    recorder = Recorder(
        [httpx2.Response(200, content=opened, headers={"content-type": "text/event-stream"})]
    )
    recorder.responses.append(overflow)
    llm = provider(recorder, base_url=LOCAL)
    with pytest.raises(openai.BadRequestError) as caught:
        await llm.complete(request())
    assert parse_overflow(caught.value) == Overflow(error_message(caught.value), 512, 831)
    assert [recorder.body(i).get("stream") for i in (0, 1)] == [True, None]
    assert "stream_options" not in recorder.body(1)
