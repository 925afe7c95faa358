"""Error lines of tool output (QA defect 6): found without backtracking over huge lines,
once per text, in the head and tail of a huge tool output; read-only commands."""

from __future__ import annotations

from opencode_restore.facts import errors as facts
from opencode_restore.facts.errors import error_lines, scanned_text
from opencode_restore.model import CommandRun, Message, Turn

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "app.py", line 3, in <module>\n'
    "    main()\n"
    "KeyError: 'name'\n"
)


def result(text: str, *, is_error: bool = False, mid: str = "r1") -> Message:
    return Message(mid, "tool", "tool_result", text, is_error=is_error)


def test_error_lines_of_ordinary_outputs() -> None:
    assert error_lines(result(f"collected 3 items\n{TRACEBACK}")) == ["KeyError: 'name'"]
    assert error_lines(result("ok\nbash: foo: command not found\nexit code 127")) == [
        "bash: foo: command not found",
        "exit code 127",
    ]
    assert error_lines(result("fatal: not a git repository\nERROR x\n2 FAILED\nFAILED again")) == [
        "fatal: not a git repository",
        "ERROR x",
        "2 FAILED",
    ]
    # A traceback without a named exception keeps its first line.
    assert error_lines(result("Traceback (most recent call last):\n  ...")) == [
        "Traceback (most recent call last):"
    ]
    assert error_lines(result("all good")) == []
    assert error_lines(result("\n\n  boom  \n", is_error=True)) == ["boom"]
    assert error_lines(result("", is_error=True)) == ["(error, no output)"]
    assert error_lines(Message("a", "assistant", "text", "ValueError: bad")) == ["ValueError: bad"]
    assert error_lines(Message("t", "assistant", "tool_use", "ValueError: bad")) == []


def test_json_keys_and_words_are_not_errors() -> None:
    assert error_lines(result('{"isError": false, "is_error": false}\nlastError: none')) == [
        "lastError: none"  # "Error:" as the text shows it, one line
    ]
    assert error_lines(result('{"isError":false}')) == []


def test_a_huge_line_is_clipped_around_the_error() -> None:
    line = "x" * 5000 + " RuntimeError: disk full " + "y" * 5000
    [found] = error_lines(result(line))
    assert "RuntimeError: disk full" in found
    assert len(found) <= 300
    assert found.endswith("…")


def test_huge_output_is_scanned_by_head_and_tail() -> None:
    middle = "x" * 30_000_000
    text = f"start ok\n{middle}\nValueError: at the end"
    assert error_lines(result(text, mid="huge")) == ["ValueError: at the end"]
    head, tail = facts.SCAN_HEAD_CHARS, facts.SCAN_TAIL_CHARS
    hidden = "a" * (head + 10) + "\nOSError: lost in the middle\n" + "b" * (head + tail)
    assert error_lines(result(hidden)) == []
    assert scanned_text("short") == "short"
    assert len(scanned_text(hidden)) == head + tail + 1


def test_error_lines_are_computed_once_per_text() -> None:
    text = "unique output 7f3a\nTypeError: once"
    before = facts._error_lines.cache_info().hits
    first = error_lines(result(text, mid="a"))
    second = error_lines(result(text, mid="b"))  # another message, same text
    assert first == second == ["TypeError: once"]
    assert facts._error_lines.cache_info().hits == before + 1
    first.append("mutated")  # callers get their own list
    assert error_lines(result(text)) == ["TypeError: once"]


def test_read_only_commands() -> None:
    assert facts.read_only("sed -n 1,20p a.py")
    assert facts.read_only("grep -rn 'x' src | head -5")
    assert facts.read_only("git diff --stat && git status --short")
    assert not facts.read_only("sed -i s/a/b/ a.py")
    assert not facts.read_only("cat > a.py <<'EOF'")
    assert not facts.read_only("python3 -m unittest")


# --- which runs failed: precision first ------------------------------------------------
# Outputs are excerpts of real sessions (shared/samples/real-devset).

PASSING_BUN = (
    "src/api/routes/evaluation.test.ts:\n"
    '184 |   submitJobError: new Error("Job queue is at capacity"),\n'
    "error: Database connection failed\n"
    "      at <anonymous> (src/api/routes/evaluation.test.ts:313:46)\n\n"
    " 1274 pass\n 0 fail\n 2760 expect() calls\nRan 1274 tests across 56 files. [752.00ms]"
)
CODEX_ENVELOPE = (
    "Chunk ID: 671c5a\nWall time: 0.3186 seconds\nProcess exited with code 128\n"
    "Original token count: 19\nOutput:\nremote: Not Found\n"
    "fatal: repository 'https://github.com/..git/' not found\n"
)


def test_a_passing_test_run_that_prints_errors_did_not_fail() -> None:
    # ctxeval-tree-view: tests of error paths print error words; the summary counts none.
    assert not facts.command_failed("bun run test 2>&1 | tail -30", None, False, PASSING_BUN)
    assert facts.passed_summary(PASSING_BUN)
    assert facts.command_failed("pytest", None, False, "E   KeyError\n=== 2 failed, 5 passed ===")
    assert facts.command_failed("pytest", None, False, f"x\n{TRACEBACK}")


def test_the_exit_status_decides_where_the_log_has_one() -> None:
    assert facts.command_failed("make", 2, False, "ok")
    assert not facts.command_failed("make", 0, False, "FAILED to frobnicate (warning only)")
    # Claude Code opens a failing run's output with its status and marks it an error.
    assert facts.command_failed("go vet ./...", None, True, "Exit code 1\nvet: x.go:3: bad")
    assert not facts.command_failed("true", None, False, "")


def test_a_search_that_matched_nothing_did_not_fail() -> None:
    assert not facts.command_failed("rg -n 'logWarning' src", 1, True, "")
    assert not facts.command_failed("grep -rn x src", None, True, "Exit code 1\n")
    codex_empty = "Chunk ID: 452a0d\nWall time: 0.0 seconds\nProcess exited with code 1\nOutput:\n"
    assert not facts.command_failed("rg foo", 1, False, codex_empty)
    # A search that printed an error did fail (it is a look, though: see shell_outcomes).
    assert facts.command_failed("grep -rn x src", 2, True, "grep: src: No such file or directory")
    assert facts.command_failed("python3 check.py", 1, True, "")


def test_the_failure_line_skips_the_agents_envelope() -> None:
    assert facts.output_body(CODEX_ENVELOPE).startswith("remote: Not Found")
    assert facts.failure_line(CODEX_ENVELOPE) == (
        "fatal: repository 'https://github.com/..git/' not found"
    )
    assert facts.failure_line(f"Exit code 1\n{TRACEBACK}") == "KeyError: 'name'"
    # No line names an error: the output's last words say what went wrong.
    assert facts.failure_line("Exit code 1\nbuilding\nx.go:3:1: undefined: foo") == (
        "building x.go:3:1: undefined: foo"
    )


def test_only_commands_that_change_something_are_outcomes() -> None:
    calls = [
        ("c1", "rg -n missing src", "", 1),
        ("c2", "cd D:/repo && gh pr checks 7713 2>&1", "test (windows-latest) fail 55s", 1),
        ("c3", "go build ./...", "Exit code 1\n./a.go:3:1: undefined: x", None),
        ("c4", "git status --short", "", 0),
        ("c5", "go test ./...", "ok  \tpkg\t0.1s", 0),
    ]
    messages = []
    commands = []
    for mid, command, out, code in calls:
        messages.append(
            Message(
                mid,
                "assistant",
                "tool_use",
                "",
                tool_call_id=f"t{mid}",
                tool_input={"command": command},
            )
        )
        messages.append(
            Message(
                f"r{mid}",
                "tool",
                "tool_result",
                out,
                tool_call_id=f"t{mid}",
                is_error=code not in (0, None) or out.startswith("Exit code"),
            )
        )
        commands.append(CommandRun(command, mid, exit_code=code))
    turn = Turn(1, "x", messages, commands=commands)
    failures, passes = facts.shell_outcomes(turn, lambda mid: mid)
    assert [f["command"] for f in failures] == ["go build ./..."]
    assert failures[0]["error"] == "./a.go:3:1: undefined: x"
    assert [p["command"] for p in passes] == ["go test ./..."]


def test_a_read_of_a_missing_path_is_exploration() -> None:
    call = Message("c", "assistant", "tool_use", "", tool_name="Read", tool_call_id="t")
    missing = Message(
        "r",
        "tool",
        "tool_result",
        "<tool_use_error>Path does not exist: D:\\src\\ansi</tool_use_error>",
        tool_call_id="t",
        is_error=True,
    )
    broken = Message(
        "r2", "tool", "tool_result", "PermissionError: denied", tool_call_id="t2", is_error=True
    )
    call2 = Message("c2", "assistant", "tool_use", "", tool_name="Read", tool_call_id="t2")
    looked = facts.read_results(Turn(1, "x", [call, missing, call2, broken]))
    assert "r" in looked
    assert "r2" not in looked
    assert error_lines(broken) == ["PermissionError: denied"]
    assert error_lines(missing) == ["Path does not exist: D:\\src\\ansi"]  # markup dropped


def test_a_status_line_is_not_the_exception() -> None:
    # Gemini's run_shell_command result (recorded devset, gemini prompt-resume, turn 2).
    gemini = (
        "<untrusted_context>\nOutput: test_padding ... ok\n"
        '  File "shrinkray/store.py", line 41, in shorten\n'
        "sqlite3.IntegrityError: UNIQUE constraint failed: links.code\n\n"
        "Ran 9 tests in 0.003s\n\nFAILED (errors=1)\nExit Code: 1\nProcess Group PGID: 17761\n"
    )
    assert (
        facts.failure_line(gemini) == "sqlite3.IntegrityError: UNIQUE constraint failed: links.code"
    )


def test_shell_lines_split_outside_quotes() -> None:
    # agentv-sync-pr turn 6: a regex alternation inside quotes is no pipe.
    line = 'rg "function logWarning|const logWarning" -n a.ts && rg "spyOn|warn" -n b.ts'
    parts, writes = facts.shell_parts(line)
    assert [p.split()[0] for p in parts] == ["rg", "rg"]
    assert not writes
    assert facts.read_only(line)
    assert facts.read_only("rg -n 'a->b' src")  # a quoted arrow redirects nothing
    assert facts.read_only("grep x a.py 2>/dev/null | head -5 2>&1")
    assert not facts.read_only("echo '- ok' >> notes.txt")
    assert not facts.read_only("ls && python3 -m pytest")


def test_a_linters_cross_says_what_failed() -> None:
    # agentv-sync-pr turn 4: biome's output names no error, a cross marks the problem.
    biome = (
        "Chunk ID: 6b1f2f\nProcess exited with code 1\nOutput:\n"
        "packages/core/src/a.ts format ━━━━━━━━━━━━━━━━━━━━\n\n"
        "  × Formatter would have printed the following content:\n  \n"
        "Checked 5 files in 172ms. No fixes applied.\nFound 1 error.\n"
        "    2092 2092 │       return {\n"
    )
    assert facts.failure_line(biome) == "× Formatter would have printed the following content:"
    assert facts.failure_line("building\n━━━━━━\nsomething went sideways") == (
        "building something went sideways"
    )


def test_a_result_a_script_printed_as_json() -> None:
    # graph-trail-review turn 6: Codex's code mode prints exec_command's result object.
    printed = (
        'Script completed\nWall time 0.7 seconds\nOutput:\n{"chunk_id":"6b10be","exit_code":1,'
        '"output":"# rtcov\\ncompile: version \\"go1.24.13\\" does not match go tool version'
        ' \\"go1.26.1\\"\\nFAIL\\tsem [build failed]\\n"}'
    )
    assert facts.output_body(printed).startswith("# rtcov\ncompile: version")
    assert facts.command_failed("go test ./...", None, False, printed)
    assert not facts.command_failed("go test ./...", None, False, printed.replace(":1,", ":0,"))
    assert 'compile: version "go1.24.13" does not match' in facts.failure_line(printed)
