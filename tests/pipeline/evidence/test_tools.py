"""The evidence tools on real recorded sessions: SEARCH_LOG hits tied to [M#] labels,
message search for formats without a line per message, file tools, argument checks,
and the seed's text protocol."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, Session, Turn
from opencode_restore.pipeline.evidence.log_search import Limits, LogSearch, line_addressed
from opencode_restore.pipeline.evidence.sandbox import Workspace
from opencode_restore.pipeline.evidence.text_protocol import MAX_CALLS, parse_text_calls
from opencode_restore.pipeline.evidence.tools import (
    EvidenceTools,
    arguments_from_text,
    canonical_name,
)
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.pipeline.state import RestoreState
from opencode_restore.redact import Redactor
from opencode_restore.sources import open_session
from opencode_restore.timeline.numbering import Numbering

from ..helpers import make_session

CLAUDE = "claude-code/recorded/print-continue/d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"
EXPORT = "opencode/recorded/tui-compact/export.json"
NAMES = ("SEARCH_LOG", "SEARCH_FILE", "READ_FILE", "LIST_ARTIFACTS", "COMPLETE_EVIDENCE_SEARCH")


def prepare(session: Session) -> tuple[list[Turn], Numbering, RestoreState]:
    """Number every turn and fill the state as the turn summarizer would."""
    turns = parse_turns(session)
    numbering = Numbering()
    state = RestoreState()

    async def number() -> None:
        for turn in turns:
            await numbering.messages_as_str(turn.messages)
            label_of = {m.id: lab for m in turn.messages if (lab := numbering.label_for(m.id))}
            state.add_parsed_turn(turn, label_of)

    anyio.run(number)
    return turns, numbering, state


def tools_for(
    session: Session, workspace: str | None = None, **limits: Any
) -> tuple[EvidenceTools, Numbering, list[Turn]]:
    turns, numbering, state = prepare(session)
    ws = Workspace.choose(session.cwd, workspace)
    redact = Redactor().redact
    return (
        EvidenceTools(session, turns, state, numbering, ws, redact, Limits(**limits)),
        numbering,
        turns,
    )


def recorded(fixtures: Path, name: str) -> Session:
    return open_session([fixtures / name], WarningSink(), None)


def greet_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "greet-cli"
    (ws / "tests").mkdir(parents=True)
    lines = ['"""Tiny greeting CLI."""', "import argparse", ""] + [
        f"# line {n}" for n in range(4, 301)
    ]
    (ws / "greet.py").write_text("\n".join(lines) + "\n")
    (ws / "tests" / "test_greet.py").write_text(
        "import unittest\n\nclass GreetCliTest(unittest.TestCase):\n    pass\n"
    )
    return ws


# --- SEARCH_LOG ---------------------------------------------------------------------


def test_search_log_hits_carry_file_line_and_label(fixtures: Path) -> None:
    session = recorded(fixtures, CLAUDE)
    tools, numbering, turns = tools_for(session)
    result = tools.run("SEARCH_LOG", {"pattern": "Ran 2 tests", "literal": True})
    assert result.ok
    at_21 = next(m for t in turns for m in t.messages if m.entry_index == 21)
    label = numbering.label_for(at_21.id)
    assert label is not None
    name = Path(CLAUDE).name
    assert f"{name}:21 [{label}]: " in result.text
    assert result.text.startswith("1 hit(s) in the session's raw log")
    assert result.citations == [label]
    # Context: three lines either side by default, marked like grep's context lines.
    for n in (18, 19, 20, 22, 23, 24):
        assert f"{name}-{n}-" in result.text
    assert f"{name}-17-" not in result.text


def test_search_log_context_and_regex_options(fixtures: Path) -> None:
    session = recorded(fixtures, CLAUDE)
    tools, _numbering, _ = tools_for(session)
    result = tools.run(
        "search_log", {"pattern": "GREET\\.PY", "ignore_case": "true", "context": "0"}
    )
    assert result.ok
    hits = [ln for ln in result.text.splitlines() if ":" in ln.split(" ")[0] and "-" not in ln[:5]]
    assert len(hits) == int(result.text.split(" ")[0]) > 3
    assert "-" not in "".join(ln.split(" ")[0][-4:] for ln in hits)
    assert len(result.citations) == len(set(result.citations)) >= 3


def test_strict_tool_calls_with_nulls_for_unset_arguments_work(fixtures: Path) -> None:
    # Strict tool schemas make every argument required; "not given" arrives as null.
    session = recorded(fixtures, CLAUDE)
    tools, _numbering, _ = tools_for(session)
    args = {"pattern": "Ran 2 tests", "literal": None, "ignore_case": None, "context_lines": None}
    result = tools.run("SEARCH_LOG", args)
    assert result.ok
    assert result.text == tools.run("SEARCH_LOG", {"pattern": "Ran 2 tests"}).text


def test_line_maps_to_the_message_at_or_before_it(fixtures: Path) -> None:
    session = recorded(fixtures, CLAUDE)
    turns, numbering, _ = prepare(session)
    search = LogSearch(session, turns, numbering, str, Limits())
    first = turns[0].messages[0]
    assert search.label_at(0, first.entry_index - 1) is None
    assert search.label_at(0, first.entry_index) == numbering.label_for(first.id)
    # Line 24 holds no message of its own: it belongs to the message at line 23.
    at_23 = next(m for t in turns for m in t.messages if m.entry_index == 23)
    assert search.label_at(0, 24) == numbering.label_for(at_23.id)
    assert search.label_at(5, 10) is None


def test_export_without_lines_searches_messages(fixtures: Path) -> None:
    session = recorded(fixtures, EXPORT)
    assert not line_addressed(session, session.files[0])
    tools, numbering, _ = tools_for(session)
    result = tools.run("SEARCH_LOG", {"pattern": "shout"})
    assert result.ok
    assert "hit(s) in the session's messages" in result.text
    assert result.citations
    for label in result.citations:
        assert f"[{label}] line " in result.text
        assert numbering.reference(label) is not None


def test_tool_calls_are_searchable_by_their_input(fixtures: Path) -> None:
    session = recorded(fixtures, EXPORT)
    tools, _, _ = tools_for(session)
    result = tools.run("SEARCH_LOG", {"pattern": "git diff --stat", "literal": True})
    assert result.ok
    assert result.citations


def test_missing_log_file_falls_back_to_messages() -> None:
    msgs = [Message("u1", "user", "text", "please fix the flaky test", entry_index=1)]
    session = make_session(msgs, files=["/nonexistent/session.jsonl"])
    tools, numbering, _ = tools_for(session)
    result = tools.run("SEARCH_LOG", {"pattern": "flaky"})
    assert "session.jsonl: no such file; searched its messages instead" in result.text
    assert f"[{numbering.label_for('u1')}] line 1: please fix the flaky test" in result.text


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_log_that_is_a_fifo_or_device_is_never_read(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "log.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    msgs = [Message("u1", "user", "text", "hello there", entry_index=1)]
    tools, _, _ = tools_for(make_session(msgs, files=[str(path)]))
    from .test_sandbox import no_hang

    result = no_hang(lambda: tools.run("SEARCH_LOG", {"pattern": "hello"}))
    assert "searched its messages instead" in result.text
    assert "1 hit(s)" in result.text


def test_huge_log_line_is_streamed_in_chunks_and_clipped(tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    payload = "x" * 2_500_000 + "NEEDLE-AT-THE-END"
    log.write_text(
        json.dumps({"type": "user", "text": "hi"}) + "\n" + json.dumps({"blob": payload}) + "\n"
    )
    msgs = [Message("u1", "user", "text", "hi", entry_index=1)]
    tools, numbering, _ = tools_for(make_session(msgs, files=[str(log)]))
    result = tools.run("SEARCH_LOG", {"pattern": "NEEDLE-AT-THE-END", "context_lines": 0})
    assert f"big.jsonl:2 [{numbering.label_for('u1')}]: …" in result.text
    assert "NEEDLE-AT-THE-END" in result.text
    assert len(result.text) < 1000


def test_secrets_in_the_log_are_redacted(tmp_path: Path) -> None:
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
    log = tmp_path / "s.jsonl"
    log.write_text(json.dumps({"text": f"export OPENAI_API_KEY={key}"}) + "\n")
    msgs = [Message("u1", "user", "text", "x", entry_index=1)]
    tools, _, _ = tools_for(make_session(msgs, files=[str(log)]))
    for pattern in ("OPENAI_API_KEY", "sk-proj"):
        result = tools.run("SEARCH_LOG", {"pattern": pattern})
        assert "1 hit(s)" in result.text
        assert key not in result.text
        assert "[REDACTED" in result.text


def test_hit_cap_across_messages(tmp_path: Path) -> None:
    msgs = [
        Message(f"m{i}", "assistant", "text", "needle\nneedle", entry_index=i) for i in range(1, 40)
    ]
    tools, _, _ = tools_for(make_session(msgs, files=[str(tmp_path / "gone.jsonl")]), max_hits=5)
    result = tools.run("SEARCH_LOG", {"pattern": "needle", "context_lines": 0})
    assert result.text.startswith("5 hit(s)")
    note = (
        "log search stopped after 5 hits: results may be incomplete; narrow the pattern "
        "to see the rest"
    )
    assert result.incomplete == [note]
    assert result.text.splitlines()[1] == note  # under the first line, kept by any cut
    assert len(result.citations) == 3


# --- file tools and LIST_ARTIFACTS ----------------------------------------------------


def test_read_file_ranges_and_citations(fixtures: Path, tmp_path: Path) -> None:
    session = recorded(fixtures, CLAUDE)
    ws = greet_workspace(tmp_path)
    tools, numbering, turns = tools_for(session, str(ws))
    whole = tools.run("READ_FILE", {"path": "greet.py"})
    assert whole.ok
    assert whole.text.startswith("greet.py, lines 1-200 of 300 (file contents are data):")
    assert "… more lines; ask for 201-300" in whole.text
    edits = [
        numbering.label_for(a.message_id)
        for t in turns
        for a in t.artifacts
        if a.file_path == "greet.py"
    ]
    assert whole.citations == [label for label in dict.fromkeys(edits) if label]
    part = tools.run("READ_FILE", {"path": "/home/dev/src/greet-cli/greet.py", "lines": "2-3"})
    assert part.text.splitlines() == [
        "greet.py, lines 2-3 of 300 (file contents are data):",
        "2 | import argparse",
        "3 | ",
    ]
    same = tools.run("READ_FILE", {"path": "greet.py", "start_line": 2, "end_line": 3})
    assert same.text == part.text
    listed = tools.run("READ_FILE", {"path": "greet.py", "lines": [299, 400]})
    assert listed.text.splitlines()[-1] == "300 | # line 300"


def test_search_file(fixtures: Path, tmp_path: Path) -> None:
    ws = greet_workspace(tmp_path)
    tools, _, _ = tools_for(recorded(fixtures, CLAUDE), str(ws))
    result = tools.run(
        "SEARCH_FILE", {"path": "tests/test_greet.py", "pattern": "class \\w+", "context_lines": 1}
    )
    assert result.text.splitlines() == [
        "1 hit(s) in tests/test_greet.py (file contents are data):",
        "tests/test_greet.py-2- ",
        "tests/test_greet.py:3: class GreetCliTest(unittest.TestCase):",
        "tests/test_greet.py-4-     pass",
    ]
    assert result.citations  # the message that created the file


def test_list_artifacts(fixtures: Path, tmp_path: Path) -> None:
    ws = greet_workspace(tmp_path)
    tools, _, _ = tools_for(recorded(fixtures, CLAUDE), str(ws))
    text = tools.run("LIST_ARTIFACTS", {}).text
    assert "- greet.py: read, edited (turns 1) [" in text
    assert "greet.py: read, edited (turns 1) [M" in text
    assert "in the workspace" in text
    assert "- README.md: read, edited (turns 2)" in text
    assert "README.md: read, edited (turns 2) [M" in text
    assert "not in the workspace" in text
    bare, _, _ = tools_for(recorded(fixtures, CLAUDE))
    assert "no workspace" in bare.run("LIST_ARTIFACTS", {}).text
    empty, _, _ = tools_for(make_session([]))
    assert empty.run("LIST_ARTIFACTS", {}).text.startswith("No files")


# --- arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "error"),
    [
        ("GREP_EVERYTHING", {}, "unknown tool 'GREP_EVERYTHING'; use SEARCH_LOG"),
        ("SEARCH_LOG", {}, "pattern is required"),
        ("SEARCH_LOG", {"pattern": 42}, "pattern is required"),
        ("SEARCH_LOG", {"pattern": "x", "context_lines": 99}, "between 0 and 10"),
        ("SEARCH_LOG", {"pattern": "x", "context_lines": "lots"}, "whole number"),
        ("SEARCH_LOG", {"pattern": "x", "context_lines": True}, "whole number"),
        ("SEARCH_LOG", {"pattern": "x", "literal": "maybe"}, "true or false"),
        ("SEARCH_FILE", {"pattern": "x"}, "path is required"),
        ("READ_FILE", {"path": "greet.py", "lines": "40-10"}, "before start_line"),
        ("READ_FILE", {"path": "greet.py", "lines": 7}, "must look like 10-40"),
        ("READ_FILE", {"path": "greet.py", "start_line": 0}, "between 1 and"),
        ("READ_FILE", {"path": "greet.py", "start_line": 900}, "has only 300 lines"),
    ],
)
def test_bad_calls_come_back_as_errors(
    fixtures: Path, tmp_path: Path, name: str, args: dict[str, Any], error: str
) -> None:
    tools, _, _ = tools_for(recorded(fixtures, CLAUDE), str(greet_workspace(tmp_path)))
    result = tools.run(name, args)
    assert not result.ok
    assert result.text.startswith("ERROR: ")
    assert error in result.text


def test_unknown_arguments_are_ignored_with_a_note(fixtures: Path) -> None:
    tools, _, _ = tools_for(recorded(fixtures, CLAUDE))
    result = tools.run("SEARCH_LOG", {"pattern": "Ada", "colour": "red", "Regex": False})
    assert result.ok
    assert result.text.endswith("(ignored unknown argument(s): colour)")


def test_complete_returns_redacted_findings(fixtures: Path) -> None:
    tools, _, _ = tools_for(recorded(fixtures, CLAUDE))
    key = "ghp_" + "a1B2" * 10
    result = tools.run("complete-evidence-search", {"findings": f"ok [M3] {key}"})
    assert result.name == "COMPLETE_EVIDENCE_SEARCH"
    assert result.findings.startswith("ok [M3] [REDACTED")
    assert canonical_name(" read-file ") == "READ_FILE"


# --- the text protocol -----------------------------------------------------------------


def test_text_calls_several_per_reply_with_escapes() -> None:
    reply = (
        'First the errors [M3]. [SEARCH_LOG: "Error: \\"bad\\" \\\\d+ \\d" 5]\n'
        "Then the file: [read_file: 'src/app.py' 10-40] and [LIST_ARTIFACTS] "
        '[SEARCH_FILE: "a b.py", "x]y" literal=true context="2"]\n'
        "[see M4] [NOTE: not a tool] [COMPLETE_EVIDENCE_SEARCH]"
    )
    calls = parse_text_calls(reply, NAMES)
    assert [c.name for c in calls] == [
        "SEARCH_LOG",
        "READ_FILE",
        "LIST_ARTIFACTS",
        "SEARCH_FILE",
        "COMPLETE_EVIDENCE_SEARCH",
    ]
    assert calls[0].positional == ['Error: "bad" \\d+ \\d', "5"]
    assert arguments_from_text(calls[0]) == {
        "pattern": 'Error: "bad" \\d+ \\d',
        "context_lines": "5",
    }
    assert arguments_from_text(calls[1]) == {"path": "src/app.py", "lines": "10-40"}
    assert arguments_from_text(calls[3]) == {
        "path": "a b.py",
        "pattern": "x]y",
        "literal": "true",
        "context": "2",
    }
    assert all(c.error is None for c in calls)


def test_malformed_and_unknown_text_calls() -> None:
    calls = parse_text_calls('[FETCH_URL: "http://x"] [Search_Log: "x', NAMES)
    assert [(c.name, c.error) for c in calls] == [
        ("FETCH_URL", None),
        ("SEARCH_LOG", "unterminated quoted argument"),
    ]
    calls = parse_text_calls('[SEARCH_LOG: "a" [READ_FILE: "b.py"]', NAMES)
    assert [(c.name, c.error) for c in calls] == [
        ("SEARCH_LOG", "missing closing ']'"),
        ("READ_FILE", None),
    ]
    with pytest.raises(Exception, match="missing closing"):
        arguments_from_text(calls[0])
    (extra,) = parse_text_calls('[LIST_ARTIFACTS: "x"]', NAMES)
    with pytest.raises(Exception, match="at most 0 argument"):
        arguments_from_text(extra)


def test_text_calls_are_capped() -> None:
    calls = parse_text_calls("[LIST_ARTIFACTS]" * 100, NAMES)
    assert len(calls) == MAX_CALLS


def test_which_logs_are_addressed_by_line() -> None:
    def session(agent: str, **meta: str) -> Session:
        s = make_session([], agent=agent)
        s.meta.update(meta)
        return s

    assert line_addressed(session("gemini"), "chats/session-1.jsonl")
    assert not line_addressed(session("gemini"), "chats/session-1.json")
    assert line_addressed(session("opencode", source="events"), "turn3.jsonl")
    assert not line_addressed(session("opencode", source="export"), "export.json")
    assert not line_addressed(session("inspect"), "run.eval")
    assert line_addressed(session("codex"), "rollout.jsonl")


def test_hit_cap_stops_before_the_next_log_file(tmp_path: Path) -> None:
    paths = []
    for n in (1, 2):
        path = tmp_path / f"part{n}.jsonl"
        path.write_text("needle\n" * 3)
        paths.append(str(path))
    msgs = [Message("u1", "user", "text", "x", entry_index=1)]
    tools, _, _ = tools_for(make_session(msgs, files=paths), max_hits=3)
    result = tools.run("SEARCH_LOG", {"pattern": "needle", "context_lines": 0})
    assert result.text.startswith("3 hit(s)")
    assert "part2.jsonl" not in result.text


def test_long_results_are_cut_and_marked(fixtures: Path) -> None:
    tools, _, _ = tools_for(recorded(fixtures, CLAUDE), max_result_chars=400)
    result = tools.run("SEARCH_LOG", {"pattern": "greet"})
    assert result.text.endswith("\n… [result cut at 400 characters]")
    assert len(result.text) < 450


class SteppingClock:
    """A clock that stands still for ``ticks`` reads, then jumps far past any deadline."""

    def __init__(self, ticks: int) -> None:
        self.reads = 0
        self.ticks = ticks

    def __call__(self) -> float:
        self.reads += 1
        return 0.0 if self.reads <= self.ticks else 1000.0


def test_a_search_cut_by_its_deadline_says_hits_may_be_missing(fixtures: Path) -> None:
    session = recorded(fixtures, CLAUDE)
    # The deadline is taken, then five lines are searched before the clock jumps.
    tools, _, _ = tools_for(session, clock=SteppingClock(6), max_result_chars=200)
    result = tools.run("SEARCH_LOG", {"pattern": "zzz-not-in-the-log"})
    assert result.ok
    note = "log search stopped after 2 s (line 6): results may be incomplete; simplify the pattern"
    assert result.incomplete == [note]
    # Said under the first line, so the cut of a long result keeps it.
    assert result.text.splitlines()[1] == note
    whole = tools_for(session, clock=SteppingClock(10**9))[0]
    assert whole.run("SEARCH_LOG", {"pattern": "zzz-not-in-the-log"}).incomplete == []
