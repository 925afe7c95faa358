"""Artifacts that must match what really happened: failed calls, opencode snapshots, recordings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, TimelineEvent, TimelineSpan, Turn
from opencode_restore.pipeline.stages.turn_parser import (
    _Files,
    _Normalizer,
    _subagents,
    build_turn,
    parse_turns,
)
from opencode_restore.sources import open_session

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
CODEX_TUI = "rollout-2026-11-21T11-38-37-01a1fde6-b303-7f63-b067-d32dfaddcad9.jsonl"
CODEX_EXEC = "rollout-2026-11-21T11-41-29-01a1fde9-539c-77f2-9e0a-d405fab49546.jsonl"

_n = 0


def msg(role: str, type_: str = "text", text: str = "", **kw: Any) -> Message:
    global _n
    _n += 1
    return Message(id=f"m{_n}", role=role, type=type_, text=text, entry_index=_n, **kw)  # type: ignore[arg-type]


def tool(name: str, call_id: str | None, group: str | None = None, **inp: Any) -> Message:
    return msg(
        "assistant", "tool_use", tool_name=name, tool_call_id=call_id, tool_input=inp, group=group
    )


def result(call_id: str, text: str = "", **kw: Any) -> Message:
    return msg("tool", "tool_result", text=text, tool_call_id=call_id, **kw)


def snapshot(files: list[str], group: str | None = None) -> Message:
    """An opencode ``patch`` part as the opencode reader emits it."""
    return msg(
        "assistant",
        "file_changes",
        "\n".join(files),
        group=group,
        meta={"files": files, "hash": "abc"},
    )


def facts(turn: Turn) -> list[tuple[str, str, str]]:
    return [(a.file_path, a.action, a.message_id) for a in turn.artifacts]


def read_session(*parts: str) -> list[Turn]:
    paths = [FIXTURES.joinpath(*parts)]
    return parse_turns(open_session(paths, WarningSink()))


# -- defect 1: a failed tool call changes nothing -------------------------------------------


def test_failed_file_tools_make_no_artifact_and_are_kept_as_failed() -> None:
    msgs = [
        msg("user", text="fix it"),
        edit := tool("Edit", "e1", file_path="/w/app.py", old_string="x", new_string="y"),
        result("e1", "<tool_use_error>String to replace not found in file.</tool_use_error>"),
        write := tool("Write", "w1", file_path="/w/new.py", content="x"),
        result("w1", "Permission denied", is_error=True),
        tool("Read", "r1", file_path="/w/gone.py"),
        result("r1", "File does not exist.", is_error=True),
        tool("edit", "o1", filePath="/w/b.py"),  # opencode: the part's state was "error"
        result("o1", "Error: oldString not found in content", is_error=True),
        tool("apply_patch", "p1", input="*** Begin Patch\n*** Update File: c.py\n*** End Patch"),
        result("p1", "apply_patch verification failed: Failed to find expected lines in c.py"),
        tool("Edit", "e2", file_path="/w/d.py"),
        result("e2", "String to replace not found in file."),  # no flag, the tool's own words
        tool("Write", "w2", file_path="/w/new.py", content="y"),
        result("w2", "File created successfully at: /w/new.py"),
    ]
    (turn,) = parse_turns(msgs, cwd="/w")
    # The second Write is the first that worked: it creates the file.
    assert facts(turn) == [("new.py", "created", msgs[-2].id)]
    assert [(a.file_path, a.action) for a in turn.failed_artifacts] == [
        ("app.py", "edited"),
        ("new.py", "created"),
        ("gone.py", "read"),
        ("b.py", "edited"),
        ("c.py", "edited"),
        ("d.py", "edited"),
    ]
    assert turn.failed_artifacts[0].message_id == edit.id
    assert turn.failed_artifacts[1].message_id == write.id


def test_failed_shell_commands_make_no_artifact_but_stay_commands() -> None:
    msgs = [
        msg("user", text="x"),
        tool("Bash", "b1", command="echo hi > out.txt && false"),
        result("b1", "Exit code 1", is_error=True, meta={"exit_code": 1}),
        tool("exec_command", "b2", cmd="rm old.txt"),
        result("b2", "rm: cannot remove", meta={"exit_code": 1}),
        tool("Bash", "b3", command="cat README.md"),
        result("b3", "Error: this is the file's own first line"),  # output, not a failure
    ]
    (turn,) = parse_turns(msgs)
    assert facts(turn) == [("README.md", "read", msgs[5].id)]
    assert [(a.file_path, a.action) for a in turn.failed_artifacts] == [
        ("out.txt", "created"),
        ("old.txt", "deleted"),
    ]
    assert [(c.command, c.exit_code, c.is_error) for c in turn.commands] == [
        ("echo hi > out.txt && false", 1, True),
        ("rm old.txt", 1, False),
        ("cat README.md", None, False),
    ]


def test_a_call_without_result_still_counts() -> None:
    # A log cut off mid-call (or an opencode part still "running") says nothing about failure.
    (turn,) = parse_turns([msg("user", text="x"), tool("Edit", "e1", file_path="a.py")])
    assert [(a.file_path, a.action) for a in turn.artifacts] == [("a.py", "edited")]
    assert turn.failed_artifacts == []


def test_qa_failed_edit_log() -> None:
    (turn,) = read_session("pipeline", "qa", "failedit.jsonl")
    assert turn.artifacts == []
    assert [(a.file_path, a.action) for a in turn.failed_artifacts] == [
        ("app.py", "edited"),
        ("new.py", "created"),
    ]


# -- defect 10: opencode snapshot (patch) parts ----------------------------------------------


def test_snapshot_repeating_the_steps_own_edits_adds_nothing() -> None:
    msgs = [
        msg("user", text="x"),
        tool("write", "w1", group="s1", filePath="/w/t.py"),
        result("w1", "Wrote file successfully.", group="s1"),
        snapshot(["/w/t.py"], group="s1"),
        tool("edit", "e1", group="s2", filePath="/w/t.py"),
        result("e1", "Edit applied successfully.", group="s2"),
        snapshot(["/w/t.py"], group="s2"),
        snapshot(["/w/t.py"], group="s3"),  # a later step that only repeats it
    ]
    (turn,) = parse_turns(msgs, cwd="/w")
    assert facts(turn) == [("t.py", "created", msgs[1].id), ("t.py", "edited", msgs[4].id)]


def test_snapshot_shows_changes_no_tool_call_explains() -> None:
    msgs = [
        msg("user", text="x"),
        tool("bash", "b1", group="s1", command="python3 gen.py"),
        result("b1", "", group="s1", meta={"exit_code": 0}),
        snapshot(["/w/gen_out.py", "/w/gen_out.py"], group="s1"),
    ]
    (turn,) = parse_turns(msgs, cwd="/w")
    # The snapshot cannot tell a new file from a changed one: "edited", cited once.
    assert facts(turn) == [("gen_out.py", "edited", msgs[3].id)]


def test_snapshot_is_read_after_the_calls_of_its_step() -> None:
    # Parts of one message can come in any id order (the opensession fixture sorts by name).
    msgs = [
        msg("user", text="x"),
        snapshot(["/w/main.rs", "/w/lib.rs"], group="s1"),
        tool("edit", "e1", group="s1", filePath="/w/main.rs"),
        msg("assistant", text="next step", group="s2"),
    ]
    (turn,) = parse_turns(msgs, cwd="/w")
    assert facts(turn) == [("main.rs", "edited", msgs[2].id), ("lib.rs", "edited", msgs[1].id)]


def test_a_real_patch_tool_is_not_a_snapshot() -> None:
    msgs = [msg("user", text="x"), tool("patch", "p1", files=["/w/a.py"])]
    (turn,) = parse_turns(msgs, cwd="/w")
    assert [(a.file_path, a.action) for a in turn.artifacts] == [("a.py", "edited")]


@pytest.mark.parametrize(
    "parts",
    [
        ("opencode", "recorded", "tui-compact", "export.json"),
        ("opencode", "recorded", "run-noninteractive", "export.json"),
        ("opencode", "recorded", "run-noninteractive", "opencode.db"),
        ("codex", "recorded", "tui-compact", CODEX_TUI),
        ("codex", "recorded", "exec-resume", CODEX_EXEC),
        ("claude-code", "recorded", "tui-compact", "e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"),
        ("claude-code", "recorded", "print-continue", "d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"),
    ],
    ids=lambda p: f"{p[0]}-{p[2]}-{Path(p[3]).suffix[1:]}",
)  # fmt: skip
def test_recorded_sessions_touch_exactly_the_scripted_files(parts: tuple[str, ...]) -> None:
    """The scripted session: read+edit greet.py, create the test, read+edit README.md."""
    turns = read_session(*parts)
    assert [[(a.file_path, a.action) for a in t.artifacts] for t in turns] == [
        [("greet.py", "read"), ("greet.py", "edited"), ("tests/test_greet.py", "created")],
        [("README.md", "read"), ("README.md", "edited")],
        [],
    ]
    # Each action is cited by exactly one message, and that message is a real tool call.
    ids = [a.message_id for t in turns for a in t.artifacts]
    assert len(ids) == len(set(ids)) == 5
    calls = {m.id: m for t in turns for m in t.messages if m.type == "tool_use"}
    assert all(not calls[i].meta.get("synthetic") for i in ids)
    assert all(t.failed_artifacts == [] for t in turns)


def test_opensession_storage_snapshot_and_running_edit() -> None:
    turns = read_session(
        "opencode", "opensession", "storage", "session", "project", "ses_company_logic.json"
    )
    (turn,) = turns
    # main.rs: the (still running) edit tool says it; lib.rs: only the snapshot does.
    assert [(a.file_path, a.action, a.message_id) for a in turn.artifacts] == [
        ("main.rs", "edited", "part_tool_running"),
        ("lib.rs", "edited", "part_patch"),
    ]  # fmt: skip


def test_patch_renames_list_forms_and_pathless_tools() -> None:
    msgs = [
        msg("user", text="x"),
        tool("apply_patch", "p1", input="*** Update File: a.py\n*** Move to: b.py\n"),
        tool("shell", "s1", command=["bash", "-lc", "touch c.txt"]),
        tool("shell", "s2", command=["rm", "d e.txt"]),
        tool("Edit", "e1", old_string="no path"),
        tool("Write", "w1"),
        tool("Read", "r1", file_path=".."),
        tool("apply_patch", "p2", input="*** Move to: lone.py\n"),
    ]
    (turn,) = parse_turns(msgs, cwd="/w")
    assert [(a.file_path, a.action) for a in turn.artifacts] == [
        ("a.py", "deleted"),
        ("b.py", "created"),
        ("c.txt", "created"),
        ("d e.txt", "deleted"),
        ("lone.py", "created"),
    ]
    assert [c.command for c in turn.commands] == ["touch c.txt", "rm 'd e.txt'"]


def test_what_a_sub_agent_did_counts_for_the_turn_that_started_it() -> None:
    # agent-atest01.jsonl beside the log is the Explore agent of call toolu_task_001.
    session = open_session([FIXTURES / "claude-code/scout/agent_session.jsonl"], WarningSink())
    [turn] = parse_turns(session)
    task = next(m for m in turn.messages if m.tool_call_id == "toolu_task_001")
    assert task.tool_name == "Task"
    [command] = turn.commands
    assert command.command == "ls -la"
    assert (command.message_id, command.line_number) == (task.id, task.entry_index)
    # Without the session (bare messages) there is no sub-agent to follow.
    assert parse_turns(session.messages())[0].commands == []


def test_a_sub_agent_linked_twice_is_taken_once() -> None:
    edit = Message(
        "s1", "assistant", "tool_use", "", tool_name="Write", tool_call_id="w1",
        tool_input={"file_path": "/w/a.py"},
    )  # fmt: skip
    span = TimelineSpan("sub", "Explore", meta={"tool_use_id": "t1"})
    span.content.append(TimelineEvent(uuid="s1", kind="message", message=edit))
    calls = [
        Message("u", "user", "text", "go", entry_index=1),
        Message("c1", "assistant", "tool_use", "", tool_name="Task", tool_call_id="t1"),
        Message("c2", "assistant", "tool_use", "", tool_name="Task", tool_call_id="t1"),
    ]
    root = TimelineSpan("root", "main", content=[span])
    turn = build_turn(1, calls, _Files(_Normalizer("/w")), _subagents(root, {}))
    assert [(a.file_path, a.action, a.message_id) for a in turn.artifacts] == [
        ("a.py", "created", "c1")
    ]
