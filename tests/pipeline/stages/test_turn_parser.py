from __future__ import annotations

from typing import Any

from opencode_restore.model import Message
from opencode_restore.pipeline.stages.turn_parser import parse_turns, split_turns

_n = 0


def msg(role: str, type_: str = "text", text: str = "", **kw: Any) -> Message:
    global _n
    _n += 1
    return Message(id=f"m{_n}", role=role, type=type_, text=text, entry_index=_n, **kw)  # type: ignore[arg-type]


def tool(name: str, call_id: str, **inp: Any) -> Message:
    return msg("assistant", "tool_use", tool_name=name, tool_call_id=call_id, tool_input=inp)


def result(call_id: str, text: str = "", **kw: Any) -> Message:
    return msg("tool", "tool_result", text=text, tool_call_id=call_id, **kw)


def test_turns_start_at_real_requests_only() -> None:
    msgs = [
        msg("system", text="preamble"),
        msg("user", text="first"),
        msg("user", text="and also"),
        msg("assistant", text="ok"),
        msg("user", text="<system-reminder>x</system-reminder>", meta={"synthetic": True}),
        msg("assistant", text="more"),
        msg("user", "summary", text="compacted summary"),
        msg("user", text="second"),
        msg("assistant", text="done"),
    ]
    groups = split_turns(msgs)
    assert [len(g) for g in groups] == [7, 2]
    turns = parse_turns(msgs)
    assert turns[0].user_text == "first\n\nand also"
    assert turns[1].user_text == "second"
    assert turns[1].number == 2
    assert turns[0].start_line == msgs[0].entry_index


def test_session_without_user_requests_is_one_turn() -> None:
    turns = parse_turns([msg("assistant", text="a"), msg("assistant", text="b")])
    assert len(turns) == 1
    assert turns[0].user_text == ""


def test_structured_tools_become_artifacts_and_commands() -> None:
    msgs = [
        msg("user", text="fix it"),
        tool("Read", "c1", file_path="/w/app/a.py"),
        result("c1", "print(1)"),
        tool("Edit", "c2", file_path="/w/app/a.py", old_string="1", new_string="2"),
        tool("Write", "c3", file_path="/w/app/new.py", content="x"),
        tool("Write", "c4", file_path="/w/app/a.py", content="y"),
        tool("Bash", "c5", command="pytest -q"),
        result("c5", "1 failed", is_error=True, meta={"exit_code": 1}),
        tool("exec_command", "c6", cmd=["bash", "-lc", "sed -n '1,80p' greet.py && rm old.txt"]),
        tool(
            "exec_command",
            "c7",
            cmd="apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: greet.py\n"
            "*** Add File: tests/test_greet.py\n*** Delete File: junk.py\n*** End Patch\nEOF",
        ),
        tool("str_replace_based_edit_tool", "c8", command="create", path="/w/app/c.py"),
        tool("patch", "c9", files=["/w/app/d.py"]),
        tool("read_many_files", "c10", paths=["x.md", "y.md"]),
    ]
    (turn,) = parse_turns(msgs, cwd="/w/app")
    got = [(a.file_path, a.action) for a in turn.artifacts]
    assert got == [
        ("a.py", "read"),
        ("a.py", "edited"),
        ("new.py", "created"),
        ("a.py", "edited"),
        ("greet.py", "read"),
        ("old.txt", "deleted"),
        ("greet.py", "edited"),
        ("tests/test_greet.py", "created"),
        ("junk.py", "deleted"),
        ("c.py", "created"),
        ("d.py", "edited"),
        ("x.md", "read"),
        ("y.md", "read"),
    ]
    assert turn.artifacts[0].message_id == msgs[1].id
    assert turn.artifacts[0].line_number == msgs[1].entry_index
    cmds = [(c.command, c.exit_code, c.is_error) for c in turn.commands]
    assert cmds[0] == ("pytest -q", 1, True)
    assert cmds[1][0] == "sed -n '1,80p' greet.py && rm old.txt"
    assert len(cmds) == 3


def test_paths_outside_cwd_stay_absolute() -> None:
    (turn,) = parse_turns(
        [msg("user", text="x"), tool("Read", "c", file_path="/etc/hosts")], cwd="/w"
    )
    assert turn.artifacts[0].file_path == "/etc/hosts"


def test_unparseable_shell_is_still_a_command() -> None:
    (turn,) = parse_turns([msg("user", text="x"), tool("Bash", "c", command="echo 'unterminated")])
    assert turn.commands[0].command == "echo 'unterminated"
    assert turn.artifacts == []


def test_a_turn_killed_mid_way_is_interrupted() -> None:
    answered = [msg("user", text="fix it"), tool("Bash", "c1", command="pytest")]
    answered += [result("c1", "1 passed"), msg("assistant", text="Fixed; the tests pass.")]
    killed = [msg("user", text="now add a purge command"), tool("Edit", "c2", file_path="a.py")]
    killed += [result("c2", "ok"), msg("assistant", "thinking", text="next the CLI")]
    turns = parse_turns(answered + killed)
    assert [t.interrupted for t in turns] == [False, True]
    # A request the agent never got to answer is unfinished too; a tool call cut before
    # its result is as well.
    assert parse_turns([msg("user", text="hello?")])[0].interrupted
    assert parse_turns([msg("user", text="go"), tool("Bash", "c3", command="ls")])[0].interrupted
    # Text with no request at all asks nothing.
    assert not parse_turns([msg("system", text="preamble")])[0].interrupted
