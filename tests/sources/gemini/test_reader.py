"""Gemini CLI reader: the public samples, and our own JSONL replay fixtures."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, Usage
from opencode_restore.sources import detect
from opencode_restore.sources.base import SNIFF_BYTES
from opencode_restore.sources.gemini.reader import READER
from opencode_restore.sources.gemini.replay import parts_text

GEMINI = Path(__file__).resolve().parents[3] / "fixtures" / "gemini"
OWN = GEMINI / "own"
SAMPLES = sorted((GEMINI / "agentsview").glob("*.json")) + sorted(
    (GEMINI / "opensession").glob("*.json")
)


def _read(*names: str, sink: WarningSink | None = None) -> list[Message]:
    return READER.read([GEMINI / n for n in names], sink or WarningSink()).messages()


def _shape(messages: list[Message]) -> list[tuple[str, str, str]]:
    return [(m.id, m.role, m.type) for m in messages]


@pytest.mark.parametrize("path", SAMPLES + sorted(OWN.glob("*.json*")), ids=lambda p: p.name)
def test_every_fixture_is_detected_as_gemini(path: Path) -> None:
    head = path.read_bytes()[:SNIFF_BYTES]
    assert READER.sniff(path, head) >= 0.9
    assert detect(path).name == "gemini"


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_read_without_warnings(path: Path) -> None:
    sink = WarningSink()
    session = READER.read([path], sink)
    assert sink.warnings == []
    assert session.agent == "gemini"
    assert session.messages()
    assert [m.file_index for m in session.messages()] == [0] * len(session.messages())


def test_standard_session() -> None:
    session = READER.read([GEMINI / "agentsview/standard_session.json"], WarningSink())
    assert session.id == "sess-uuid-1"
    assert session.started_at == datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    assert session.meta == {"project_hash": "abc123def456"}
    msgs = session.messages()
    assert _shape(msgs) == [
        ("u1", "user", "text"),
        ("a1", "assistant", "text"),
        ("u2", "user", "text"),
        ("a2", "assistant", "text"),
    ]
    assert [m.text for m in msgs] == [
        "Fix the login bug",
        "Looking at the auth module...",
        "That looks right",
        "Applied the fix.",
    ]
    assert [m.entry_index for m in msgs] == [1, 2, 3, 4]
    assert all(m.is_human for m in msgs if m.role == "user")
    assert msgs[3].timestamp == datetime(2024, 1, 1, 10, 5, 5, tzinfo=UTC)


def test_info_error_warning_are_system_messages() -> None:
    msgs = _read("agentsview/system_messages.json")
    assert [(m.role, m.meta["level"], m.is_error) for m in msgs] == [
        ("system", "info", False),
        ("system", "error", True),
        ("system", "warning", False),
    ]
    assert [m.text for m in msgs] == ["Starting session", "Some error", "Some warning"]


def test_thoughts_become_thinking_messages_before_the_reply() -> None:
    session = READER.read([GEMINI / "agentsview/thinking_only.json"], WarningSink())
    msgs = session.messages()
    assert _shape(msgs) == [
        ("u1", "user", "text"),
        ("a1.thinking1", "assistant", "thinking"),
        ("a1.thinking2", "assistant", "thinking"),
        ("a1", "assistant", "text"),
    ]
    assert msgs[1].text == "Understanding request: The user wants an explanation of the system."
    assert msgs[1].timestamp == datetime(2024, 1, 1, 10, 0, 1, tzinfo=UTC)
    assert {m.group for m in msgs[1:]} == {"a1"}
    assert session.model == "gemini-2.5-pro"


def test_tool_call_without_result_is_only_a_tool_use() -> None:
    msgs = _read("agentsview/tool_calls.json")
    assert [m.type for m in msgs] == ["text", "thinking", "text", "tool_use"]
    call = msgs[-1]
    assert (call.tool_name, call.tool_input, call.meta) == (
        "read_file",
        {"file_path": "main.go"},
        {"status": "success"},
    )


def test_content_parts_list() -> None:
    msgs = _read("opensession/session-parts.json")
    assert [(m.role, m.text, m.model) for m in msgs] == [
        ("user", "review parser", None),
        ("assistant", "analysis complete", "gemini-2.5-pro"),
    ]


def test_tool_call_with_function_response_and_tokens() -> None:
    msgs = _read("opensession/session-toolcalls.json")
    assert _shape(msgs) == [
        ("u1", "user", "text"),
        ("g1", "assistant", "text"),
        ("call-1", "assistant", "tool_use"),
        ("g1.1", "tool", "tool_result"),
    ]
    use, result = msgs[2], msgs[3]
    assert (use.tool_name, use.tool_call_id, use.tool_input) == (
        "run_shell_command",
        "call-1",
        {"command": "git status"},
    )
    assert (result.text, result.tool_call_id, result.is_error) == ("clean", "call-1", False)
    # usage is counted once per response, on its first block
    assert msgs[1].usage == Usage(input=11, output=7)
    assert [m.usage for m in msgs[2:]] == [None, None]


def test_upserts_keep_the_last_version_in_the_first_place() -> None:
    sink = WarningSink()
    session = READER.read([OWN / "upsert_rewind.jsonl"], sink)
    msgs = session.messages()
    assert _shape(msgs) == [
        ("u1", "user", "text"),
        ("g1.thinking1", "assistant", "thinking"),
        ("g1", "assistant", "text"),
        ("call-1", "assistant", "tool_use"),
        ("g1.1", "tool", "tool_result"),
        ("call-2", "assistant", "tool_use"),
        ("g1.2", "tool", "tool_result"),
        ("u3", "user", "text"),
        ("g3", "assistant", "text"),
        ("i1", "system", "text"),
    ]
    # the last of the three g1 records (line 5) is the one read
    assert {m.entry_index for m in msgs if m.group == "g1"} == {5}
    assert msgs[4].text == "greet.py\nREADME.md"
    assert (msgs[6].text, msgs[6].is_error) == ("File not found: missing.py", True)
    # Gemini's prompt count includes cached tokens; thought tokens are output
    assert msgs[1].usage == Usage(input=1000, output=52, cache_read=200)
    assert msgs[1].usage.total == 1252
    assert msgs[8].usage == Usage(input=305, output=20)
    assert msgs[8].text == "Here is the README.\n<inlineData image/png />"
    # displayContent is what the person typed
    assert msgs[0].text == "list files"


def test_rewind_drops_the_turn_and_metadata_is_merged() -> None:
    sink = WarningSink()
    session = READER.read([OWN / "upsert_rewind.jsonl"], sink)
    texts = [m.text for m in session.messages()]
    assert "delete everything" not in texts
    assert "Deleting..." not in texts
    assert session.title == "List the project files"
    assert session.cwd == "/work/demo"
    assert session.model == "gemini-2.5-flash"
    assert session.meta == {"project_hash": "f00d", "kind": "main"}
    assert [str(w) for w in sink.warnings] == [
        f"{OWN / 'upsert_rewind.jsonl'}:10: invalid JSON (unexpected end of data); skipped",
        f"{OWN / 'upsert_rewind.jsonl'}:14: message 'x1' has unknown type 'telemetry'; skipped",
    ]
    assert session.warnings == sink.warnings


def test_compression_checkpoint_becomes_a_summary_compaction() -> None:
    session = READER.read([OWN / "compression.jsonl"], WarningSink())
    msgs = session.messages()
    # the marker where the checkpoint was written: u3/g3 were said before it (and kept)
    assert [m.id for m in msgs] == [
        "u1", "g1", "u2", "g2", "u3", "g3", "0:8", "sum-1", "ack-1", "u4", "g4",
    ]  # fmt: skip
    marker = msgs[6]
    assert (marker.role, marker.type, marker.text) == ("system", "compaction", "Context compacted")
    assert marker.compaction is not None
    assert marker.compaction.kind == "summary"
    assert marker.compaction.first_kept_id == "u3"
    assert marker.compaction.summary == (
        "<state_snapshot>Added --shout to greet.py; tests pass.</state_snapshot>\n\n"
        "Got it. Thanks for the additional context!"
    )
    # the synthetic summary turn is not a human request
    assert msgs[7].meta == {
        "synthetic": True,
        "compaction_summary": True,
        "injected": "compaction_summary",
    }
    assert not msgs[7].is_human
    assert [m.text for m in msgs if m.is_human] == [
        "add a --shout flag",
        "now add a test",
        "update the README",
        "summarise the diff",
    ]
    events = list(session.timeline.root.events())
    assert [e.kind for e in events].count("compaction") == 1
    assert events[6].compaction is marker.compaction


def test_mask_rollback_and_trim_checkpoints() -> None:
    sink = WarningSink()
    msgs = _read("own/checkpoints.jsonl", sink=sink)
    assert [m.id for m in msgs] == ["u1", "g1", "u3", "g3", "0:10", "u4"]
    # masking never overwrites what was said
    assert msgs[1].text == "one"
    # the rolled-back turn is gone
    assert all(m.text not in ("second", "two") for m in msgs)
    trim = msgs[4].compaction
    assert trim is not None
    assert (trim.kind, trim.first_kept_id, trim.summary) == ("trim", "u3", None)
    path = OWN / "checkpoints.jsonl"
    assert [(w.path, w.line) for w in sink.warnings] == [
        (str(path), n) for n in (12, 13, 14, 15, 16)
    ]
    assert [w.message for w in sink.warnings] == [
        "$set is not an object; skipped",
        "$rewindTo is not a string; skipped",
        "unrecognised Gemini record; skipped",
        "JSON list is not an object; skipped",
        "checkpoint message without a string id; skipped",
    ]


def test_legacy_json_continued_in_sibling_jsonl_is_one_chain() -> None:
    names = ("session-2026-02-04T07-00-gemresum.json", "session-2026-02-04T07-00-gemresum.jsonl")
    sink = WarningSink()
    session = READER.read([OWN / n for n in names], sink)
    msgs = session.messages()
    assert sink.warnings == []
    assert [(m.id, m.file_index, m.entry_index) for m in msgs] == [
        ("m1", 0, 1),
        ("m2", 0, 2),
        ("m3", 1, 5),
        ("m4", 1, 7),
    ]
    assert session.id == "gem-resume"
    assert session.title == "Resume demo"
    assert session.files == [str(OWN / n) for n in names]
    assert list(READER.iter_messages([OWN / n for n in names], WarningSink())) == msgs


def test_the_jsonl_alone_holds_the_whole_conversation() -> None:
    msgs = _read("own/session-2026-02-04T07-00-gemresum.jsonl")
    assert [(m.id, m.entry_index) for m in msgs] == [("m1", 2), ("m2", 3), ("m3", 5), ("m4", 7)]


def test_different_session_ids_in_a_chain_are_reported(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"sessionId":"someone-else","projectHash":"x"}\n')
    sink = WarningSink()
    _read("agentsview/standard_session.json", sink=sink)
    READER.read([GEMINI / "agentsview/standard_session.json", other], sink)
    assert [(w.line, w.message) for w in sink.warnings] == [
        (1, "sessionId 'someone-else' differs from 'sess-uuid-1'")
    ]


def test_unknown_rewind_target_clears_history_like_gemini(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"sessionId":"s","projectHash":"p"}\n'
        '{"id":"a","type":"user","content":"first"}\n'
        '{"$rewindTo":"nope"}\n'
        '{"id":"b","type":"user","content":"second"}\n'
    )
    sink = WarningSink()
    assert [m.text for m in READER.read([path], sink).messages()] == ["second"]
    assert [(w.line, w.message) for w in sink.warnings] == [
        (3, "$rewindTo unknown id 'nope': history cleared")
    ]


def test_function_parts_in_content(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"sessionId":"s","startTime":"2026-01-01T00:00:00Z"}\n'
        '{"id":"g","type":"gemini","content":[{"text":"calling"},'
        '{"functionCall":{"id":"c","name":"ls","args":{"dir":"."}}}],"tokens":{"input":5}}\n'
        '{"id":"u","type":"user","content":[{"functionResponse":{"id":"c","name":"ls",'
        '"response":{"files":["a"]}}},{"fileData":{"fileUri":"gs://x"}}]}\n'
        '{"id":"e","type":"gemini","content":"","tokens":{"input":7,"output":1}}\n'
        '{"id":"n","type":"gemini","content":""}\n'
    )
    msgs = READER.read([path], WarningSink()).messages()
    assert [(m.id, m.role, m.type, m.text) for m in msgs] == [
        ("g", "assistant", "text", "calling"),
        ("c", "assistant", "tool_use", '{"dir":"."}'),
        ("u", "user", "text", "<fileData gs://x />"),
        ("u.1", "tool", "tool_result", '{"files":["a"]}'),
        ("e", "assistant", "text", ""),
    ]
    assert (msgs[1].tool_name, msgs[1].tool_call_id) == ("ls", "c")
    assert msgs[4].usage == Usage(input=7, output=1)


def test_bad_legacy_documents_are_reported(tmp_path: Path) -> None:
    empty = tmp_path / "a.json"
    empty.write_text("not json at all")
    listing = tmp_path / "b.json"
    listing.write_text('{"sessionId":"s","messages":{"not":"a list"}}')
    items = tmp_path / "c.json"
    items.write_text('{"sessionId":"s","messages":[1,{"type":"user","content":"no id"}]}')
    sink = WarningSink()
    for p in (empty, listing, items):
        assert READER.read([p], sink).messages() == []
    assert [w.message for w in sink.warnings] == [
        "no JSON object found",
        "legacy session has no messages list",
        "messages[0] has no string id; skipped",
        "messages[1] has no string id; skipped",
    ]


def test_an_unsuffixed_pretty_file_is_read_as_legacy(tmp_path: Path) -> None:
    path = tmp_path / "session"
    path.write_text((GEMINI / "agentsview/standard_session.json").read_text())
    assert len(_read(str(path))) == 4


def test_tool_result_display_and_text_parts(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"sessionId":"s","projectHash":"p"}\n'
        '{"id":"g","type":"gemini","content":"","thoughts":[{"subject":"Only subject"}],'
        '"toolCalls":[{"id":"1","name":"a","args":"bad","status":"cancelled"},'
        '{"id":"2","name":"b","resultDisplay":"shown"},'
        '{"id":"3","name":"c","result":[{"text":"plain"},"x",{"functionResponse":{"response":"s"}}]},'
        '"junk"]}\n'
    )
    msgs = READER.read([path], WarningSink()).messages()
    assert [(m.type, m.text, m.is_error) for m in msgs] == [
        ("thinking", "Only subject", False),
        ("tool_use", "{}", False),
        ("tool_result", "", True),
        ("tool_use", "{}", False),
        ("tool_result", "shown", False),
        ("tool_use", "{}", False),
        ("tool_result", "plain\nx\ns", False),
    ]


@pytest.mark.parametrize(
    ("head", "score"),
    [
        (b'{"$set":{"summary":"x"}}\n', 0.9),
        (b'{"$rewindTo":"a"}\n', 0.9),
        (b'{"sessionId":"s","projectHash":"p","startTime":"t"}\n', 0.9),
        (b'{"id":"g","type":"gemini","content":"x"}\n', 0.6),
        (b'{"sessionId":"s","type":"user","message":{}}\n', 0.0),
        (b"[1,2]\n", 0.0),
        (b'{"type":"session","id":"x"}\n', 0.0),
        (b"  \n{\n", 0.0),
        (b"hello", 0.0),
    ],
)
def test_sniff(head: bytes, score: float) -> None:
    assert READER.sniff(Path("x.jsonl"), head) == score


def test_an_unsuffixed_jsonl_file_is_replayed(tmp_path: Path) -> None:
    path = tmp_path / "session"
    path.write_text(
        '{"sessionId":"s","projectHash":"p"}\n'
        '{"id":"a","type":"user","content":"one"}\n'
        '{"id":"a","type":"user","content":"one, edited"}\n'
    )
    assert [(m.text, m.entry_index) for m in _read(str(path))] == [("one, edited", 3)]


def test_odd_parts_are_skipped_quietly(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"sessionId":"s","projectHash":"p"}\n'
        '{"id":"g","type":"gemini","content":["said",{"functionCall":"no"}],"thoughts":["x"],'
        '"toolCalls":[{"id":"1","name":"a","result":[{},{"functionResponse":{"id":"1"}}]}]}\n'
    )
    msgs = READER.read([path], WarningSink()).messages()
    assert [(m.type, m.text) for m in msgs] == [
        ("text", "said"),
        ("tool_use", "{}"),
        ("tool_result", ""),
    ]


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ({"text": "one part"}, "one part"),
        (42, ""),
        (None, ""),
        (["a", {"text": "b"}, {"functionCall": {}}, 3], "a\nb"),
    ],
)
def test_parts_text(content: object, text: str) -> None:
    assert parts_text(content) == text


def _lines(*objs: object) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


def test_a_resumed_061_log_keeps_each_record_once_on_its_own_line(tmp_path: Path) -> None:
    # The shape Gemini CLI 0.61 writes (see fixtures/devset/gemini): every process starts
    # with a header and a `$set` of its context (the injected <session_context>), and a
    # resumed one restates the whole history in API form, with `<id>_response` copies of
    # the tool results and the reasoning as `thought` parts. Before: the second process's
    # first `$set` was read as a rollback of everything, so every message moved to the
    # last `$set` line, results came twice and the thought text joined the reply.
    where = "<session_context>\n- **Workspace Directories:**\n  - /home/dev/src/app\n"
    ctx = {"id": "ctx", "type": "user", "content": [{"text": where}]}
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}}
    response = {"functionResponse": {"id": "c1", "name": "run_shell_command",
                                     "response": {"output": "a.py"}}}  # fmt: skip
    g1 = {"id": "g1", "type": "gemini", "content": "Listing.", "thoughts": [
        {"subject": "Plan", "description": "look first"}]}  # fmt: skip
    g1_done = {**g1, "toolCalls": [{**call, "status": "success", "result": [response]}]}
    api_g1 = {"id": "g1", "type": "gemini", "content": [
        {"text": "**Plan** look first", "thought": True}, {"text": "Listing."},
        {"functionCall": call}]}  # fmt: skip
    log = tmp_path / "session-x.jsonl"
    log.write_text(
        _lines(
            {"sessionId": "s", "startTime": "2026-01-01T00:00:00Z", "kind": "main"},  # 1
            {"$set": {"messages": [ctx]}},  # 2
            {"id": "u1", "type": "user", "content": [{"text": "list the files"}]},  # 3
            g1,  # 4
            g1_done,  # 5
            {"id": "r1", "type": "user", "content": [response]},  # 6
            {"id": "g2", "type": "gemini", "content": "One file."},  # 7
            {"sessionId": "s", "startTime": "2026-01-01T00:01:00Z", "kind": "main"},  # 8
            {"$set": {"messages": [ctx]}},  # 9
            {"$set": {"sessionId": "s"}},  # 10
            {"$set": {"messages": [ctx, {"id": "u1", "type": "user", "content": "x"}, api_g1,
                                   {"id": "g1_response", "type": "user", "content": [response]},
                                   {"id": "r1", "type": "user", "content": [response]},
                                   {"id": "g2", "type": "gemini", "content": "One file."}]}},  # 11
            {"id": "u2", "type": "user", "content": [{"text": "thanks"}]},  # 12
        )
    )  # fmt: skip
    sink = WarningSink()
    session = READER.read([log], sink)
    messages = session.messages()
    assert sink.warnings == []
    # The first process's start, and the workspace the injected context names.
    assert session.started_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert session.cwd == "/home/dev/src/app"
    assert [(m.id, m.role, m.type, m.entry_index) for m in messages] == [
        ("ctx", "user", "text", 2),
        ("u1", "user", "text", 3),
        ("g1.thinking1", "assistant", "thinking", 5),
        ("g1", "assistant", "text", 5),
        ("c1", "assistant", "tool_use", 5),
        ("r1", "tool", "tool_result", 6),
        ("g2", "assistant", "text", 7),
        ("u2", "user", "text", 12),
    ]
    by_id = {m.id: m for m in messages}
    assert by_id["ctx"].meta["synthetic"] is True
    assert not by_id["ctx"].is_human
    assert by_id["g1"].text == "Listing."
    assert (by_id["r1"].tool_call_id, by_id["r1"].text) == ("c1", "a.py")
    assert [m.text for m in messages if m.is_human] == ["list the files", "thanks"]


def test_thought_parts_are_thinking_not_reply_text(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(
        _lines(
            {"sessionId": "s", "startTime": "2026-01-01T00:00:00Z"},
            {"id": "g", "type": "gemini", "content": [
                {"text": "**Weighing** two options", "thought": True}, {"text": "Done."}]},
        )
    )  # fmt: skip
    messages = READER.read([log], WarningSink()).messages()
    assert [(m.id, m.type, m.text) for m in messages] == [
        ("g.thinking1", "thinking", "**Weighing** two options"),
        ("g", "text", "Done."),
    ]


def test_a_failed_call_answered_by_a_user_record_is_an_error_result(tmp_path: Path) -> None:
    failed = {"functionResponse": {"id": "c", "name": "replace", "response": {"error": "no match"}}}
    log = tmp_path / "s.jsonl"
    log.write_text(
        _lines(
            {"sessionId": "s", "startTime": "2026-01-01T00:00:00Z"},
            {"id": "g", "type": "gemini", "content": "", "toolCalls": [
                {"id": "c", "name": "replace", "args": {}, "status": "error",
                 "result": [failed]}]},
            {"id": "r", "type": "user", "content": [failed]},
        )
    )  # fmt: skip
    [use, result] = READER.read([log], WarningSink()).messages()
    assert (use.id, use.entry_index) == ("c", 2)
    assert (result.id, result.entry_index, result.is_error, result.text) == (
        "r",
        3,
        True,
        "no match",
    )
