"""`messages` and `turns` show the [M#] labels a restoration cites (issue 27, item 5):
``messages --label``/``--around`` follow a citation, ``messages -o``, ``turns --since``."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli

CLAUDE = "claude-code/recorded/print-continue/d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"
SESSIONS = [
    CLAUDE,
    "opencode/recorded/tui-compact/export.json",  # a compaction and its summary
    "codex/recorded/tui-compact/rollout-2026-11-21T11-38-37-01a1fde6-b303-7f63-b067-d32dfaddcad9.jsonl",
    "gemini/own/compression.jsonl",
    "pi/own/tree-v3.jsonl",  # branches: summarized after the turns, numbered last
]
EVERY = ("--include-tools", "--include-thinking")


def invoke(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _jsonl(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def _references(log: Path) -> list[dict[str, Any]]:
    """The messages the offline restoration of ``log`` cites: label and message id."""
    code, out, err = invoke("restore", "-q", "--format", "json", log)
    assert code == 0, err
    refs: list[dict[str, Any]] = json.loads(out)["references"]
    assert refs, "the restoration cites nothing: nothing to compare"
    return refs


@pytest.mark.parametrize("name", SESSIONS)
def test_messages_labels_are_the_ones_a_restoration_cites(name: str, fixtures: Path) -> None:
    log = fixtures / name
    refs = _references(log)
    code, out, err = invoke("messages", log, *EVERY)
    assert code == 0, err
    label_of = {r["id"]: r["label"] for r in _jsonl(out)}
    assert {r["message_id"]: label_of.get(r["message_id"]) for r in refs} == {
        r["message_id"]: r["label"] for r in refs
    }
    # Following one citation shows the very message it points at, and only it.
    for ref in refs[:3] + refs[-2:]:
        code, out, err = invoke("messages", log, "--label", ref["label"], "--format", "json")
        assert code == 0, err
        [shown] = json.loads(out)["messages"]
        assert (shown["id"], shown["label"]) == (ref["message_id"], ref["label"])


def test_turns_show_the_labels_of_their_messages(fixtures: Path) -> None:
    log = fixtures / CLAUDE
    code, out, err = invoke("turns", log, "--format", "json")
    assert code == 0, err
    turns = json.loads(out)
    assert [(t["first_label"], t["last_label"]) for t in turns] == [
        ("M1", "M18"),
        ("M19", "M27"),
        ("M28", "M32"),
    ]
    code, out, _ = invoke("messages", log, *EVERY)
    label_of = {r["id"]: r["label"] for r in _jsonl(out)}
    edit = turns[0]["artifacts"][1]
    assert (edit["action"], edit["label"]) == ("edited", label_of[edit["message_id"]])
    command = turns[0]["commands"][0]
    assert command["label"] == label_of[command["message_id"]]
    code, text, _ = invoke("turns", log)
    assert "## Turn 2 (9 messages, [M19-M27], file 0 entries 27-35)" in text
    assert f"- edited `greet.py` ([{edit['label']}], line 14)" in text
    assert "message 64150f54" not in text  # labels, not uuids


def test_label_accepts_a_citation_as_written(fixtures: Path) -> None:
    log = fixtures / CLAUDE
    shown = [
        _jsonl(invoke("messages", log, "--label", written)[1])
        for written in ("M25", "[M25]", "m25", " [M25] ")
    ]
    assert all(s == shown[0] for s in shown)
    [message] = shown[0]
    # The cited message is shown whatever the filters say (a tool call, no --include-tools).
    assert (message["label"], message["type"]) == ("M25", "tool_use")


def test_around_shows_the_cited_message_with_context(fixtures: Path) -> None:
    log = fixtures / CLAUDE
    every = _jsonl(invoke("messages", log)[1])
    at = next(k for k, r in enumerate(every) if r["label"] == "M19")
    code, out, err = invoke("messages", log, "--around", "M19", "--context", "1")
    assert code == 0, err
    assert _jsonl(out) == every[at - 1 : at + 2]
    code, out, _ = invoke("messages", log, "--around", "M19")  # two each side by default
    assert _jsonl(out) == every[at - 2 : at + 3]
    code, out, _ = invoke("messages", log, "--around", "M1", "--context", "0")
    assert [r["label"] for r in _jsonl(out)] == ["M1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--label", "M99"], "error: M99 is not a label of this session (its labels run M1-M32)"),
        (["--around", "M0"], "'M0' is not a label; give one like M22"),
        (["--label", "turn 3"], "'turn 3' is not a label; give one like M22"),
        (["--label", "M2", "--around", "M3"], "give --label or --around, not both"),
        (["--context", "3"], "--context goes with --around"),
    ],
)
def test_a_label_that_is_not_one_is_a_usage_error(
    args: list[str], message: str, fixtures: Path
) -> None:
    code, out, err = invoke("messages", fixtures / CLAUDE, *args)
    assert code == 2
    assert out == ""
    assert message in err


def test_an_unknown_label_is_one_line(fixtures: Path) -> None:
    code, _, err = invoke("messages", fixtures / CLAUDE, "--around", "M33")
    assert code == 2
    assert err == "error: M33 is not a label of this session (its labels run M1-M32)\n"


@pytest.mark.parametrize("fmt", ["jsonl", "json", "markdown"])
def test_messages_output_file(fmt: str, fixtures: Path, tmp_path: Path) -> None:
    log = fixtures / CLAUDE
    target = tmp_path / f"messages.{fmt}"
    code, printed, err = invoke("messages", log, "--format", fmt, "-o", target)
    assert (code, printed) == (0, ""), err
    assert target.read_text() == invoke("messages", log, "--format", fmt)[1]
    code, _, err = invoke("messages", log, "-o", log)
    assert code == 2
    assert "is one of the input files" in err


def _turn_log(path: Path, *stamps: str) -> Path:
    """A Claude Code log of one request (and its answer) per time in ``stamps``."""
    lines, parent = [], None
    for k, stamp in enumerate(stamps):
        for role, uid in (("user", f"u{k}"), ("assistant", f"a{k}")):
            lines.append(
                {
                    "type": role,
                    "uuid": uid,
                    "parentUuid": parent,
                    "sessionId": "S",
                    "timestamp": stamp,
                    "message": {"role": role, "content": f"{role} {k}"},
                }
            )
            parent = uid
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_turns_since(tmp_path: Path) -> None:
    log = _turn_log(
        tmp_path / "s.jsonl", "2026-01-01T10:00:00Z", "2026-01-02T10:00:00Z", "2026-01-03T10:00:00Z"
    )
    code, out, err = invoke("turns", log, "--since", "2026-01-02T00:00:00Z", "--format", "json")
    assert code == 0, err
    turns = json.loads(out)
    # Numbered over the whole session: the labels stay those of a restoration.
    assert [(t["number"], t["first_label"], t["last_label"]) for t in turns] == [
        (2, "M3", "M4"),
        (3, "M5", "M6"),
    ]
    code, out, _ = invoke("turns", log, "--since", "36500d", "--format", "json")
    assert len(json.loads(out)) == 3
    code, _, err = invoke("turns", log, "--since", "yesterday")
    assert code == 2
    assert "Invalid value for '--since': 'yesterday': " in err


def test_a_prompt_citation_is_followed_as_the_prompt_says(fixtures: Path) -> None:
    projects = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-dev-greet"
    projects.mkdir(parents=True)
    shutil.copy(fixtures / CLAUDE, projects)
    session = Path(CLAUDE).stem
    code, prompt, err = invoke("restore", session[:8], "--format", "prompt", "-q")
    assert code == 0, err
    assert "(`opencode-restore messages SESSION --label M#` shows it)" in prompt
    edited = re.search(r"- `greet\.py` \(edited\) \[(M\d+)\]", prompt)
    assert edited is not None, prompt
    code, out, err = invoke("messages", session[:8], "--label", edited.group(1))
    assert code == 0, err
    [message] = _jsonl(out)
    assert (message["tool_name"], message["tool_input"]["file_path"]) == (
        "Edit",
        "/home/dev/src/greet-cli/greet.py",
    )
