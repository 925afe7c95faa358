from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli

EXPORT = "opencode/recorded/tui-compact/export.json"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_formats_lists_every_reader() -> None:
    code, out, _ = invoke("formats")
    assert code == 0
    names = {line.split()[0] for line in out.splitlines()}
    assert {"claude-code", "codex", "gemini", "pi", "opencode", "inspect", "terminal"} <= names


def test_messages_jsonl_and_filters(fixtures: Path) -> None:
    code, out, _ = invoke("messages", str(fixtures / EXPORT))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["type"] for r in rows} <= {"text", "compaction", "summary"}
    assert [r["role"] for r in rows if r["role"] == "user"] == ["user"] * 3
    assert {"role", "type", "text", "timestamp", "entry_index", "file_index"} <= set(rows[0])
    code, out, _ = invoke(
        "messages", str(fixtures / EXPORT), "--include-tools", "--include-thinking"
    )
    full = [json.loads(line) for line in out.splitlines()]
    assert {"tool_use", "tool_result", "thinking"} <= {r["type"] for r in full}
    stamps = sorted(r["timestamp"] for r in rows if r["timestamp"])
    code, out, _ = invoke("messages", str(fixtures / EXPORT), "--since", stamps[-3])
    later = [json.loads(line) for line in out.splitlines()]
    assert 0 < len(later) < len(rows)
    assert all(r["timestamp"] > stamps[-3] for r in later)


def test_messages_json_and_markdown(fixtures: Path) -> None:
    code, out, _ = invoke("messages", str(fixtures / EXPORT), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["agent"] == "opencode"
    assert len(doc["messages"]) > 3
    code, out, _ = invoke(
        "messages", str(fixtures / EXPORT), "--format", "markdown", "--include-tools"
    )
    assert code == 0
    assert "### [M1] User" in out  # each heading starts with its [M#] label
    assert "```json" in out


def test_turns_lists_artifacts(fixtures: Path) -> None:
    code, out, _ = invoke("turns", str(fixtures / EXPORT))
    assert code == 0
    assert out.count("## Turn ") == 3
    assert "edited `greet.py`" in out
    code, out, _ = invoke("turns", str(fixtures / EXPORT), "--format", "json")
    turns = json.loads(out)
    assert [t["number"] for t in turns] == [1, 2, 3]
    assert any(a["action"] == "created" for a in turns[0]["artifacts"])


def test_restore_offline_markdown_and_json(fixtures: Path, tmp_path: Path) -> None:
    code, out, _ = invoke("restore", str(fixtures / EXPORT))
    assert code == 0
    assert out.startswith("# SESSION SUMMARY")
    assert "None pending: the last request was answered [M" in out
    target = tmp_path / "r.json"
    code, out, _ = invoke(
        "restore", str(fixtures / EXPORT), "--format", "json", "-o", str(target), "-q"
    )
    data = json.loads(target.read_text())
    assert data["schema_version"] == "opencode-restore.restoration.v1"
    assert data["turn_count"] == 3
    assert data["citations"]["removed_unknown"] == 0
    assert all(ref["message_id"] for ref in data["references"])
    code, out, _ = invoke("restore", str(fixtures / EXPORT), "--dump-turns")
    assert out.count("## TURN SUMMARY") == 3
    code, out, _ = invoke("restore", str(fixtures / EXPORT), "--dump-turns", "--format", "json")
    assert len(json.loads(out)["turns"]) == 3


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        (b"", "file is empty"),
        (b"\x00\x01 binary junk", "unknown log format"),
    ],
)
def test_bad_inputs_give_one_line_errors(
    tmp_path: Path, content: bytes | None, expected: str
) -> None:
    path = tmp_path / "log.bin"
    if content is not None:
        path.write_bytes(content)
    code, out, err = invoke("messages", str(path))
    assert code != 0
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert str(path) in lines[0]
    assert expected in lines[0]


def test_usage_errors_exit_2(fixtures: Path) -> None:
    code, _, err = invoke("messages", str(fixtures / EXPORT), "--since", "yesterday")
    assert code == 2
    assert "ISO 8601" in err
    code, _, err = invoke("restore", str(fixtures / EXPORT), "-m", "nonsense:model")
    assert code == 2
    code, _, err = invoke("messages", str(fixtures / EXPORT), "--agent", "nope")
    assert code == 2
    assert "'nope' is not one of 'claude-code', 'codex'," in err


def test_missing_api_key_names_the_variable(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = invoke("restore", str(fixtures / EXPORT), "-m", "openai:gpt-4o")
    assert code == 2
    assert "OPENAI_API_KEY" in err


@pytest.mark.parametrize(
    ("command", "target", "expected"),
    [
        ("restore", "missing/x.md", "does not exist; create it first"),
        ("restore", ".", "is a directory"),
        ("report", "missing/x.html", "does not exist; create it first"),
    ],
)
def test_unwritable_output_is_refused_before_any_work(
    fixtures: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    target: str,
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke(command, str(fixtures / EXPORT), "-q", "-o", target)
    assert code == 2
    assert expected in err
    assert out == ""
    assert not (tmp_path / "missing").exists()


def test_a_write_error_is_one_line(fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    class FullDisk:
        def write(self, data: bytes) -> int:
            raise OSError(28, "No space left on device")

        def flush(self) -> None:
            pass

    class Stdout:
        buffer = FullDisk()

    monkeypatch.setattr(sys, "stdout", Stdout())
    with pytest.raises(SystemExit) as exc:
        cli.main(["messages", str(fixtures / EXPORT)], standalone_mode=False)
    assert exc.value.code == 2
    assert sys.stdout is not None


def test_unreadable_inputs_exit_2(tmp_path: Path) -> None:
    code, _, err = invoke("messages", str(tmp_path / "nope.jsonl"))
    assert code == 2
    assert "no such file or directory" in err
    code, _, err = invoke("messages", str(tmp_path))
    assert code == 2
    assert "a directory that is no session folder" in err


def test_a_forced_format_that_finds_nothing_says_what_the_file_is(fixtures: Path) -> None:
    log = fixtures / "claude-code/recorded/tui-compact/e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"
    # Exit 2 with one line, in every command (a wrong --agent summarized raw JSON lines as
    # a terminal capture, or wrote an empty summary, and reset the session's journal).
    for command, agent in (("messages", "codex"), ("restore", "terminal"), ("turns", "gemini")):
        code, out, err = invoke(command, str(log), "--agent", agent)
        assert (code, out) == (2, ""), err
        assert err.strip().splitlines() == [
            f"error: {log}: not a {agent} log: it looks like a claude-code log "
            "(drop --agent, or use --agent claude-code)"
        ]
    code, out, err = invoke("messages", str(log), "--agent", "claude-code")
    assert out
    assert "looks like" not in err


def test_failed_edits_are_reported_as_failed_attempts(fixtures: Path) -> None:
    code, out, _ = invoke("restore", str(fixtures / "pipeline/qa/failedit.jsonl"), "-q")
    assert code == 0
    assert "tried to edit `app.py`; it failed [M2]" in out
    assert "tried to create `new.py`; it failed [M4]" in out
    assert "Edited app.py" not in out
