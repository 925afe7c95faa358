"""MessagesPreprocessor: which messages are kept, and the tool-output cap."""

from __future__ import annotations

import pytest

from opencode_restore.model import Compaction, Message, MessageType, Role
from opencode_restore.timeline.preprocess import MessagesPreprocessor

pytestmark = pytest.mark.anyio


def msg(mid: str, role: Role = "user", type_: MessageType = "text", text: str = "x") -> Message:
    return Message(id=mid, role=role, type=type_, text=text)


CONVERSATION = [
    msg("sys", "system", text="You are an agent."),
    msg("u1", "user", text="fix it"),
    msg("th", "assistant", "thinking", "let me look"),
    msg("call", "assistant", "tool_use", ""),
    msg("res", "tool", "tool_result", "file text"),
    msg("a1", "assistant", text="done"),
    Message(
        id="cmp", role="system", type="compaction", text="", compaction=Compaction(kind="summary")
    ),
    msg("sum", "system", "summary", "what happened so far"),
]


def kept_ids(options: MessagesPreprocessor) -> list[str]:
    return [m.id for m in CONVERSATION if options.keeps(m)]


def test_default_drops_system_prompt_only() -> None:
    assert kept_ids(MessagesPreprocessor()) == ["u1", "th", "call", "res", "a1", "cmp", "sum"]


def test_keeping_system_messages() -> None:
    assert "sys" in kept_ids(MessagesPreprocessor(exclude_system=False))


def test_exclude_reasoning_drops_thinking() -> None:
    assert kept_ids(MessagesPreprocessor(exclude_reasoning=True)) == [
        "u1",
        "call",
        "res",
        "a1",
        "cmp",
        "sum",
    ]


def test_exclude_tool_usage_drops_calls_and_results() -> None:
    assert kept_ids(MessagesPreprocessor(exclude_tool_usage=True)) == [
        "u1",
        "th",
        "a1",
        "cmp",
        "sum",
    ]


def test_compaction_markers_survive_every_exclusion() -> None:
    options = MessagesPreprocessor(
        exclude_system=True, exclude_reasoning=True, exclude_tool_usage=True
    )
    assert kept_ids(options) == ["u1", "a1", "cmp", "sum"]


async def test_apply_runs_transform_then_filters() -> None:
    async def last_three(messages: list[Message]) -> list[Message]:
        return messages[-3:]

    options = MessagesPreprocessor(transform=last_three, exclude_reasoning=True)
    assert [m.id for m in await options.apply(CONVERSATION)] == ["a1", "cmp", "sum"]


async def test_apply_without_transform_keeps_order() -> None:
    result = await MessagesPreprocessor().apply(CONVERSATION)
    assert [m.id for m in result] == ["u1", "th", "call", "res", "a1", "cmp", "sum"]


def test_cap_leaves_short_text_alone() -> None:
    options = MessagesPreprocessor(max_tool_output_chars=10)
    assert options.cap("0123456789") == "0123456789"


def test_cap_keeps_head_and_tail_with_visible_marker() -> None:
    options = MessagesPreprocessor(max_tool_output_chars=9)
    text = "HEADxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxTAIL"
    capped = options.cap(text)
    assert capped == f"HEADxx\n[... {len(text) - 9} of {len(text)} chars truncated ...]\nAIL"
    assert capped.startswith("HEADxx")
    assert capped.endswith("AIL")


def test_cap_of_one_char_keeps_only_the_head() -> None:
    capped = MessagesPreprocessor(max_tool_output_chars=1).cap("abcdef")
    assert capped == "a\n[... 5 of 6 chars truncated ...]\n"


def test_no_cap_when_limit_is_none() -> None:
    text = "y" * 100_000
    assert MessagesPreprocessor(max_tool_output_chars=None).cap(text) is text


def test_default_cap_is_4000() -> None:
    capped = MessagesPreprocessor().cap("z" * 10_000)
    assert "[... 6000 of 10000 chars truncated ...]" in capped
    assert capped.count("z") == 4000
