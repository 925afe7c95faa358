"""message_as_str: how one content block looks to an LLM."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.model import Compaction, Message, MessageType, Role
from opencode_restore.timeline.preprocess import DEFAULT_PREPROCESSOR, MessagesPreprocessor
from opencode_restore.timeline.render import (
    _body,
    message_as_str,
    message_shown,
    role_label,
    value_text,
)


def msg(role: Role = "user", type_: MessageType = "text", text: str = "", **fields: Any) -> Message:
    return Message(id="m", role=role, type=type_, text=text, **fields)


def test_user_and_assistant_text() -> None:
    assert message_as_str(msg("user", text="fix the test")) == "USER:\nfix the test\n"
    assert message_as_str(msg("assistant", text="done")) == "ASSISTANT:\ndone\n"


def test_system_prompt_hidden_by_default_and_shown_on_request() -> None:
    system = msg("system", text="You are helpful.")
    assert message_as_str(system) is None
    shown = message_as_str(system, MessagesPreprocessor(exclude_system=False))
    assert shown == "SYSTEM:\nYou are helpful.\n"


def test_role_label_override_is_upper_cased() -> None:
    message = msg("user", text="<reminder>", meta={"role_label": "Hook"})
    assert role_label(message) == "HOOK"
    assert message_as_str(message) == "HOOK:\n<reminder>\n"


def test_blank_role_label_falls_back_to_role() -> None:
    assert role_label(msg("tool", meta={"role_label": ""})) == "TOOL"
    assert role_label(msg("tool", meta={"role_label": 3})) == "TOOL"


def test_tool_call_lists_sorted_arguments() -> None:
    call = msg(
        "assistant",
        "tool_use",
        tool_name="Read",
        tool_input={"offset": 10, "file_path": "src/app.py", "opts": {"b": 1, "a": [1, 2]}},
    )
    assert message_as_str(call) == (
        "ASSISTANT:\n"
        "Tool Call: Read\n"
        "Arguments:\n"
        "file_path: src/app.py\n"
        'offset: 10\nopts: {"a":[1,2],"b":1}\n'
    )


def test_tool_call_keeps_its_text_before_the_call() -> None:
    call = msg("assistant", "tool_use", "Reading the file", tool_name="Read", tool_input={})
    assert message_as_str(call) == "ASSISTANT:\nReading the file\nTool Call: Read\nArguments:\n"


def test_tool_call_whose_text_is_its_input_as_json_shows_the_input_once() -> None:
    # Claude Code's tool calls carry their input as JSON text too: a Write's whole file
    # was sent uncapped before the capped argument list.
    content = "x" * 50
    call = msg(
        "assistant",
        "tool_use",
        f'{{"file_path": "a.py", "content": "{content}"}}',
        tool_name="Write",
        tool_input={"file_path": "a.py", "content": content},
    )
    capped = MessagesPreprocessor(max_tool_output_chars=20)
    rendered = message_as_str(call, capped)
    assert rendered is not None
    assert rendered.startswith("ASSISTANT:\nTool Call: Write\nArguments:\n")
    assert content not in rendered
    # Text that only looks like JSON, or is other JSON, is still shown.
    for text in ('{"file_path": "b.py"}', "{not json"):
        other = msg(
            "assistant", "tool_use", text, tool_name="Write", tool_input={"file_path": "a.py"}
        )
        assert message_as_str(other) == (
            f"ASSISTANT:\n{text}\nTool Call: Write\nArguments:\nfile_path: a.py\n"
        )


def test_tool_call_without_structured_input_uses_text_as_arguments() -> None:
    raw = msg("assistant", "tool_use", "ls -la", tool_name="shell")
    assert message_as_str(raw) == "ASSISTANT:\nTool Call: shell\nArguments: ls -la\n"
    bare = msg("assistant", "tool_use")
    assert message_as_str(bare) == "ASSISTANT:\nTool Call: unknown\nArguments:\n"


def test_argument_order_does_not_change_output() -> None:
    one = msg(
        "assistant", "tool_use", tool_name="Edit", tool_input={"a": "1", "b": {"y": 1, "x": 2}}
    )
    two = msg(
        "assistant", "tool_use", tool_name="Edit", tool_input={"b": {"x": 2, "y": 1}, "a": "1"}
    )
    assert message_as_str(one) == message_as_str(two)


def test_long_argument_value_is_capped() -> None:
    call = msg("assistant", "tool_use", tool_name="Write", tool_input={"content": "c" * 50})
    text = message_as_str(call, MessagesPreprocessor(max_tool_output_chars=12))
    assert text is not None
    assert "content: cccccccc\n[... 38 of 50 chars truncated ...]\ncccc\n" in text


def test_tool_result_names_the_tool_and_caps_output() -> None:
    result = msg("tool", "tool_result", "a" * 30 + "END", tool_name="Bash")
    text = message_as_str(result, MessagesPreprocessor(max_tool_output_chars=9))
    assert text == "TOOL:\nTool Result: Bash\naaaaaa\n[... 24 of 33 chars truncated ...]\nEND\n"


def test_tool_error_is_flagged() -> None:
    error = msg("tool", "tool_result", "No such file", is_error=True)
    assert message_as_str(error) == "TOOL:\nTool Result: unknown [ERROR]\nNo such file\n"


def test_error_on_other_messages_is_flagged_on_its_own_line() -> None:
    failure = msg("assistant", text="API Error: overloaded", is_error=True)
    assert message_as_str(failure) == "ASSISTANT:\n[ERROR]\nAPI Error: overloaded\n"


def test_thinking_shown_or_excluded() -> None:
    thinking = msg("assistant", "thinking", "check the imports")
    assert message_as_str(thinking) == "ASSISTANT:\n<thinking>check the imports</thinking>\n"
    assert message_as_str(thinking, MessagesPreprocessor(exclude_reasoning=True)) is None


def test_thinking_without_text_is_marked_redacted() -> None:
    assert message_as_str(msg("assistant", "thinking")) == "ASSISTANT:\n<thinking_redacted/>\n"


def test_tool_usage_excluded() -> None:
    options = MessagesPreprocessor(exclude_tool_usage=True)
    assert message_as_str(msg("assistant", "tool_use", tool_name="Read"), options) is None
    assert message_as_str(msg("tool", "tool_result", "out"), options) is None


def test_compaction_marker_is_visible_even_with_system_excluded() -> None:
    marker = msg(
        "system",
        "compaction",
        compaction=Compaction(
            kind="summary",
            summary="We fixed the parser.",
            tokens_before=150000,
            tokens_after=9000,
            trigger="auto",
        ),
    )
    assert message_as_str(marker) == (
        "SYSTEM:\n[context compacted: summary, 150000 -> 9000 tokens, auto]\nWe fixed the parser.\n"
    )


def test_compaction_marker_prefers_message_text_and_tolerates_missing_details() -> None:
    marker = msg(
        "system", "compaction", "summary text", compaction=Compaction(kind="trim", tokens_before=5)
    )
    assert (
        message_as_str(marker)
        == "SYSTEM:\n[context compacted: trim, 5 -> ? tokens]\nsummary text\n"
    )
    bare = msg("system", "compaction")
    assert message_as_str(bare) == "SYSTEM:\n[context compacted]\n"


def test_compaction_summary_message() -> None:
    summary = msg("user", "summary", "Earlier: parser fixed.", meta={"synthetic": True})
    assert message_as_str(summary) == "USER:\n[compaction summary]\nEarlier: parser fixed.\n"


def test_empty_text_block_renders_nothing() -> None:
    assert message_as_str(msg("assistant", text="  \n")) is None


def test_value_text() -> None:
    assert value_text("plain") == "plain"
    assert value_text({"b": None, "a": True}) == '{"a":true,"b":null}'
    assert value_text({1: "x"}) == '{"1":"x"}'
    # Wider than 64 bits: orjson refuses, the stdlib fallback still renders it.
    assert value_text(2**70) == str(2**70)
    assert value_text([{"z": 1, "y": 2**70}]) == f'[{{"y": {2**70}, "z": 1}}]'


@pytest.mark.parametrize("type_", ["text", "thinking", "tool_use", "tool_result", "summary"])
def test_rendering_is_deterministic(type_: MessageType) -> None:
    message = msg("assistant", type_, "body", tool_name="T", tool_input={"k": [3, 2, 1]})
    assert message_as_str(message) == message_as_str(message)
    assert message_as_str(message) is not None


def test_compaction_marker_with_kind_only() -> None:
    marker = msg("system", "compaction", compaction=Compaction(kind="edit"))
    assert message_as_str(marker) == "SYSTEM:\n[context compacted: edit]\n"


def test_the_files_a_step_changed_render_as_such_and_go_with_the_tools() -> None:
    m = Message("prt_9", "assistant", "file_changes", "/w/a.py\n/w/b.py", meta={"files": []})
    assert message_as_str(m) == "ASSISTANT:\nFiles changed in this step:\n/w/a.py\n/w/b.py\n"
    assert message_as_str(m, MessagesPreprocessor(exclude_tool_usage=True)) is None


_BLANKS = st.text(alphabet=" \t\n\r\x0b\x0c\u00a0\u2003", max_size=3)


@given(
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    type_=st.sampled_from(
        ["text", "tool_use", "tool_result", "thinking", "compaction", "summary", "file_changes"]
    ),
    text=st.one_of(_BLANKS, st.text(max_size=8)),
    is_error=st.booleans(),
    tool_input=st.one_of(st.none(), st.dictionaries(st.text(max_size=3), _BLANKS, max_size=2)),
    summary=st.one_of(st.none(), _BLANKS, st.text(max_size=4)),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
)
def test_message_shown_is_a_kept_message_with_a_body_not_blank(
    role: Role,
    type_: MessageType,
    text: str,
    is_error: bool,
    tool_input: dict[str, Any] | None,
    summary: str | None,
    flags: tuple[bool, bool, bool],
) -> None:
    compaction = None if summary is None else Compaction("summary", summary=summary or None)
    message = msg(
        role, type_, text, is_error=is_error, tool_input=tool_input, compaction=compaction
    )
    options = MessagesPreprocessor(
        exclude_system=flags[0], exclude_reasoning=flags[1], exclude_tool_usage=flags[2]
    )
    for preprocessor in (None, options):
        # The plain rule: kept, and a body with something in it once rendered.
        kept = (preprocessor or DEFAULT_PREPROCESSOR).keeps(message)
        shown = kept and bool(_body(message, preprocessor or DEFAULT_PREPROCESSOR).strip())
        assert message_shown(message, preprocessor) == shown
        assert (message_as_str(message, preprocessor) is not None) == shown
