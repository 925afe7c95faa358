"""Claude Code web exports (``{"loglines": [...]}``): simonw/claude-code-transcripts' sample."""

from __future__ import annotations

from pathlib import Path

from opencode_restore.diagnostics import WarningSink
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources import detect
from opencode_restore.sources.claude_code.reader import READER

EXPORT = (
    Path(__file__).resolve().parents[3]
    / "fixtures"
    / "claude-code"
    / "simonw"
    / "sample_session.json"
)


def test_the_web_export_is_detected_and_read_like_its_jsonl_twin() -> None:
    assert detect(EXPORT) is READER
    sink = WarningSink()
    session = READER.read([EXPORT], sink)
    assert sink.warnings == []
    msgs = session.messages()
    assert [(m.id, m.entry_index) for m in msgs] == [
        (m.id, m.entry_index) for m in READER.iter_messages([EXPORT], WarningSink())
    ]
    assert [t.user_text for t in parse_turns(session)] == [
        "Create a simple Python function to add two numbers",
        "Now edit the file to add a subtract function",
        "Run the tests again",
        "Fix the issue and commit",
        "Add a multiply function too",
    ]
    calls = {m.tool_call_id for m in msgs if m.type == "tool_use"}
    results = {m.tool_call_id for m in msgs if m.type == "tool_result"}
    assert calls == results
    assert len(calls) == 12
    summary = next(m for m in msgs if m.type == "summary")
    assert summary.entry_index == 29  # the logline's place in the list
    assert summary.text.startswith("This is a session continuation summary")
    assert session.meta["source"] == "web-export"


def test_bad_loglines_are_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(
        '{"loglines": [3, {"type": "user", "message": {"role": "user", "content": "hi"}}]}'
    )
    sink = WarningSink()
    msgs = READER.read([path], sink).messages()
    assert [m.text for m in msgs] == ["hi"]
    assert [str(w) for w in sink.warnings] == [f"{path}: logline 1 is not an object; skipped"]
    assert READER.sniff(path, b'{"loglines": "nothing"}') == 0.0
