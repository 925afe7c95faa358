"""Error lines of tool output (QA defect 6): found without backtracking over huge lines,
once per text, in the head and tail of a huge tool output; read-only commands."""

from __future__ import annotations

from opencode_restore.facts import errors as facts
from opencode_restore.facts.errors import error_lines, scanned_text
from opencode_restore.model import Message

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
