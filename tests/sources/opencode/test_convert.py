"""opencode parts -> messages: the cases the recordings do not show."""

from __future__ import annotations

from typing import Any

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.sources.opencode.convert import PartConverter, RawMessage, part_sort_key

T0 = 1_795_000_000_000


def _user(mid: str, *parts: dict[str, Any]) -> RawMessage:
    info = {"id": mid, "role": "user", "time": {"created": T0}}
    return RawMessage(info, [(n, p) for n, p in enumerate(parts, 1)])


def _assistant(mid: str, *parts: dict[str, Any], **info: Any) -> RawMessage:
    base = {"id": mid, "role": "assistant", "modelID": "m1", "time": {"created": T0 + 1}}
    return RawMessage({**base, **info}, [(10 + n, p) for n, p in enumerate(parts, 1)])


def _convert(*raws: RawMessage) -> tuple[list[Message], WarningSink, PartConverter]:
    sink = WarningSink()
    converter = PartConverter("log", sink)
    out: list[Message] = []
    for raw in raws:
        out.extend(converter.convert(raw))
    out.extend(converter.finish())
    return out, sink, converter


def _text(pid: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"id": pid, "type": "text", "text": text, **extra}


def test_auto_compaction_then_synthetic_continue() -> None:
    compaction = {"id": "prt_c", "type": "compaction", "auto": True, "overflow": True}
    compaction["tail_start_id"] = "msg_keep"
    summary = _assistant(
        "msg_s",
        _text("prt_s", "## Objective\n- carry on"),
        summary=True,
        tokens={"input": 900, "output": 80, "cache": {"read": 100}},
    )
    resume = _user("msg_r", _text("prt_r", "Continue if you have next steps", synthetic=True))
    out, sink, _ = _convert(_user("msg_c", compaction), summary, resume)
    assert sink.warnings == []
    marker, summary_msg, cont = out
    assert marker.type == "compaction"
    assert marker.text == "Conversation compacted (auto)"
    assert marker.meta == {"overflow": True}
    assert marker.compaction is not None
    assert marker.compaction.trigger == "auto"
    assert marker.compaction.first_kept_id == "msg_keep"
    assert marker.compaction.summary == "## Objective\n- carry on"
    assert marker.compaction.tokens_before == 1000
    assert marker.compaction.tokens_after == 80
    assert (summary_msg.type, summary_msg.role) == ("summary", "assistant")
    assert summary_msg.usage is not None
    assert summary_msg.usage.cache_read == 100
    assert cont.meta == {"synthetic": True, "injected": "synthetic"}
    assert not cont.is_human


def test_summary_message_without_compaction_part_gets_a_marker() -> None:
    out, _, _ = _convert(_assistant("msg_s", _text("prt_s", "old summary"), summary=True))
    marker, summary = out
    assert marker.id == "msg_s:compaction"
    assert marker.entry_index == 11
    assert marker.compaction is not None
    assert marker.compaction.trigger is None
    assert marker.text == "Conversation compacted"
    assert marker.compaction.summary == "old summary"
    assert summary.type == "summary"


def test_compaction_without_summary_is_kept_at_the_end_or_before_the_next_message() -> None:
    out, _, _ = _convert(_user("msg_c", {"id": "prt_c", "type": "compaction"}))
    assert [m.type for m in out] == ["compaction"]
    assert out[0].compaction is not None
    assert out[0].compaction.summary is None
    out, _, _ = _convert(
        _user("msg_c", {"id": "prt_c", "type": "compaction", "auto": False}),
        _user("msg_u", _text("prt_u", "next request")),
    )
    assert [(m.type, m.text) for m in out] == [
        ("compaction", "Conversation compacted (manual)"),
        ("text", "next request"),
    ]


def test_tool_states() -> None:
    error = {
        "id": "prt_e",
        "type": "tool",
        "tool": "bash",
        "callID": "c1",
        "state": {"status": "error", "input": {"command": "false"}, "error": "exit 1"},
    }
    pending = {"id": "prt_p", "type": "tool", "tool": "read", "state": {"status": "pending"}}
    stateless = {"id": "prt_n", "type": "tool", "tool": "edit", "callID": "   "}
    pruned = {
        "id": "prt_o",
        "type": "tool",
        "tool": "read",
        "state": {
            "status": "completed",
            "input": {"filePath": "a.py"},
            "output": {"lines": 3},
            "time": {"start": T0, "end": T0 + 9, "compacted": T0 + 99},
            "metadata": {"exit": True},
        },
    }
    out, sink, _ = _convert(_assistant("msg_a", error, pending, stateless, pruned))
    assert [(m.id, m.type) for m in out] == [
        ("prt_e", "tool_use"),
        ("prt_e:result", "tool_result"),
        ("prt_p", "tool_use"),
        ("prt_n", "tool_use"),
        ("prt_o", "tool_use"),
        ("prt_o:result", "tool_result"),
    ]
    failed = out[1]
    assert failed.is_error
    assert failed.text == "exit 1"
    assert failed.tool_call_id == "c1"
    assert out[2].meta == {"status": "pending"}
    assert out[3].tool_call_id is None
    assert out[3].tool_input == {}
    assert out[5].text == '{"lines":3}'
    assert out[5].meta == {"compacted": True}  # a bool is not an exit code
    assert out[5].timestamp is not None
    assert int(out[5].timestamp.timestamp() * 1000) == T0 + 9
    assert [w.message for w in sink.warnings] == ["tool part prt_n has no state; kept as a call"]
    assert sink.warnings[0].line == 13


def test_task_links_from_metadata_input_or_output() -> None:
    def task(pid: str, state: dict[str, Any]) -> dict[str, Any]:
        return {"id": pid, "type": "tool", "tool": "task", "state": state}

    running = task("prt_1", {"status": "running", "metadata": {"sessionId": "ses_A"}})
    resumed = task("prt_2", {"status": "pending", "input": {"task_id": "ses_B"}})
    done = task("prt_3", {"status": "completed", "output": "task_id: ses_C (for resuming)"})
    unnamed = task("prt_4", {"status": "completed", "output": "no id here"})
    out, _, converter = _convert(_assistant("msg_a", running, resumed, done, unnamed))
    assert converter.task_links == {"ses_A": "prt_1", "ses_B": "prt_2", "ses_C": "prt_3"}
    assert out[0].meta["child_session"] == "ses_A"
    assert out[3].meta == {"child_session": "ses_C"}
    assert "child_session" not in out[5].meta


def test_user_side_parts() -> None:
    pasted = {"id": "prt_f", "type": "file", "mime": "image/png", "url": "data:" + "A" * 400}
    subtask = {"id": "prt_t", "type": "subtask", "prompt": "review", "agent": "general"}
    subtask["description"] = "code review"
    marker = {"id": "prt_g", "type": "agent", "name": "general"}
    out, sink, _ = _convert(
        _user(
            "msg_u",
            _text("prt_u", "look at this"),
            _text("prt_i", "ignored", ignored=True),
            _text("prt_e", ""),
            pasted,
            subtask,
            marker,
            {"id": "prt_x", "type": "hologram"},
            {"id": "prt_y", "type": "text"},
        )
    )
    assert [(m.id, m.text, m.is_human) for m in out] == [
        ("prt_u", "look at this", True),
        ("prt_i", "ignored", False),
        ("prt_f", "<file data:" + "A" * 400 + ">", False),
        ("prt_t", "review", False),
    ]
    assert out[2].meta == {"synthetic": True, "attachment": True, "mime": "image/png"}
    assert out[3].meta["subtask"] == {"agent": "general", "description": "code review"}
    assert all(m.model is None and m.group == "msg_u" for m in out)
    assert [(w.line, w.message) for w in sink.warnings] == [
        (7, "unknown part type 'hologram' (prt_x); skipped"),
        (8, "text part prt_y has no text; skipped"),
    ]


def test_assistant_error_and_usage_from_steps() -> None:
    steps = [
        {"id": "prt_1", "type": "step-start"},
        _text("prt_2", "partial"),
        {"id": "prt_3", "type": "step-finish", "tokens": {"input": 10, "output": 2}},
        {"id": "prt_4", "type": "step-finish", "tokens": {"input": 20, "reasoning": 5}},
        {"id": "prt_5", "type": "patch", "files": "not-a-list"},
    ]
    error = {"name": "APIError", "data": {"message": "rate limited"}}
    out, _, _ = _convert(
        _assistant("msg_a", *steps, error=error, tokens={"input": 999}),
        _assistant("msg_b", error={"name": "MessageAbortedError"}),
        RawMessage({"id": "msg_c", "role": "assistant", "error": {"name": "X"}}, [], 42),
    )
    assert [(m.id, m.type, m.text, m.is_error, m.entry_index) for m in out] == [
        ("prt_2", "text", "partial", False, 12),
        ("prt_5", "file_changes", "", False, 15),
        ("msg_a:error", "text", "APIError: rate limited", True, 15),
        ("msg_b:error", "text", "MessageAbortedError", True, 0),
        ("msg_c:error", "text", "X", True, 42),
    ]
    usage = out[0].usage
    assert usage is not None
    # Summed over steps (reasoning counts as output), not the last step kept in info.
    assert (usage.input, usage.output) == (30, 7)
    assert (out[1].meta, out[1].tool_name, out[1].tool_input) == ({"files": []}, None, None)
    assert out[2].meta == {"error": "APIError"}


def test_message_without_usage_and_zero_tokens() -> None:
    out, _, _ = _convert(_assistant("msg_a", _text("prt_a", "hi"), tokens={"input": 0}))
    assert out[0].usage is None
    assert out[0].model == "m1"


def test_part_ids_fall_back_to_ordinal() -> None:
    out, _, _ = _convert(_user("msg_u", {"type": "text", "text": "no id"}))
    assert out[0].id == "0:1"


@pytest.mark.parametrize(
    ("parts", "order"),
    [
        ([{"id": "prt_b"}, {"id": "prt_a"}], ["prt_a", "prt_b"]),
        (
            [{"id": "z", "time": {"start": 1}}, {"id": "a", "state": {"time": {"start": 2}}}],
            ["z", "a"],
        ),
    ],
)
def test_part_sort_key(parts: list[dict[str, Any]], order: list[str]) -> None:
    assert [p["id"] for p in sorted(parts, key=part_sort_key)] == order
