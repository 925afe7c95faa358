"""The opencode reader on real recordings (opencode 1.18.33) and the opensession storage tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.model import Message, Session
from opencode_restore.sources import detect
from opencode_restore.sources.base import SNIFF_BYTES
from opencode_restore.sources.opencode.reader import READER, list_sessions, read_session

TURN1 = "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a test for it."
TURN2 = "Also mention the new flag in the README."
TURN3 = "Show me the git diff summary and we're done."


@pytest.fixture
def recorded(fixtures: Path, tmp_path: Path) -> Path:
    """A private copy of the recordings: opening a db may create a -shm file beside it."""
    dest = tmp_path / "recorded"
    shutil.copytree(fixtures / "opencode" / "recorded", dest)
    return dest


def _read(path: Path) -> tuple[Session, WarningSink]:
    sink = WarningSink()
    return READER.read([path], sink), sink


def _humans(session: Session) -> list[Message]:
    return [m for m in session.messages() if m.is_human]


def _tool_names(messages: list[Message]) -> list[str]:
    return [m.tool_name or "" for m in messages if m.type == "tool_use"]


def _sniff(path: Path) -> float:
    head = b"" if path.is_dir() else path.read_bytes()[:SNIFF_BYTES]
    return READER.sniff(path, head)


@pytest.mark.parametrize("source", ["opencode.db", "export.json"])
def test_run_noninteractive_three_turns_tools_reasoning_patches(
    recorded: Path, source: str
) -> None:
    session, sink = _read(recorded / "run-noninteractive" / source)
    assert sink.warnings == []
    assert session.id == (recorded / "run-noninteractive" / "session_id.txt").read_text().strip()
    assert session.agent == "opencode"
    assert session.title == "Add --shout flag to greet CLI"
    assert session.cwd == "/home/dev/src/greet-cli"
    assert session.model == "coder-1"
    assert session.started_at is not None
    assert session.started_at.year == 2026
    messages = session.messages()
    # `opencode run "<prompt>"` was given the prompt with its shell quotes.
    assert [m.text for m in _humans(session)] == [f'"{t}"' for t in (TURN1, TURN2, TURN3)]
    assert [m.text for m in messages if m.type == "thinking"] == [
        "The user wants a new CLI flag. I should look at the entry point first.",
        "Need to document the flag; read README first.",
    ]
    # The snapshot patch parts are the files each step changed, not tool calls (QA D2).
    assert _tool_names(messages) == [
        "read", "bash", "edit", "write", "bash", "read", "edit", "bash",
    ]  # fmt: skip
    calls = {m.tool_call_id for m in messages if m.type == "tool_use"}
    assert None not in calls
    assert calls == {m.tool_call_id for m in messages if m.type == "tool_result"}
    changes = [m for m in messages if m.type == "file_changes"]
    assert [(m.role, m.meta["files"], m.text) for m in changes] == [
        ("assistant", [p], p)
        for p in (
            "/home/dev/src/greet-cli/greet.py",
            "/home/dev/src/greet-cli/tests/test_greet.py",
            "/home/dev/src/greet-cli/README.md",
        )
    ]
    assert not [m for m in messages if m.type in ("compaction", "summary")]
    results = [m for m in messages if m.type == "tool_result"]
    assert len(results) == 8
    assert not any(m.is_error for m in results)
    unittest_run = next(m for m in results if "Ran 2 tests" in m.text)
    assert unittest_run.meta["exit_code"] == 0
    # Usage is counted once per assistant message: it adds up to the session's own totals.
    assert session.usage().input == 95439
    assert session.usage().output == 409


@pytest.mark.parametrize("source", ["opencode.db", "export.json"])
def test_tui_compact_one_manual_compaction_between_turns_2_and_3(
    recorded: Path, source: str
) -> None:
    session, sink = _read(recorded / "tui-compact" / source)
    assert sink.warnings == []
    messages = session.messages()
    humans = _humans(session)
    assert [m.text for m in humans] == [TURN1, TURN2, TURN3]
    compactions = [m for m in messages if m.type == "compaction"]
    assert len(compactions) == 1
    marker = compactions[0]
    assert (marker.role, marker.id) == ("system", "prt_1fde58a480012Gaw2Sg8yKArsX")
    assert marker.compaction is not None
    assert marker.compaction.kind == "summary"
    assert marker.compaction.trigger == "manual"
    assert marker.compaction.summary is not None
    assert marker.compaction.summary.startswith("## Objective\n")
    assert "## Work State" in marker.compaction.summary
    assert marker.compaction.tokens_before == 1669
    assert marker.compaction.tokens_after == 177
    position = messages.index(marker)
    assert messages.index(humans[1]) < position < messages.index(humans[2])
    summary = messages[position + 1]
    assert (summary.role, summary.type, summary.is_human) == ("assistant", "summary", False)
    assert summary.text == marker.compaction.summary
    events = list(session.timeline.root.events())
    assert [e.kind for e in events].count("compaction") == 1
    assert next(e for e in events if e.kind == "compaction").compaction is marker.compaction


def test_db_and_export_give_the_same_ids_and_numbering(recorded: Path) -> None:
    for scenario in ("run-noninteractive", "tui-compact"):
        db, _ = _read(recorded / scenario / "opencode.db")
        export, _ = _read(recorded / scenario / "export.json")
        key = [(m.id, m.entry_index, m.type, m.text) for m in db.messages()]
        assert key == [(m.id, m.entry_index, m.type, m.text) for m in export.messages()]


def test_ids_numbering_timestamps_and_groups(recorded: Path) -> None:
    session, _ = _read(recorded / "run-noninteractive" / "export.json")
    messages = session.messages()
    first = messages[0]
    assert (first.id, first.entry_index, first.file_index) == (
        "prt_1fde5f693001PamvgaIttgDV9G",
        1,
        0,
    )
    # The user part has no time of its own: the message's creation time is used.
    assert first.timestamp is not None
    assert int(first.timestamp.timestamp() * 1000) == 1795261068939
    thinking = messages[1]
    assert thinking.entry_index == 3  # the step-start part before it is counted, not shown
    assert int(thinking.timestamp.timestamp() * 1000) == 1795261071152  # type: ignore[union-attr]
    assert thinking.group == "msg_1fde5fa10001Lcw9JT6G1Yc4ya"
    assert thinking.model == "coder-1"
    use, result = (m for m in messages if m.tool_name == "read" and m.group == thinking.group)
    assert result.id == f"{use.id}:result"
    assert use.entry_index == result.entry_index
    assert use.tool_call_id == result.tool_call_id == "call_b536120cf4ac4128bbf8"
    assert use.tool_input == {"filePath": "/home/dev/src/greet-cli/greet.py"}
    assert result.role == "tool"
    assert "Tiny greeting CLI" in result.text
    assert len({m.id for m in messages}) == len(messages)
    assert [m.entry_index for m in messages] == sorted(m.entry_index for m in messages)
    # Usage sits on the first block of each assistant message only.
    assert thinking.usage is not None
    assert thinking.usage.input == 7787
    assert all(m.usage is None for m in messages if m.group == thinking.group and m is not thinking)


def test_iter_messages_streams_the_same_messages(recorded: Path) -> None:
    path = recorded / "tui-compact" / "opencode.db"
    streamed = list(READER.iter_messages([path], WarningSink()))
    session, _ = _read(path)
    assert [m.id for m in streamed] == [m.id for m in session.messages()]


def test_event_stream_turn3(recorded: Path) -> None:
    path = recorded / "run-noninteractive" / "turn3.jsonl"
    session, sink = _read(path)
    assert sink.warnings == []
    assert session.id == "ses_e021a09c7ffeqgHMSjFEDIo72J"
    assert session.meta["source"] == "events"
    messages = session.messages()
    # The stream has no user prompt: only the assistant's side of turn 3.
    assert _humans(session) == []
    assert [(m.type, m.entry_index) for m in messages] == [
        ("text", 2), ("tool_use", 3), ("tool_result", 3), ("text", 6),
    ]  # fmt: skip
    assert messages[1].tool_input == {
        "command": "git diff --stat && git status --short",
        "workdir": "/home/dev/src/greet-cli",
    }
    assert messages[0].usage is not None
    assert messages[0].usage.input == 9223
    assert messages[3].usage is not None
    assert messages[3].usage.output == 63
    assert list_sessions(path)[0]["id"] == session.id


def test_list_and_read_sessions_of_a_db(recorded: Path) -> None:
    path = recorded / "tui-compact" / "opencode.db"
    listed = list_sessions(path)
    assert [(s["id"], s["title"], s["parent_id"]) for s in listed] == [
        ("ses_e021ac976ffeprCgfn115CWSLu", "Add --shout flag to greet CLI", None)
    ]
    assert listed[0]["directory"] == "/home/dev/src/greet-cli"
    assert listed[0]["created"] < listed[0]["updated"]
    session = read_session(path, "ses_e021ac976ffeprCgfn115CWSLu", WarningSink())
    assert len(_humans(session)) == 3


def test_db_directory_is_accepted(recorded: Path) -> None:
    folder = recorded / "tui-compact"
    assert _sniff(folder) == 0.8
    session, _ = _read(folder)
    assert session.id == "ses_e021ac976ffeprCgfn115CWSLu"
    assert session.meta["source"] == "sqlite"


def test_sniff_and_detect(recorded: Path, fixtures: Path, tmp_path: Path) -> None:
    assert _sniff(recorded / "run-noninteractive" / "opencode.db") == 0.95
    assert _sniff(recorded / "run-noninteractive" / "export.json") == 0.9
    assert _sniff(recorded / "run-noninteractive" / "turn3.jsonl") == 0.85
    tree = fixtures / "opencode" / "opensession"
    assert _sniff(tree) == _sniff(tree / "storage") == 0.9
    assert _sniff(tree / "storage" / "session" / "project" / "ses_fixture.json") == 0.9
    assert _sniff(recorded / "tui-compact" / "session_id.txt") == 0.0
    assert _sniff(tmp_path) == 0.0
    other = tmp_path / "other.json"
    other.write_bytes(b'{"info": {}, "messages": []}')
    assert _sniff(other) == 0.5
    other.write_bytes(b'{"messages": [{"type": "info"}], "info": {}}')
    assert _sniff(other) == 0.0
    assert detect(recorded / "tui-compact" / "opencode.db") is READER
    assert detect(recorded / "tui-compact" / "export.json") is READER
    assert detect(tree) is READER


def test_opensession_tree_of_two_sessions_needs_a_choice(fixtures: Path) -> None:
    tree = fixtures / "opencode" / "opensession"
    listed = list_sessions(tree)
    assert {s["id"] for s in listed} == {"ses_company_logic", "ses_fixture"}
    # Two root sessions and none named: an error naming both, never a silent pick.
    with pytest.raises(SourceError, match="holds 2 sessions; choose one with --session") as err:
        _read(tree)
    assert "ses_fixture" in str(err.value)
    assert "OpenCode company logic fixture" in str(err.value)
    sink = WarningSink()
    session = READER.read([tree], sink, session="ses_fix")  # a unique prefix
    assert session.id == "ses_fixture"
    assert session.meta["source"] == "storage"
    # Its one message keeps its parts under part/msg_abc123/, not part/abc123/: none are found.
    assert session.messages() == []
    assert sink.warnings == []


def test_opensession_tree_company_logic(fixtures: Path) -> None:
    path = fixtures / "opencode" / "opensession" / "storage"
    session = read_session(path, "ses_company_logic", WarningSink())
    assert session.title == "OpenCode company logic fixture"
    assert session.cwd == "/tmp/opencode-company"
    assert session.model == "gpt-5.2-codex"
    got = [(m.id, m.role, m.type, m.entry_index) for m in session.messages()]
    # Parts without opencode ids are ordered by their start time.
    assert got == [
        ("part_user_text", "user", "text", 1),
        ("part_user_file", "user", "text", 2),
        ("part_reasoning", "assistant", "thinking", 3),
        ("part_tool_done", "assistant", "tool_use", 4),
        ("part_tool_done:result", "tool", "tool_result", 4),
        ("part_patch", "assistant", "file_changes", 5),
        ("part_tool_running", "assistant", "tool_use", 6),
    ]
    by_id = {m.id: m for m in session.messages()}
    assert [m.text for m in _humans(session)] == ["run diagnostics"]
    attachment = by_id["part_user_file"]
    assert attachment.text == "<file notes.md>"
    assert attachment.meta["synthetic"] is True
    assert attachment.meta["url"] == "file:///tmp/opencode-company/notes.md"
    assert by_id["part_reasoning"].text == ""
    assert by_id["part_reasoning"].meta["encrypted"]
    # "Completed" (capitalised, not real opencode) is accepted case-insensitively.
    done = by_id["part_tool_done:result"]
    assert done.text == "Found 1 match"
    assert done.tool_name == "grep"
    assert not done.is_error
    assert by_id["part_tool_done"].meta == {"status": "completed", "title": "todo"}
    running = by_id["part_tool_running"]
    assert running.tool_call_id == "functions.edit:27"
    assert running.meta["status"] == "running"
    assert by_id["part_patch"].meta["files"] == [
        "/tmp/opencode-company/main.rs",
        "/tmp/opencode-company/lib.rs",
    ]


def test_session_file_in_tree_selects_that_session(fixtures: Path) -> None:
    path = fixtures / "opencode/opensession/storage/session/project/ses_company_logic.json"
    session, _ = _read(path)
    assert session.id == "ses_company_logic"
    assert len(session.messages()) == 7


@pytest.mark.parametrize(
    "path", ["run-noninteractive/opencode.db", "tui-compact/export.json", "tui-compact/opencode.db"]
)
def test_each_turn_does_what_the_recording_did(recorded: Path, path: str) -> None:
    session, _ = _read(recorded / path)
    turns: list[list[tuple[str, str]]] = []
    for m in session.messages():
        if m.is_human:
            turns.append([])
        elif m.type == "tool_use":
            inp = m.tool_input or {}
            target = str(inp.get("filePath", inp.get("command", "")))
            turns[-1].append((m.tool_name or "", target.replace("/home/dev/src/greet-cli/", "")))
    assert turns == [
        [
            ("read", "greet.py"),
            ("bash", "python3 greet.py --name Ada && git status --short"),
            ("edit", "greet.py"),
            ("write", "tests/test_greet.py"),
            ("bash", "python3 -m unittest discover -s tests -t . -v"),
        ],
        [("read", "README.md"), ("edit", "README.md")],
        [("bash", "git diff --stat && git status --short")],
    ]
