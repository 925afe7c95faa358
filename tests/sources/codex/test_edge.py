"""Codex reader edge cases, each written inline as the exact lines it reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, TimelineSpan
from opencode_restore.sources.codex import READER
from opencode_restore.sources.codex import items as items_mod
from opencode_restore.sources.codex import stream as stream_mod
from opencode_restore.sources.codex import threads as threads_mod

TS = "2026-03-01T10:00:{:02d}.000Z"


def env(kind: str, payload: Any, second: int = 0, **extra: Any) -> dict[str, Any]:
    return {"timestamp": TS.format(second), "type": kind, "payload": payload, **extra}


def meta(sid: str = "t-1", second: int = 0, **extra: Any) -> dict[str, Any]:
    payload = {"id": sid, "timestamp": TS.format(second), "cwd": "/w", **extra}
    return env("session_meta", payload, second)


def item(payload: dict[str, Any], second: int = 1) -> dict[str, Any]:
    return env("response_item", payload, second)


def event(payload: dict[str, Any], second: int = 1) -> dict[str, Any]:
    return env("event_msg", payload, second)


def msg(
    role: str, text: str, second: int = 1, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    content = [{"type": kind, "text": text}]
    return item({"type": "message", "role": role, "content": content, **(extra or {})}, second)


def tokens(total: int, last_in: int = 10, last_out: int = 5, cached: int = 0) -> dict[str, Any]:
    last = {"input_tokens": last_in, "cached_input_tokens": cached, "output_tokens": last_out}
    return event(
        {
            "type": "token_count",
            "info": {"total_token_usage": {"t": total}, "last_token_usage": last},
        }
    )


def write(path: Path, lines: list[Any]) -> Path:
    with path.open("wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else orjson.dumps(line))
            fh.write(b"\n")
    return path


def read_lines(tmp_path: Path, lines: list[Any], sink: WarningSink | None = None) -> list[Message]:
    path = write(tmp_path / "rollout-x.jsonl", lines)
    return READER.read([path], sink if sink is not None else WarningSink()).messages()


def texts(messages: list[Message]) -> list[tuple[str, str, str]]:
    return [(m.role, m.type, m.text) for m in messages]


# -- duplicates between events and response items ----------------------------------------------


def test_event_after_response_item_is_dropped(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            msg("user", "hello"),
            event({"type": "user_message", "message": "hello", "kind": "plain"}),
            msg("assistant", "hi there"),
            event({"type": "agent_message", "message": "hi there"}),
        ],
    )
    assert texts(msgs) == [("user", "text", "hello"), ("assistant", "text", "hi there")]
    assert msgs[0].entry_index == 2
    assert msgs[1].entry_index == 4


def test_reasoning_events_per_summary_part_are_dropped(tmp_path: Path) -> None:
    reasoning = {
        "type": "reasoning",
        "summary": [
            {"type": "summary_text", "text": "First."},
            {"type": "summary_text", "text": "Second."},
        ],
        "content": [{"type": "reasoning_text", "text": "RAW CHAIN OF THOUGHT"}],
        "encrypted_content": "SECRET",
    }
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            event({"type": "agent_reasoning", "text": "First."}),
            event({"type": "agent_reasoning", "text": "Second."}),
            item(reasoning),
        ],
    )
    assert texts(msgs) == [("assistant", "thinking", "First.\n\nSecond.")]
    assert "RAW CHAIN" not in repr(msgs)
    assert "SECRET" not in repr(msgs)


def test_reasoning_without_summary_is_not_shown(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path, [meta(), item({"type": "reasoning", "summary": [], "encrypted_content": "x"})]
    )
    assert msgs == []


def test_event_shown_before_a_flush_wins_over_its_late_response_item(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            msg("user", "go"),
            event({"type": "agent_message", "message": "done"}),
            tokens(100),
            msg("assistant", "done"),
            event({"type": "agent_message", "message": "other"}),
        ],
    )
    assert texts(msgs) == [
        ("user", "text", "go"),
        ("assistant", "text", "done"),
        ("assistant", "text", "other"),
    ]
    assert msgs[1].meta["from_event"] is True
    assert msgs[1].usage is not None


def test_repeated_prompt_in_a_later_turn_is_kept(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            msg("user", "continue"),
            event({"type": "user_message", "message": "continue"}),
            msg("assistant", "ok"),
            msg("user", "continue"),
            event({"type": "user_message", "message": "continue"}),
        ],
    )
    assert [m.text for m in msgs if m.is_human] == ["continue", "continue"]


def test_item_completed_copies_pair_like_events(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            msg("user", "fix it"),
            event(
                {
                    "type": "item_completed",
                    "item": {
                        "type": "UserMessage",
                        "id": "u",
                        "content": [{"type": "text", "text": "fix it"}],
                    },
                }
            ),
            event(
                {
                    "type": "item_completed",
                    "item": {"type": "Reasoning", "id": "r", "summary_text": ["Plan."]},
                }
            ),
            item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan."}]}),
            event(
                {
                    "type": "item_completed",
                    "item": {
                        "type": "AgentMessage",
                        "id": "a1",
                        "content": [{"type": "Text", "text": "Only in the UI"}],
                    },
                }
            ),
            event({"type": "item_completed", "item": {"type": "Plan", "id": "p", "text": "plan"}}),
        ],
    )
    assert texts(msgs) == [
        ("user", "text", "fix it"),
        ("assistant", "thinking", "Plan."),
        ("assistant", "text", "Only in the UI"),
    ]
    assert msgs[2].id == "a1"


# -- injected and system text ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
        "<user_instructions>\nBe terse.\n</user_instructions>",
        "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nuse uv\n</INSTRUCTIONS>",
        "<turn_aborted>\nThe user interrupted.\n</turn_aborted>",
        "<some_future_tag>\nharness text\n</some_future_tag>",
    ],
)
def test_injected_user_text_is_synthetic(tmp_path: Path, text: str) -> None:
    (m,) = read_lines(tmp_path, [meta(), msg("user", text)])
    assert m.role == "user"
    assert m.meta["synthetic"] is True
    assert not m.is_human


def test_injected_event_kinds_are_synthetic(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            event({"type": "user_message", "message": "be nice", "kind": "user_instructions"}),
        ],
    )
    assert [m.is_human for m in msgs] == [False]


def test_provenance_metadata_marks_harness_text(tmp_path: Path) -> None:
    harness = {
        "internal_chat_message_metadata_passthrough": {
            "content_item_kinds": ["environments.environment_context"]
        }
    }
    typed = {"internal_chat_message_metadata_passthrough": {"content_item_kinds": ["user.text"]}}
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            msg("user", "plain words", extra=harness),
            msg("user", "<b>bold</b>", extra=typed),
        ],
    )
    assert [m.is_human for m in msgs] == [False, True]


def test_developer_and_system_roles_become_system(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path, [meta(), msg("developer", "rules"), msg("system", "sys"), msg("critic", "?")]
    )
    assert [(m.role, m.meta["source_role"]) for m in msgs] == [
        ("system", "developer"),
        ("system", "system"),
    ]


def test_images_and_refusals_in_content(tmp_path: Path) -> None:
    content = [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:"},
    ]
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            item({"type": "message", "role": "user", "content": content}),
            event({"type": "user_message", "message": "look", "images": ["data:"]}),
            item(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "refusal", "refusal": "no"}],
                    "phase": "final_answer",
                }
            ),
        ],
    )
    assert texts(msgs) == [("user", "text", "look\n<image />"), ("assistant", "text", "no")]
    assert msgs[1].meta["phase"] == "final_answer"


# -- tool calls and outputs --------------------------------------------------------------------


def call(name: str, arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    return item({"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id})


def output(value: Any, call_id: str = "c1", kind: str = "function_call_output") -> dict[str, Any]:
    return item({"type": kind, "call_id": call_id, "output": value})


def test_arguments_that_are_not_a_json_object(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [meta(), call("a", "not json {", "c1"), call("b", "[1, 2]", "c2"), call("c", 7, "c3")],
    )
    assert [m.tool_input for m in msgs] == [
        {"raw_arguments": "not json {"},
        {"arguments": [1, 2]},
        {"arguments": 7},
    ]
    assert msgs[0].text == "not json {"


def test_json_output_with_exit_code_metadata(tmp_path: Path) -> None:
    body = orjson.dumps(
        {"output": "boom\n", "metadata": {"exit_code": 2, "duration_seconds": 0.1}}
    ).decode()
    msgs = read_lines(tmp_path, [meta(), call("shell", '{"command": ["false"]}'), output(body)])
    result = msgs[1]
    assert (result.type, result.text, result.is_error, result.meta["exit_code"]) == (
        "tool_result",
        "boom\n",
        True,
        2,
    )
    assert result.tool_name == "shell"


def test_header_exit_code_in_plain_output(tmp_path: Path) -> None:
    text = "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 1\nOutput:\nFAILED\n"
    msgs = read_lines(tmp_path, [meta(), call("exec_command", '{"cmd": "pytest"}'), output(text)])
    assert msgs[1].is_error
    assert msgs[1].meta["exit_code"] == 1
    assert msgs[1].text == text


def test_output_shapes(tmp_path: Path) -> None:
    items_list = [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"}]
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            output(items_list, "c1"),
            output({"content": "bad", "success": False}, "c2"),
            output('{"not": "wrapped"}', "c3"),
            output("{broken", "c4"),
            output(None, "c5", "custom_tool_call_output"),
            output({"weird": 1}, "c6"),
        ],
    )
    assert [(m.text, m.is_error) for m in msgs] == [
        ("a\n<image />", False),
        ("bad", True),
        ('{"not": "wrapped"}', False),
        ("{broken", False),
        ("", False),
        ('{"weird":1}', False),
    ]
    assert all("exit_code" not in m.meta for m in msgs)


def test_local_shell_and_custom_tool_calls(tmp_path: Path) -> None:
    shell = {
        "type": "local_shell_call",
        "call_id": "s1",
        "status": "completed",
        "action": {"type": "exec", "command": ["bash", "-lc", "ls -la"], "working_directory": "/w"},
    }
    custom = {
        "type": "custom_tool_call",
        "name": "apply_patch",
        "call_id": "p1",
        "input": "*** Begin Patch\n*** End Patch",
    }
    msgs = read_lines(
        tmp_path,
        [meta(), item(shell), item(custom), item({**shell, "action": None, "call_id": "s2"})],
    )
    assert [(m.tool_name, m.tool_call_id, m.text) for m in msgs] == [
        ("local_shell", "s1", "bash -lc 'ls -la'"),
        ("apply_patch", "p1", "*** Begin Patch\n*** End Patch"),
        ("local_shell", "s2", ""),
    ]
    assert msgs[0].tool_input is not None
    assert msgs[0].tool_input["command"] == ["bash", "-lc", "ls -la"]
    assert msgs[0].meta["status"] == "completed"


def test_web_search_without_a_known_action(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path, [meta(), item({"type": "web_search_call", "action": {"type": "scroll"}})]
    )
    assert (msgs[0].text, msgs[0].tool_input) == ("scroll", {"type": "scroll"})


# -- usage -------------------------------------------------------------------------------------


def test_token_count_usage_goes_to_the_last_assistant_block_once(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            msg("user", "q"),
            msg("assistant", "thinking aloud"),
            call("exec_command", '{"cmd": "ls"}'),
            output("a\n"),
            tokens(100, last_in=100, cached=40, last_out=7),
            tokens(100, last_in=100, cached=40, last_out=7),  # re-broadcast: same total
            event({"type": "token_count", "info": None}),
            msg("assistant", "answer"),
            tokens(200, last_in=50, last_out=3),
        ],
    )
    used = [(m.text, m.usage) for m in msgs if m.usage is not None]
    assert len(used) == 2
    first = used[0][1]
    assert used[0][0] == '{"cmd": "ls"}'
    assert (first.input, first.cache_read, first.output) == (60, 40, 7)
    assert used[1][0] == "answer"
    assert msgs[1].group == msgs[2].group
    assert msgs[1].group is not None
    assert msgs[4].group != msgs[1].group


def test_token_count_without_an_assistant_block_is_dropped(tmp_path: Path) -> None:
    msgs = read_lines(tmp_path, [meta(), msg("user", "q"), tokens(5)])
    assert [m.usage for m in msgs] == [None]


# -- compaction --------------------------------------------------------------------------------


def test_compacted_then_context_compacted_is_one_marker(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            msg("user", "one"),
            env("compacted", {"message": "SUMMARY"}, 2),
            env("turn_context", {"model": "m"}, 2),
            event({"type": "context_compacted"}, 2),
            event({"type": "item_completed", "item": {"type": "ContextCompaction", "id": "x"}}, 2),
            msg("user", "two"),
            event({"type": "context_compacted"}, 3),
        ],
    )
    kinds = [(m.type, m.compaction.summary if m.compaction else None) for m in msgs]
    assert kinds == [
        ("text", None),
        ("compaction", "SUMMARY"),
        ("text", None),
        ("compaction", None),
    ]


def test_context_compacted_before_compacted_is_upgraded(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            msg("user", "one"),
            event({"type": "context_compacted"}),
            env("compacted", {"message": "S"}),
        ],
    )
    assert [(m.type, m.text) for m in msgs] == [("text", "one"), ("compaction", "S")]
    assert "from_event" not in msgs[1].meta


def test_summary_from_replacement_history(tmp_path: Path) -> None:
    history = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "build it"}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "<environment_context>x</environment_context>"}
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "built"}],
        },
        {"type": "compaction", "encrypted_content": "OPAQUE"},
        "junk",
    ]
    tagged = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "the summary"}],
            "internal_chat_message_metadata_passthrough": {
                "content_item_kinds": ["compaction.summary"]
            },
        },
    ]
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            env("compacted", {"message": "", "replacement_history": history, "window_number": 2}),
            msg("user", "next"),
            env("compacted", {"replacement_history": tagged}),
            msg("user", "again"),
            env("compacted", {"message": None}),
        ],
    )
    marks = [m for m in msgs if m.type == "compaction"]
    assert [m.compaction.summary for m in marks if m.compaction] == [
        "user: build it\n\nassistant: built",
        "the summary",
        None,
    ]
    assert marks[0].meta == {"replacement_history_items": 5, "window_number": 2}
    assert "OPAQUE" not in repr(msgs)


# -- chains, threads and headers ---------------------------------------------------------------


def test_resumed_chain_reads_repeated_lines_once(tmp_path: Path) -> None:
    first = [
        meta("t-9"),
        env("turn_context", {"model": "m1", "cwd": "/w"}),
        msg("user", "one"),
        msg("assistant", "a1"),
    ]
    second = [
        *first,
        env("turn_context", {"model": "m2"}, 5),
        msg(
            "user",
            "two",
        ),
        msg("assistant", "a2"),
    ]
    f1 = write(tmp_path / "rollout-a.jsonl", first)
    f2 = write(tmp_path / "rollout-b.jsonl", second)
    session = READER.read([f1, f2], WarningSink())
    assert [(m.text, m.file_index, m.entry_index) for m in session.messages()] == [
        ("one", 0, 3),
        ("a1", 0, 4),
        ("two", 1, 6),
        ("a2", 1, 7),
    ]
    assert session.id == "t-9"
    assert session.model == "m1"
    assert session.meta["models"] == ["m1", "m2"]
    assert session.files == [str(f1), str(f2)]


def test_header_falls_back_to_the_filename_uuid(tmp_path: Path) -> None:
    uuid = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    path = write(tmp_path / f"rollout-2026-03-01T10-00-00-{uuid}.jsonl", [msg("user", "hi")])
    session = READER.read([path], WarningSink())
    assert session.id == uuid
    assert session.cwd is None
    other = write(tmp_path / "notes.jsonl", [env("turn_context", {"model": "m", "cwd": "/c"})])
    session = READER.read([other], WarningSink())
    assert (session.id, session.cwd, session.model) == ("notes", "/c", "m")


def spawn_meta(sid: str, parent: str, second: int, **spawn: Any) -> dict[str, Any]:
    source = {"subagent": {"thread_spawn": {"parent_thread_id": parent, **spawn}}}
    return meta(sid, second, source=source)


def test_nested_child_threads_and_strangers(tmp_path: Path) -> None:
    write(
        tmp_path / "rollout-p.jsonl",
        [meta("P"), msg("user", "start"), call("spawn_agent", '{"task_name": "t"}', "sp")],
    )
    sub = tmp_path / "sub"
    sub.mkdir()
    write(
        sub / "rollout-c.jsonl",
        [
            spawn_meta("C", "P", 5, agent_nickname="Ada", spawn_call_id="sp"),
            msg("assistant", "child work", second=6),
        ],
    )
    write(
        sub / "rollout-g.jsonl", [spawn_meta("G", "C", 7), msg("assistant", "grandchild", second=8)]
    )
    write(
        tmp_path / "rollout-s.jsonl",
        [spawn_meta("S", "OTHER", 5), msg("assistant", "stranger", second=6)],
    )
    write(
        tmp_path / "rollout-loop.jsonl",
        [spawn_meta("P", "P", 5), msg("assistant", "me again", second=6)],
    )
    (tmp_path / "broken.jsonl").write_bytes(b"{not json\n")
    session = READER.read([tmp_path / "rollout-p.jsonl"], WarningSink())
    (child,) = list(session.timeline.root.spans())
    assert (child.id, child.name, child.span_type) == ("C", "Ada", "agent")
    assert [m.text for m in child.messages()] == ["child work"]
    (grandchild,) = list(child.spans())
    assert (grandchild.id, grandchild.name) == ("G", "subagent")
    assert [m.text for m in grandchild.messages()] == ["grandchild"]
    assert isinstance(session.timeline.root.content[-1], TimelineSpan)
    assert len(session.meta["child_files"]) == 2


def test_child_replay_includes_the_parents_meta(tmp_path: Path) -> None:
    path = write(
        tmp_path / "rollout-c.jsonl",
        [
            spawn_meta("C", "P", 5),
            meta("P", 0),
            msg("user", "parent prompt", second=1),
            meta("P", 6),
            msg("user", "child task", second=6),
        ],
    )
    session = READER.read([path], WarningSink())
    assert [m.text for m in session.messages()] == ["child task"]
    assert session.cwd == "/w"
    assert session.id == "C"


# -- bad input ---------------------------------------------------------------------------------


def test_bad_lines_are_reported_with_their_line_numbers(tmp_path: Path) -> None:
    sink = WarningSink()
    path = tmp_path / "rollout-bad.jsonl"
    good = orjson.dumps(msg("user", "fine"))
    path.write_bytes(
        orjson.dumps(meta())
        + b"\n{oops\n[1, 2]\n"
        + b'"text"\n\xff\xfe\n'
        + orjson.dumps(env("response_item", "not an object"))
        + b"\n"
        + orjson.dumps(env("future_kind", "whatever"))
        + b"\n"
        + orjson.dumps(item({"type": "future_item", "x": 1}))
        + b"\n"
        + good
        + b'\n{"truncated": '
    )
    session = READER.read([path], sink)
    assert [m.text for m in session.messages()] == ["fine"]
    assert [w.line for w in sink.warnings] == [2, 3, 4, 5, 6, 10]
    assert all(w.path == str(path) for w in sink.warnings)
    assert "truncated" in sink.warnings[-1].message
    assert "not an object" in sink.warnings[4].message
    assert session.warnings == sink.warnings


def test_unexpected_value_types_are_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(self: object, p: dict[str, Any], where: object) -> None:
        raise TypeError("boom")

    monkeypatch.setattr(stream_mod.ThreadStream, "_response_item", explode)
    sink = WarningSink()
    msgs = read_lines(tmp_path, [meta(), msg("user", "x")], sink)
    assert msgs == []
    assert [(w.line, "boom" in w.message) for w in sink.warnings] == [(2, True)]


def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    sink = WarningSink()
    missing = tmp_path / "gone.jsonl"
    assert list(READER.iter_messages([missing], sink)) == []
    assert sink.warnings[0].path == str(missing)


def test_window_limit_keeps_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_mod, "_WINDOW", 4)
    lines = [meta()] + [msg("assistant", f"m{i}") for i in range(10)]
    stream: Iterator[Message] = READER.iter_messages(
        [write(tmp_path / "r.jsonl", lines)], WarningSink()
    )
    assert next(stream).text == "m0"  # released once the window filled, before the end of the file
    assert [m.text for m in stream] == [f"m{i}" for i in range(1, 10)]


# -- sniffing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        # pi session header + message (FORMATS.md section 5)
        b'{"type":"session","version":3,"id":"u1","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/w"}\n'
        b'{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-05T10:00:01.000Z","message":{"role":"user","content":"hi"}}\n',
        # pi v1 (no version)
        b'{"type":"session","id":"u1","timestamp":"2025-12-09T00:53:29.825Z","cwd":"/w","provider":"anthropic"}\n',
        # Gemini CLI .jsonl header + message (FORMATS.md section 3)
        b'{"sessionId":"5e1c","projectHash":"ab12","startTime":"2026-01-01T00:00:00Z","lastUpdated":"2026-01-01T00:00:00Z","kind":"main"}\n'
        b'{"id":"m1","timestamp":"2026-01-01T00:00:01Z","type":"user","content":[{"text":"ls"}]}\n',
        # Gemini message record first, and a $set line
        b'{"id":"m1","timestamp":"2026-01-01T00:00:01Z","type":"gemini","content":"ok"}\n{"$set":{"summary":"x"}}\n',
        # Claude Code summary line and an assistant line
        b'{"type":"summary","summary":"Fix bug","leafUuid":"u"}\n'
        b'{"type":"assistant","uuid":"a","sessionId":"s","message":{"role":"assistant","content":[]},"timestamp":"2026-01-01T00:00:00Z"}\n',
        # Codex-looking type without a payload object
        b'{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":"x"}\n',
        # a bare id/timestamp object with nothing Codex after it
        b'{"id":"x","timestamp":"2026-01-01T00:00:00Z"}\n{"hello":"world"}\n',
        b"",
        b"\x89PNG\r\n\x1a\n",
        b"[1, 2, 3]\n",
    ],
)
def test_sniff_rejects_other_formats(tmp_path: Path, head: bytes) -> None:
    assert READER.sniff(tmp_path / "x.jsonl", head) == 0.0


def test_sniff_legacy_variants(tmp_path: Path) -> None:
    meta_line = b'{"id":"x","timestamp":"2025-05-01T00:00:00Z","instructions":""}\n'
    state = b'{"record_type":"state"}\n'
    call_line = b'{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}\n'
    assert READER.sniff(tmp_path / "a.jsonl", meta_line + state) == pytest.approx(0.9)
    assert READER.sniff(tmp_path / "a.jsonl", meta_line + call_line) == pytest.approx(0.9)
    assert READER.sniff(tmp_path / "rollout-x.jsonl", meta_line) == pytest.approx(0.6)
    assert READER.sniff(tmp_path / "x.jsonl", meta_line) == 0.0
    assert READER.sniff(
        tmp_path / "x.jsonl", orjson.dumps(event({"type": "task_started"})) + b"\n"
    ) == pytest.approx(0.95)


def test_legacy_record_type_lines_and_tool_calls(tmp_path: Path) -> None:
    lines = [
        {
            "id": "L",
            "timestamp": "2025-05-01T00:00:00Z",
            "instructions": "",
            "git": {"branch": "main"},
        },
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run it"}]},
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["ls"]}',
            "call_id": "c",
        },
        {"record_type": "state"},
        {
            "type": "function_call_output",
            "call_id": "c",
            "output": '{"output":"a.py\\n","metadata":{"exit_code":0}}',
        },
        {"id": "not-meta", "timestamp": "2025-05-01T00:00:01Z"},
    ]
    session = READER.read([write(tmp_path / "rollout-L.jsonl", lines)], WarningSink())
    assert session.id == "L"
    assert session.meta["git"] == {"branch": "main"}
    assert texts(session.messages()) == [
        ("user", "text", "run it"),
        ("assistant", "tool_use", '{"command":["ls"]}'),
        ("tool", "tool_result", "a.py\n"),
    ]
    assert session.messages()[2].meta["exit_code"] == 0


# -- small pieces -------------------------------------------------------------------------------


def test_empty_event_copies_and_odd_content(tmp_path: Path) -> None:
    msgs = read_lines(
        tmp_path,
        [
            meta(),
            event({"type": "user_message", "message": "  "}),
            event({"type": "agent_message", "message": None}),
            event({"type": "agent_reasoning"}),
            event({"type": "item_completed", "item": {"type": "AgentMessage", "content": []}}),
            item({"type": "message", "role": "user", "content": ["plain string part", 5]}),
            item(
                {
                    "type": "message",
                    "role": "user",
                    "content": "as a string",
                    "internal_chat_message_metadata_passthrough": {"other": 1},
                }
            ),
            item({"type": "reasoning", "summary": "not a list"}),
            event(
                {"type": "token_count", "info": {"total_token_usage": 1, "last_token_usage": None}}
            ),
        ],
    )
    assert texts(msgs) == [("user", "text", "plain string part"), ("user", "text", "as a string")]


def test_odd_exit_code_values_are_not_exit_codes() -> None:
    for code in (True, "1", 1.5):
        body = orjson.dumps({"output": "x", "metadata": {"exit_code": code}}).decode()
        assert items_mod.normalize_output(body) == ("x", None, False)


def test_tool_call_of_unknown_kind() -> None:
    where = items_mod.Where(0, 1, None)
    assert items_mod.tool_call({"type": "image_generation_call"}, where) is None


def test_recent_forgets_its_oldest_keys() -> None:
    recent = stream_mod._Recent(limit=2)
    for key in "abc":
        recent.put(key)
    assert list(recent) == ["b", "c"]


def test_legacy_meta_followed_by_a_non_object(tmp_path: Path) -> None:
    head = b'{"id":"x","timestamp":"2025-05-01T00:00:00Z"}\nnull\n'
    assert READER.sniff(tmp_path / "rollout-1.jsonl", head) == pytest.approx(0.6)


def test_child_scan_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "rollout-p.jsonl", [meta("P"), msg("user", "start")])
    write(tmp_path / "rollout-q.jsonl", [spawn_meta("C", "P", 5), msg("assistant", "c", 6)])
    write(tmp_path / "rollout-r.jsonl", [spawn_meta("G", "C", 7), msg("assistant", "g", 8)])
    (tmp_path / "dir.jsonl").mkdir()
    assert threads_mod.first_meta(tmp_path / "dir.jsonl") is None
    parent = [tmp_path / "rollout-p.jsonl"]
    monkeypatch.setattr(threads_mod, "_MAX_DEPTH", 1)
    session = READER.read(parent, WarningSink())
    (child,) = list(session.timeline.root.spans())
    assert list(child.spans()) == []
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    write(deep / "rollout-deep.jsonl", [spawn_meta("D", "Q", 5)])
    write(tmp_path / "a" / "rollout-q.jsonl", [meta("Q")])
    assert threads_mod.find_children("Q", [tmp_path / "a" / "rollout-q.jsonl"]) == [
        deep / "rollout-deep.jsonl"
    ]
    assert threads_mod.find_children("Q", [tmp_path / "rollout-p.jsonl"]) == []  # too deep
    monkeypatch.setattr(threads_mod, "_MAX_SCANNED_FILES", 2)
    assert threads_mod.find_children("P", parent) == []  # only dir.jsonl and the parent seen
