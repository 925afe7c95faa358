"""Turns that say what really happened: interrupted turns keep their work and are marked,
refused calls make no artifact, writes are "edited" or "created" as their tool reports,
and one call's ops on a path are read as a whole (``rm a && mv b a`` is no rename)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources import open_session
from opencode_restore.sources.rejections import mark_rejection

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"

# Claude Code's texts (fixtures/claude-code/spotter/short.jsonl lines 11-13, and the
# Write tool's two answers as Claude Code writes them).
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). "
)
SAID = REJECTED + "To tell you how to proceed, the user said:\nput it under docs/ instead"
INTERRUPT = "[Request interrupted by user for tool use]"
CREATED = "File created successfully at: /w/notes.md"
UPDATED = "The file /w/notes.md has been updated. Here's the result of running `cat -n`"

_n = 0


def msg(role: str, type_: str = "text", text: str = "", **kw: Any) -> Message:
    global _n
    _n += 1
    return Message(id=f"m{_n}", role=role, type=type_, text=text, entry_index=_n, **kw)  # type: ignore[arg-type]


def ask(text: str) -> Message:
    return msg("user", "text", text)


def marker(text: str = INTERRUPT) -> Message:
    return msg("user", "text", text, meta={"synthetic": True, "injected": "interrupt"})


def call(name: str, cid: str, **inp: Any) -> Message:
    return msg("assistant", "tool_use", tool_name=name, tool_call_id=cid, tool_input=inp)


def res(cid: str, text: str = "", **kw: Any) -> Message:
    return mark_rejection(msg("tool", "tool_result", text, tool_call_id=cid, **kw))


def say(text: str) -> Message:
    return msg("assistant", "text", text)


def arts(turn: Any, attr: str = "artifacts") -> list[tuple[str, str]]:
    return [(a.file_path, a.action) for a in getattr(turn, attr)]


# -- interrupted turns -------------------------------------------------------------------


def test_interrupt_marker_marks_the_turn_and_keeps_its_work() -> None:
    msgs = [
        ask("fix the prompt"),
        call("Edit", "e1", file_path="/w/a.go"),
        res("e1", "ok"),
        say("Edited a.go; now running the benchmark."),
        call("Bash", "b1", command="go test ./..."),
        res("b1", "PASS", meta={"exit_code": 0}),
        say("Benchmarks look good, one more check."),
        marker("[Request interrupted by user]"),
        ask("ask Fable to do this analysis instead."),
        say("Sure."),
    ]
    first, second = parse_turns(msgs, cwd="/w")
    assert first.interrupted  # its last text was not an answer: the user stopped it
    assert arts(first) == [("a.go", "edited")]
    assert [c.command for c in first.commands] == ["go test ./..."]
    assert first.user_text == "fix the prompt"  # the marker is no request, no new turn
    assert not second.interrupted


def test_a_marker_before_the_last_request_does_not_count() -> None:
    # Stopped before any output, then asked again: the request that stands was answered.
    msgs = [ask("do X"), marker(), ask("do Y instead"), say("Did Y.")]
    (turn,) = parse_turns(msgs)
    assert not turn.interrupted


def test_no_marker_a_closing_answer_is_not_interrupted() -> None:
    msgs = [ask("do X"), call("Bash", "b", command="ls"), res("b", "a"), say("Done: X.")]
    assert not parse_turns(msgs)[0].interrupted


def test_real_claude_interrupt_for_tool_use(tmp_path: Path) -> None:
    path = FIXTURES / "claude-code" / "spotter" / "short.jsonl"
    turns = parse_turns(open_session([path], WarningSink()))
    hit = [t for t in turns if any(m.text == INTERRUPT for m in t.messages)]
    assert hit
    assert all(t.interrupted for t in hit)


# -- refused calls ------------------------------------------------------------------------


def test_rejected_write_is_not_created() -> None:
    msgs = [
        ask("write the notes"),
        call("Write", "w1", file_path="/w/notes.md", content="x"),
        res("w1", SAID, is_error=True),
        say("OK, docs/ then."),
    ]
    (turn,) = parse_turns(msgs, cwd="/w")
    assert arts(turn) == []
    assert arts(turn, "failed_artifacts") == []
    assert arts(turn, "rejected_artifacts") == [("notes.md", "created")]
    result = msgs[2]
    assert result.meta["rejected"] is True
    assert result.meta["user_said"] == "put it under docs/ instead"


def test_codex_rejected_patch_and_policy_denied_command() -> None:
    patch = "*** Begin Patch\n*** Add File: README\n+hi\n*** End Patch"
    msgs = [
        ask("add a readme"),
        call("apply_patch", "p1", input=patch),
        res("p1", "patch rejected by user"),
        call("exec_command", "x1", cmd="entire login"),
        res("x1", "exec_command failed for `/bin/zsh -lc 'entire login'`: CreateProcess { "
            'message: "Rejected(\\"This action was rejected due to unacceptable risk." }'),
        say("Both were refused."),
    ]  # fmt: skip
    (turn,) = parse_turns(msgs)
    assert arts(turn) == []
    assert arts(turn, "rejected_artifacts") == [("README", "created")]
    (command,) = turn.commands
    assert command.rejected
    assert command.is_error
    assert msgs[4].meta == {"denied": "policy"}  # not the user: no "rejected" key


def test_a_failed_call_is_still_failed_not_rejected() -> None:
    msgs = [
        ask("edit"),
        call("Edit", "e", file_path="/w/a.py"),
        res("e", "<tool_use_error>String to replace not found</tool_use_error>", is_error=True),
        say("retrying"),
    ]
    (turn,) = parse_turns(msgs, cwd="/w")
    assert arts(turn, "failed_artifacts") == [("a.py", "edited")]
    assert arts(turn, "rejected_artifacts") == []
    assert not turn.commands


# -- writes as their tool reports them --------------------------------------------------------


def test_write_over_an_unseen_file_is_edited() -> None:
    msgs = [ask("rewrite"), call("Write", "w", file_path="/w/notes.md"), res("w", UPDATED)]
    assert arts(parse_turns(msgs, cwd="/w")[0]) == [("notes.md", "edited")]


def test_write_of_a_new_file_is_created() -> None:
    msgs = [ask("write"), call("Write", "w", file_path="/w/notes.md"), res("w", CREATED)]
    assert arts(parse_turns(msgs, cwd="/w")[0]) == [("notes.md", "created")]


def test_write_created_after_delete_is_created() -> None:
    # The session read it, then removed it: the tool says the file it wrote is new.
    msgs = [
        ask("go"),
        call("Read", "r", file_path="/w/notes.md"),
        res("r", "1\tx"),
        call("Bash", "d", command="rm notes.md"),
        res("d", "", meta={"exit_code": 0}),
        call("Write", "w", file_path="/w/notes.md"),
        res("w", CREATED),
    ]
    assert arts(parse_turns(msgs, cwd="/w")[0]) == [
        ("notes.md", "read"),
        ("notes.md", "deleted"),
        ("notes.md", "created"),
    ]


def test_opencode_write_says_whether_the_file_existed() -> None:
    msgs = [
        ask("go"),
        call("write", "w1", filePath="/w/a.ts"),
        res("w1", "Wrote file successfully.", meta={"file_existed": True}),
        call("write", "w2", filePath="/w/b.ts"),
        res("w2", "Wrote file successfully.", meta={"file_existed": False}),
    ]
    assert arts(parse_turns(msgs, cwd="/w")[0]) == [("a.ts", "edited"), ("b.ts", "created")]


def test_write_with_an_unknown_answer_keeps_the_session_rule() -> None:
    msgs = [ask("go"), call("Write", "w", file_path="/w/n.md"), res("w", "ok")]
    assert arts(parse_turns(msgs, cwd="/w")[0]) == [("n.md", "created")]


def test_patch_update_of_an_unseen_file_is_edited() -> None:
    patch = "*** Begin Patch\n*** Update File: src/x.go\n@@\n-a\n+b\n*** End Patch"
    msgs = [ask("fix"), call("apply_patch", "p", input=patch), res("p", "Success.")]
    assert arts(parse_turns(msgs)[0]) == [("src/x.go", "edited")]


def test_opencode_apply_patch_names_its_patch_patch_text() -> None:
    # nimbus-report-ui (real devset): opencode 1.2's apply_patch input is {"patchText": …}.
    patch = "*** Begin Patch\n*** Add File: /r/llm-docs/plan.md\n+# Plan\n*** End Patch"
    msgs = [ask("write it down"), call("apply_patch", "p", patchText=patch), res("p", "Success.")]
    assert arts(parse_turns(msgs, cwd="/r")[0]) == [("llm-docs/plan.md", "created")]


# -- one call's ops as a whole ------------------------------------------------------------------


def _shell(*commands: str) -> list[tuple[str, str]]:
    msgs: list[Message] = [ask("go")]
    for k, command in enumerate(commands):
        msgs += [call("Bash", f"c{k}", command=command), res(f"c{k}", "", meta={"exit_code": 0})]
    return arts(parse_turns(msgs, cwd="/w")[0])


def test_rm_then_mv_onto_it_is_an_edit_not_a_rename_onto_itself() -> None:
    assert _shell("rm a && mv b a") == [("a", "edited"), ("b", "deleted")]


def test_mv_is_still_a_delete_and_a_create() -> None:
    assert _shell("git mv a b") == [("a", "deleted"), ("b", "created")]


def test_scratch_file_made_and_removed_by_one_call_is_no_change() -> None:
    cmd = 'npm pack x >/tmp/name.txt; tar -xOf "$(cat /tmp/name.txt)"; rm -rf /tmp/name.txt'
    assert _shell(cmd) == []


def test_a_file_kept_by_a_later_call_is_created_then_deleted() -> None:
    assert _shell("echo x > /tmp/n.txt", "rm /tmp/n.txt") == [
        ("/tmp/n.txt", "created"),
        ("/tmp/n.txt", "deleted"),
    ]


# -- Windows paths (the real-devset's omp sessions: cwd D:\oh-my-posh) ------------------------


def test_windows_paths_in_either_spelling_are_one_file() -> None:
    msgs = [
        ask("add a temp test"),
        call("Write", "w", file_path="D:\\oh-my-posh\\src\\prompt\\zz_tmp_test.go"),
        res("w", "File created successfully at: D:\\oh-my-posh\\src\\prompt\\zz_tmp_test.go"),
        call("Bash", "d", command="rm D:/oh-my-posh/src/prompt/zz_tmp_test.go"),
        res("d", "", meta={"exit_code": 0}),
    ]
    (turn,) = parse_turns(msgs, cwd="D:\\oh-my-posh")
    assert arts(turn) == [
        ("src/prompt/zz_tmp_test.go", "created"),
        ("src/prompt/zz_tmp_test.go", "deleted"),
    ]


def test_windows_path_outside_the_cwd_keeps_its_drive() -> None:
    msgs = [ask("x"), call("Read", "r", file_path="C:\\Users\\j\\tmp\\a.ps1"), res("r", "1")]
    assert arts(parse_turns(msgs, cwd="D:\\oh-my-posh")[0]) == [("C:/Users/j/tmp/a.ps1", "read")]


def test_posix_session_paths_are_unchanged() -> None:
    msgs = [ask("x"), call("Read", "r", file_path="/repo/a\\b.py"), res("r", "1")]
    assert arts(parse_turns(msgs, cwd="/repo")[0]) == [("a\\b.py", "read")]


def test_codex_code_mode_runs_its_scripts_commands() -> None:
    # graph-trail-review (real devset): Codex Desktop's `exec` tool runs a script whose
    # shell commands are tools.exec_command({...}) calls.
    script = (
        'const r = await tools.exec_command({"cmd":"sed -i s/a/b/ x.go","workdir":"/w"});'
        ' text(r.output); await tools.exec_command({"cmd": "go test ./..."});'
    )
    msgs = [ask("fix"), call("exec", "e", input=script), res("e", "Script completed\nOutput:\n")]
    [turn] = parse_turns(msgs, cwd="/w")
    assert [c.command for c in turn.commands] == ["sed -i s/a/b/ x.go; go test ./..."]
    assert arts(turn) == [("x.go", "edited")]
    plain = [ask("go"), call("exec", "p", input="text('no shell here')"), res("p", "ok")]
    assert parse_turns(plain)[0].commands == []
