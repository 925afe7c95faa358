"""Markdown details of the SESSION SUMMARY: code spans and table cells."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.pipeline.restoration import (
    INTERRUPTED_WARNING,
    CommandRow,
    FileRow,
    ReferenceRow,
    Restoration,
    SessionInfo,
)
from opencode_restore.pipeline.schemas import Progress, SessionSummary
from opencode_restore.report.summary import summary_markdown

PI = (
    "pi/print-continue/native/dot-pi/agent/sessions/--home-dev-src-shrinkray--/"
    "2026-11-24T07-37-49-060Z_01a20c7d-5103-74b6-b6ac-a5b603118ee6.jsonl"
)


def _restoration() -> Restoration:
    return Restoration(
        session=SessionInfo(id="s1", agent="pi", files=["log.jsonl"]),
        provider="offline:rules",
        summary=SessionSummary(
            goal="Add a flag [M1]", progress=Progress(done=["Edited `a.py` [M2]"])
        ),
        files=[
            FileRow(path="a.py", actions=["read", "edited"], turns=[1], citations=["M2"]),
            FileRow(path="b.py", actions=["read"], turns=[1], citations=["M3"]),
        ],
        commands=[CommandRow(command="ls", turn=1, citation="M3")],
        references=[
            ReferenceRow(label="M1", message_id="u1", file="log.jsonl", file_index=0, entry_index=1)
        ],
        warnings=[f"{INTERRUPTED_WARNING} 2, before its answer"],
    )


def test_empty_sections_are_left_out_and_the_appendix_is_asked_for() -> None:
    r = _restoration()
    md = summary_markdown(r)
    assert "_None recorded._" not in md
    assert "## Key decisions" not in md
    assert "## Open questions" not in md
    assert "**In progress**" not in md
    assert "## References" not in md
    assert "## Commands" not in md
    assert "**Unfinished:** the session ended in the middle of turn 2" in md
    full = summary_markdown(r, references=True)
    # Only files the work changed are in the table; the read-only ones are counted.
    assert "| `a.py` | edited | 1 | M2 |" in full
    assert "| `b.py` |" not in full
    assert "1 more files were only read." in full
    assert "| `a.py` |" not in md
    # Both short lists are in the summary itself, with or without the appendix.
    for text in (md, full):
        assert "## Files changed\n\n- `a.py` (edited) [M2]\n" in text
        assert "## Files read\n\n- `b.py` [M3]\n" in text
    assert "## References" in full
    assert "| M1 | `u1` | log.jsonl | 1 |  |" in full
    assert "- turn 1: `ls` [M3]" in full


def test_the_markdown_of_a_restore_is_the_same_bytes_every_run(fixtures: Path) -> None:
    def once() -> str:
        result = CliRunner().invoke(
            cli, ["restore", str(fixtures / "devset/facts.json").replace("facts.json", PI), "-q"]
        )
        assert result.exit_code == 0, result.stderr
        return result.stdout

    assert once() == once()
