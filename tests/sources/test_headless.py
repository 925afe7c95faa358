"""Headless outputs users keep from CI runs: ``claude -p --output-format stream-json`` and
``codex exec --json``. Both were rejected as an unknown log format."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.model import Session, TimelineSpan
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources import detect, iter_messages, open_session
from opencode_restore.sources.codex.exec_json import EVENT_TYPES

FIX = Path(__file__).resolve().parents[2] / "fixtures"
CLAUDE_STREAM = FIX / "claude-code" / "headless" / "print-continue-turn3.jsonl"
CLAUDE_TRANSCRIPT = (
    FIX
    / "claude-code"
    / "recorded"
    / "print-continue"
    / "d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"
)
CODEX_EXEC = FIX / "codex" / "headless" / "exec-resume-turn3.jsonl"
CODEX_ROLLOUT = (
    FIX
    / "codex"
    / "recorded"
    / "exec-resume"
    / "rollout-2026-11-21T11-41-29-01a1fde9-539c-77f2-9e0a-d405fab49546.jsonl"
)


def _write(path: Path, *objs: object) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


def _shape(session_messages: list) -> list[tuple[str, str, int]]:  # type: ignore[type-arg]
    return [(m.role, m.type, m.entry_index) for m in session_messages]


def test_claude_stream_json_is_read_as_the_same_session() -> None:
    assert detect(CLAUDE_STREAM).name == "claude-code"
    sink = WarningSink()
    session = open_session([CLAUDE_STREAM], sink)
    assert sink.warnings == []
    transcript = open_session([CLAUDE_TRANSCRIPT], WarningSink())
    assert session.id == transcript.id == "d703ad6a-fc57-46ca-94d6-a6af7cf0c933"
    assert (session.cwd, session.model) == ("/home/dev/src/greet-cli", "claude-opus-4-8")
    assert session.meta["source"] == "stream-json"
    assert round(session.meta["reported_cost_usd"], 6) == 0.216155
    messages = session.messages()
    assert _shape(messages) == [
        ("assistant", "text", 4),
        ("assistant", "tool_use", 5),
        ("tool", "tool_result", 6),
        ("assistant", "text", 7),
    ]
    call, result = messages[1], messages[2]
    assert call.tool_call_id == result.tool_call_id == "toolu_d2c040918e0248619197a512"
    # The transcript holds the same call: the stream is the same run, seen from stdout.
    assert call.tool_call_id in {m.tool_call_id for m in transcript.messages()}
    assert "All done" in messages[-1].text
    # Usage once per response, though a response is split over several lines.
    assert messages[0].usage is not None
    assert messages[1].usage is None
    [turn] = parse_turns(session)
    assert [c.command for c in turn.commands] == ["git diff --stat && git status --short"]
    streamed = [m.id for m in iter_messages([CLAUDE_STREAM], WarningSink())]
    assert streamed == [m.id for m in messages]


def test_claude_stream_sub_agent_and_compaction(tmp_path: Path) -> None:
    sid = "5e55"
    task = {"type": "tool_use", "id": "toolu_task", "name": "Task",
            "input": {"description": "look around", "prompt": "list files"}}  # fmt: skip
    path = _write(
        tmp_path / "run.jsonl",
        {"type": "system", "subtype": "init", "cwd": "/w", "session_id": sid, "model": "m"},
        {"type": "user", "message": {"role": "user", "content": "fix the bug"},
         "parent_tool_use_id": None, "session_id": sid, "uuid": "u1"},
        {"type": "assistant", "message": {"id": "r1", "role": "assistant", "content": [task]},
         "parent_tool_use_id": None, "session_id": sid, "uuid": "a1"},
        {"type": "assistant", "message": {"id": "r2", "role": "assistant",
         "content": [{"type": "text", "text": "I see two files."}]},
         "parent_tool_use_id": "toolu_task", "session_id": sid, "uuid": "s1"},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
         "tool_use_id": "toolu_task", "content": "two files"}]},
         "parent_tool_use_id": None, "session_id": sid, "uuid": "u2"},
        {"type": "system", "subtype": "compact_boundary", "session_id": sid, "uuid": "c1",
         "compact_metadata": {"trigger": "auto"}},
        {"type": "stream_event", "event": {"type": "content_block_delta"}, "session_id": sid},
        {"type": "result", "subtype": "success", "session_id": sid, "total_cost_usd": 0.5},
    )  # fmt: skip
    assert detect(path).name == "claude-code"
    session = open_session([path], WarningSink())
    root = session.timeline.root.content
    kinds = [i.id if isinstance(i, TimelineSpan) else i.message.type for i in root]  # type: ignore[union-attr]
    assert kinds == ["text", "tool_use", "agent@toolu_task", "tool_result", "compaction"]
    agent = next(i for i in root if isinstance(i, TimelineSpan))
    assert agent.name == "look around"
    assert [m.text for m in agent.messages()] == ["I see two files."]
    assert [m.text for m in session.messages() if m.is_human] == ["fix the bug"]
    streamed = [m.id for m in iter_messages([path], WarningSink())]
    assert streamed == ["u1", "a1", "u2", "c1"]


def test_codex_exec_json_is_read_as_the_same_thread() -> None:
    assert detect(CODEX_EXEC).name == "codex"
    sink = WarningSink()
    session = open_session([CODEX_EXEC], sink)
    assert sink.warnings == []
    rollout = open_session([CODEX_ROLLOUT], WarningSink())
    assert session.id == rollout.id == "01a1fde9-539c-77f2-9e0a-d405fab49546"
    assert session.meta["source"] == "exec-json"
    messages = session.messages()
    assert [(m.id, m.role, m.type, m.entry_index) for m in messages] == [
        ("item_0", "system", "text", 2),
        ("item_1", "assistant", "text", 4),
        ("item_2:call", "assistant", "tool_use", 5),
        ("item_2", "tool", "tool_result", 6),
        ("item_3", "assistant", "text", 7),
    ]
    assert messages[3].meta["exit_code"] == 0
    assert not messages[3].is_error
    assert messages[4].usage is not None
    assert messages[4].usage.cache_read == 63242
    [turn] = parse_turns(session)
    assert [(c.command, c.exit_code) for c in turn.commands] == [
        ("/bin/bash -lc 'git diff --stat && git status --short'", 0)
    ]


def test_codex_exec_json_item_kinds_and_a_chain(tmp_path: Path) -> None:
    def item(kind: str, iid: str, **fields: object) -> dict[str, object]:
        return {"type": kind, "item": {"id": iid, **fields}}

    run = "bash -lc 'cat missing.txt'"
    first = _write(
        tmp_path / "one.jsonl",
        {"type": "thread.started", "thread_id": "th-1"},
        {"type": "turn.started"},
        item("item.completed", "item_0", type="reasoning", text="**Plan** read first"),
        item("item.started", "item_1", type="todo_list", items=[{"text": "a", "completed": False}]),
        item("item.started", "item_2", type="command_execution", command=run, status="in_progress"),
        item("item.completed", "item_2", type="command_execution", command=run,
             aggregated_output="cat: missing.txt: No such file", exit_code=1, status="failed"),
        item("item.completed", "item_3", type="file_change", status="completed",
             changes=[{"path": "src/new.py", "kind": "add"},
                      {"path": "src/old.py", "kind": "delete"},
                      {"path": "README.md", "kind": "update"}]),
        item("item.started", "item_4", type="mcp_tool_call", server="docs", tool="search",
             arguments={"q": "sqlite"}, status="in_progress"),
        item("item.completed", "item_4", type="mcp_tool_call", server="docs", tool="search",
             arguments={"q": "sqlite"}, status="completed",
             result={"content": [{"type": "text", "text": "found 3 pages"}]}),
        item("item.completed", "item_5", type="web_search", query="sqlite autoincrement"),
        item("item.completed", "item_1", type="todo_list", items=[{"text": "a"}]),
        {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}},
        {"type": "turn.started"},
        item("item.started", "item_6", type="command_execution", command="sleep 100",
             status="in_progress"),
    )  # fmt: skip
    second = _write(
        tmp_path / "two.jsonl",
        {"type": "thread.started", "thread_id": "th-1"},
        item("item.completed", "item_0", type="agent_message", text="Resumed."),
        {"type": "turn.failed", "error": {"message": "stream disconnected"}},
        {"type": "error", "message": "giving up"},
        {"type": "thread.started", "thread_id": "th-2"},
    )  # fmt: skip
    sink = WarningSink()
    session = open_session([first, second], sink)
    assert [str(w) for w in sink.warnings] == [f"{second}:5: thread_id 'th-2' differs from 'th-1'"]
    assert session.id == "th-1"
    got = [(m.id, m.type, m.tool_name, m.is_error) for m in session.messages()]
    assert got == [
        ("item_0", "thinking", None, False),
        ("item_2:call", "tool_use", "exec_command", False),
        ("item_2", "tool_result", "exec_command", True),
        ("item_3:call", "tool_use", "apply_patch", False),
        ("item_3", "tool_result", "apply_patch", False),
        ("item_4:call", "tool_use", "docs.search", False),
        ("item_4", "tool_result", "docs.search", False),
        ("item_5:call", "tool_use", "web_search", False),
        ("item_5", "tool_result", "web_search", False),
        # Still running when the run ended: a call without a result.
        ("item_6:call", "tool_use", "exec_command", False),
        ("1:item_0", "text", None, False),
        ("1:3", "text", None, True),
        ("1:4", "text", None, True),
    ]
    by_id = {m.id: m for m in session.messages()}
    assert by_id["item_2"].meta["exit_code"] == 1
    assert by_id["item_2:call"].entry_index == 5  # where the command started
    assert by_id["item_4"].text == "found 3 pages"
    assert by_id["1:3"].text == "stream disconnected"
    [turn] = parse_turns(session)
    assert sorted((a.file_path, a.action) for a in turn.artifacts) == [
        ("README.md", "edited"),
        ("src/new.py", "created"),
        ("src/old.py", "deleted"),
    ]
    assert [(c.command, c.exit_code) for c in turn.commands] == [
        (run, 1),
        ("sleep 100", None),
    ]


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_items = st.fixed_dictionaries(
    {"id": st.sampled_from(["item_0", "item_1"]) | _values},
    optional={
        "type": st.sampled_from(
            ["agent_message", "reasoning", "command_execution", "file_change", "mcp_tool_call",
             "web_search", "todo_list", "error"]
        ) | _values,
        "text": _values, "command": _values, "aggregated_output": _values, "exit_code": _values,
        "status": _values, "changes": _values, "arguments": _values, "result": _values,
        "error": _values, "server": _values, "tool": _values, "query": _values,
    },
)  # fmt: skip
_exec_events = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(EVENT_TYPES)) | _values},
    optional={"item": _items | _values, "thread_id": _values, "usage": _values, "error": _values},
)
_stream_lines = st.fixed_dictionaries(
    {"type": st.sampled_from(["system", "assistant", "user", "result", "stream_event"]) | _values,
     "session_id": st.just("s") | _values},
    optional={
        "subtype": _values, "uuid": _values, "parent_tool_use_id": _values,
        "message": st.fixed_dictionaries({}, optional={"id": _values, "content": _values,
                                                       "usage": _values}) | _values,
    },
)  # fmt: skip


def _forced(path: Path, agent: str) -> Session | None:
    """The session read as ``agent``; None when its lines make no message (refused)."""
    try:
        return open_session([path], WarningSink(), agent=agent)
    except SourceError as exc:
        reason = exc.reason
    assert reason.startswith("no messages could be read"), reason
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_exec_events, max_size=12))
def test_any_exec_events_read_without_raising(events: list[dict[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / "x.jsonl", {"type": "thread.started", "thread_id": "t"}, *events)
        session = _forced(path, "codex")
        if session is None:
            return
        calls = [m for m in session.messages() if m.type == "tool_use"]
        results = [m for m in session.messages() if m.type == "tool_result"]
        assert len(results) <= len(calls)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_stream_lines, max_size=12))
def test_any_stream_lines_read_without_raising(lines: list[dict[str, object]]) -> None:
    init = {"type": "system", "subtype": "init", "session_id": "s", "cwd": "/w"}
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / "x.jsonl", init, *lines)
        session = _forced(path, "claude-code")
        if session is None:
            return
        assert session.id == "s"
        assert len(list(iter_messages([path], WarningSink(), agent="claude-code"))) <= len(
            [m for s in session.timeline.root.walk() for m in s.messages()]
        )
