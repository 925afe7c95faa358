"""Lenient JSON extraction, text tool calls and the repair round of complete_structured."""

from __future__ import annotations

from dataclasses import replace

import httpx2
import pytest
from pydantic import BaseModel

from opencode_restore.errors import OutputValidationError
from opencode_restore.llm.base import ChatMessage, LLMRequest, LLMResult, ToolCallRequest
from opencode_restore.llm.openai_provider import OpenAIProvider
from opencode_restore.llm.scripted import ScriptedProvider, ScriptedReply
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.llm.structured import (
    REPLY_QUOTE_LIMIT,
    StructuredOutputError,
    balanced_objects,
    complete_structured,
    parse_structured,
    parse_text_tool_calls,
    strip_trailing_commas,
)
from opencode_restore.llm.usage import UsageLedger
from opencode_restore.model import Usage
from tests.llm.conftest import Recorder, openai_error, openai_reply

pytestmark = pytest.mark.anyio


class Summary(BaseModel):
    request: str
    outcomes: list[str]


@pytest.mark.parametrize(
    "reply",
    [
        '{"request": "fix", "outcomes": ["a"]}',
        '  \n{"request": "fix", "outcomes": ["a"]}\n',
        'Here you go:\n```json\n{"request": "fix", "outcomes": ["a"]}\n```',
        '```\n{"request": "fix", "outcomes": ["a"]}\n```',
        'The summary is {"request": "fix", "outcomes": ["a"]} as asked.',
        '{"request": "fix", "outcomes": ["a",],}',
        'Note {"not": "it"} then {"request": "fix", "outcomes": ["a"]}',
    ],
)
def test_lenient_parser_finds_the_object(reply: str) -> None:
    assert parse_structured(reply, Summary) == (Summary(request="fix", outcomes=["a"]), None)


def test_braces_and_quotes_inside_strings_do_not_end_the_object() -> None:
    reply = 'It\'s done: {"request": "use } and \\" here {", "outcomes": ["x, ]"]} ok'
    parsed, error = parse_structured(reply, Summary)
    assert error is None
    assert parsed is not None
    assert parsed.request == 'use } and " here {'
    assert parsed.outcomes == ["x, ]"]


def test_balanced_objects_skips_unbalanced_prose() -> None:
    assert list(balanced_objects('a } b {"x": {"y": 1}} c {"z"')) == ['{"x": {"y": 1}}']


def test_strip_trailing_commas_leaves_strings_alone() -> None:
    assert strip_trailing_commas('{"a": "x,}", "b": [1, 2, ], }') == '{"a": "x,}", "b": [1, 2 ] }'
    assert strip_trailing_commas('{"a": "q\\",]"}') == '{"a": "q\\",]"}'


def test_validation_error_is_reported() -> None:
    parsed, error = parse_structured('{"request": "fix"}', Summary)
    assert parsed is None
    assert error is not None
    assert "outcomes" in error
    assert "Field required" in error


def test_no_json_at_all() -> None:
    assert parse_structured("I cannot help with that.", Summary) == (
        None,
        "the reply contains no JSON object",
    )


def test_text_tool_calls() -> None:
    text = (
        'First <tool_call>{"name": "search_log", "arguments": {"pattern": "OOM"}}</tool_call>'
        '<tool_call>{"name": "list_artifacts"}</tool_call>'
        "<tool_call>not json</tool_call>"
        '<tool_call>{"arguments": {}}</tool_call>'
    )
    assert parse_text_tool_calls(text) == [
        ToolCallRequest("text_call_1", "search_log", {"pattern": "OOM"}),
        ToolCallRequest("text_call_2", "list_artifacts", {}),
    ]


def request() -> LLMRequest:
    return LLMRequest(
        messages=[ChatMessage("user", "summarize")],
        response_schema=Summary,
        template="turn_summary.j2",
        stage="turn_summary",
    )


async def test_valid_first_reply_needs_no_repair() -> None:
    provider = ScriptedProvider([{"request": "fix", "outcomes": []}])
    result = await complete_structured(provider, request())
    assert result.parsed == Summary(request="fix", outcomes=[])
    assert len(provider.requests) == 1


async def test_repair_round_quotes_the_validation_error() -> None:
    bad = ScriptedReply(text='{"request": "fix"}', usage=Usage(input=100, output=5))
    good = ScriptedReply(
        text='{"request": "fix", "outcomes": ["ok"]}', usage=Usage(input=130, output=9)
    )
    provider = ScriptedProvider([bad, good])
    ledger = UsageLedger()
    result = await complete_structured(provider, request(), ledger=ledger)
    assert result.parsed == Summary(request="fix", outcomes=["ok"])
    assert (result.usage.input, result.usage.output, result.attempts) == (230, 14, 2)
    repair = provider.requests[1]
    assert [m.role for m in repair.messages] == ["user", "assistant", "user"]
    assert repair.messages[1].content == '{"request": "fix"}'
    assert "outcomes" in repair.messages[2].content
    assert "Field required" in repair.messages[2].content
    assert [c.template for c in ledger.calls] == ["turn_summary.j2", "turn_summary.j2:repair"]
    # The caller's request is untouched.
    assert len(request().messages) == 1
    assert len(provider.requests[0].messages) == 1


async def test_still_invalid_after_repair_raises_with_the_raw_text() -> None:
    provider = ScriptedProvider(["no json here", ""])
    with pytest.raises(StructuredOutputError) as info:
        await complete_structured(provider, request())
    assert isinstance(info.value, OutputValidationError)
    assert info.value.error == "the reply contains no JSON object"
    assert info.value.result.attempts == 2
    assert provider.requests[1].messages[1].content == "no json here"


async def test_empty_reply_gets_repaired() -> None:
    provider = ScriptedProvider(["", '{"request": "r", "outcomes": []}'])
    result = await complete_structured(provider, request())
    assert result.parsed is not None
    assert provider.requests[1].messages[1].content == "(empty reply)"


async def test_zero_retries_fails_fast() -> None:
    provider = ScriptedProvider(["nope"])
    with pytest.raises(StructuredOutputError):
        await complete_structured(provider, request(), retries=0)
    assert len(provider.requests) == 1


async def test_long_errors_are_truncated_in_the_prompt() -> None:
    class Wide(BaseModel):
        fields: list[int]

    provider = ScriptedProvider(
        ['{"fields": [' + ", ".join(['"x"'] * 300) + "]}", '{"fields": []}']
    )
    req = LLMRequest(messages=[ChatMessage("user", "go")], response_schema=Wide)
    await complete_structured(provider, req)
    assert provider.requests[1].messages[2].content.count(" ...") == 1


async def test_requires_a_schema() -> None:
    with pytest.raises(ValueError, match="response_schema"):
        await complete_structured(ScriptedProvider(["x"]), LLMRequest(messages=[]))


class RawTextProvider:
    """A provider that never parses (as a custom or offline one may not)."""

    name = "raw"
    model = "raw-1"
    supports_native_tools = False

    async def complete(self, request: LLMRequest) -> LLMResult:
        return LLMResult(text='{"request": "r", "outcomes": ["o"]}')

    def should_retry(self, exc: BaseException) -> bool:
        return False


async def test_unparsed_valid_text_is_parsed_without_a_repair_call() -> None:
    result = await complete_structured(RawTextProvider(), request())
    assert result.parsed == Summary(request="r", outcomes=["o"])
    assert result.attempts == 1


def _cut(text: str, reason: str) -> ScriptedReply:
    return ScriptedReply(text=text, finish_reason=reason, usage=Usage(input=50, output=40))


@pytest.mark.parametrize("reason", ["length", "max_tokens"])
async def test_cut_off_reply_is_asked_again_with_a_larger_limit_not_repaired(reason: str) -> None:
    provider = ScriptedProvider(
        [_cut('{"request": "fix", "outc', reason), '{"request": "fix", "outcomes": []}']
    )
    ledger = UsageLedger()
    # retries=0: a validation failure would raise; a cut-off reply is not one.
    result = await complete_structured(provider, request(), retries=0, ledger=ledger)
    assert result.parsed == Summary(request="fix", outcomes=[])
    second = provider.requests[1]
    assert second.output_boost == 1
    assert second.messages == provider.requests[0].messages  # the same request, no repair
    assert [c.template for c in ledger.calls] == ["turn_summary.j2", "turn_summary.j2:longer"]
    assert result.attempts == 2  # both calls count, the cut-off one cost tokens too


async def test_larger_limits_are_bounded_then_the_repair_round_follows() -> None:
    # A reasoning model that spends every limit on thinking: empty and cut off each time.
    provider = ScriptedProvider([_cut("", "length")] * 4)
    with pytest.raises(StructuredOutputError):
        await complete_structured(provider, request(), retries=1)
    boosts = [r.output_boost for r in provider.requests]
    assert boosts == [0, 1, 2, 2]
    assert provider.requests[-1].template.endswith(":repair")


async def test_output_boost_doubles_the_limit_the_provider_sends() -> None:
    recorder = Recorder([openai_reply("{}"), openai_reply("{}")])
    llm = OpenAIProvider("o4-mini", ProviderSettings(max_tokens=1000), "sk", recorder.client())
    await llm.complete(LLMRequest(messages=[ChatMessage("user", "x")], max_tokens=1000))
    await llm.complete(
        LLMRequest(messages=[ChatMessage("user", "x")], max_tokens=1000, output_boost=1)
    )
    assert [recorder.body(i)["max_completion_tokens"] for i in (0, 1)] == [9192, 18384]


def _cut_reply(text: str = '{"request": "fix", "outc') -> httpx2.Response:
    return openai_reply(text, finish_reason="length")


GOOD = '{"request": "fix", "outcomes": []}'


async def test_a_limit_already_at_the_ceiling_is_not_asked_again_the_same_way() -> None:
    recorder = Recorder([_cut_reply(), openai_reply(GOOD)])
    settings = ProviderSettings(max_tokens=1000, max_tokens_ceiling=1000)
    llm = OpenAIProvider("gpt-test", settings, "sk", recorder.client())
    result = await complete_structured(llm, request())
    assert result.parsed == Summary(request="fix", outcomes=[])
    first, second = recorder.body(0), recorder.body(1)
    assert first["max_completion_tokens"] == second["max_completion_tokens"] == 1000
    # Not the same request again: a repair that asks for a shorter answer.
    assert len(second["messages"]) == len(first["messages"]) + 2
    assert "cut off at the output limit" in second["messages"][-1]["content"]


async def test_a_limit_the_server_capped_is_not_doubled_past_the_cap() -> None:
    too_large = openai_error(
        400,
        "max_tokens is too large: 4096. This model supports at most 2048 completion tokens, "
        "whereas you provided 4096.",
    )
    recorder = Recorder([too_large, _cut_reply(), openai_reply(GOOD)])
    llm = OpenAIProvider(
        "gpt-test",
        ProviderSettings(base_url="http://127.0.0.1:8000/v1"),
        "sk",
        recorder.client(),
        notify=lambda _line: None,
    )
    result = await complete_structured(llm, request())
    assert result.parsed is not None
    assert [recorder.body(i)["max_tokens"] for i in range(3)] == [4096, 2048, 2048]
    assert recorder.body(2)["messages"][-1]["content"].startswith("Your previous reply")


async def test_a_limit_is_not_doubled_past_the_room_the_window_leaves() -> None:
    recorder = Recorder([_cut_reply(), _cut_reply(), openai_reply(GOOD)])
    llm = OpenAIProvider("gpt-test", ProviderSettings(max_tokens=1000), "sk", recorder.client())
    result = await complete_structured(llm, replace(request(), max_tokens=1000, window_room=1500))
    assert result.parsed is not None
    limits = [recorder.body(i)["max_completion_tokens"] for i in range(3)]
    # Doubled once to what the window leaves, then no more: a repair instead.
    assert limits == [1000, 1500, 1500]
    assert "cut off at the output limit" in recorder.body(2)["messages"][-1]["content"]


async def test_a_huge_bad_reply_is_quoted_by_its_ends() -> None:
    rambling = "start " + "blah " * 20_000 + " end"
    provider = ScriptedProvider([rambling, GOOD])
    await complete_structured(provider, request())
    quoted = provider.requests[1].messages[1].content
    assert len(quoted) < REPLY_QUOTE_LIMIT + 100
    assert quoted.startswith("start blah")
    assert quoted.endswith("blah  end")
    assert f"[… {len(rambling) - REPLY_QUOTE_LIMIT} characters of the reply omitted …]" in quoted
