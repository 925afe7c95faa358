"""The scripted provider: replays steps, records requests, auto-fills schemas."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from opencode_restore.llm.base import ChatMessage, LLMRequest, SystemBlock, ToolCallRequest
from opencode_restore.llm.scripted import (
    ScriptedProvider,
    ScriptedReply,
    ScriptedStatusError,
    ScriptExhaustedError,
)
from opencode_restore.model import Usage

pytestmark = pytest.mark.anyio


class Answer(BaseModel):
    title: str
    count: int = 0


def request(schema: type[BaseModel] | None = None) -> LLMRequest:
    return LLMRequest(
        system=[SystemBlock("s" * 35)],
        messages=[ChatMessage("user", "u" * 35)],
        response_schema=schema,
    )


async def test_steps_replay_in_order_and_requests_are_recorded() -> None:
    call = ToolCallRequest("c1", "search_log", {"pattern": "x"})
    usage = Usage(input=1, output=2)
    provider = ScriptedProvider(
        ["plain", {"title": "t"}, call, [call, call], ScriptedReply(text="u", usage=usage)]
    )
    first = await provider.complete(request())
    assert (first.text, first.parsed, first.model) == ("plain", None, "scripted")
    assert first.usage == Usage(input=20, output=1)
    second = await provider.complete(request(Answer))
    assert second.parsed == Answer(title="t")
    assert second.text == '{"title": "t"}'
    third = await provider.complete(request())
    assert third.tool_calls == [call]
    assert third.finish_reason == "tool_calls"
    assert len((await provider.complete(request())).tool_calls) == 2
    assert (await provider.complete(request())).usage is usage
    assert len(provider.requests) == 5


async def test_invalid_dict_is_not_parsed() -> None:
    provider = ScriptedProvider([{"count": "many"}])
    result = await provider.complete(request(Answer))
    assert result.parsed is None
    assert result.text == '{"count": "many"}'


async def test_exceptions_are_raised() -> None:
    provider = ScriptedProvider([ScriptedStatusError(429)])
    with pytest.raises(ScriptedStatusError):
        await provider.complete(request())
    assert provider.should_retry(ScriptedStatusError(429))
    assert provider.should_retry(ScriptedStatusError(500))
    assert provider.should_retry(ConnectionError())
    assert not provider.should_retry(ScriptedStatusError(400))
    assert not provider.should_retry(ValueError())


async def test_exhausted_script_raises_unless_auto() -> None:
    with pytest.raises(ScriptExhaustedError, match="after 0 replies"):
        await ScriptedProvider().complete(request())
    auto = ScriptedProvider(auto=True)
    assert (await auto.complete(request(Answer))).parsed == Answer(title="x")
    assert (await auto.complete(request())).text == "ok"
