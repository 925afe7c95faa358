"""``restore --format prompt``: what the next agent reads has no warnings and no escapes."""

from __future__ import annotations

import json

import pytest

from opencode_restore.pipeline.restoration import (
    FALLBACK_WARNING,
    INTERRUPTED_WARNING,
    FailedTurnRow,
    FileRow,
    Quote,
    Restoration,
    SessionInfo,
)
from opencode_restore.pipeline.schemas import Progress, SessionSummary
from opencode_restore.report.summary import render_restoration, summary_markdown, summary_prompt

#: An evidence-search warning as a restore of the devset's logs wrote it.
SEARCH_WARNING = (
    "evidence search: log search stopped after 50 hits: results may be incomplete; narrow the "
    'pattern to see the rest ("(?=[A-Z])(?:Traceback \\(most recent|(?<=\\\\[nt])[A-Z]\\w*Error)")'
)


def _restoration(provider: str = "offline:rules", **changes: object) -> Restoration:
    r = Restoration(
        session=SessionInfo(id="s1", agent="codex", files=["log.jsonl"], cwd="/w"),
        provider=provider,
        summary=SessionSummary(
            goal="<recommended_plugins> Fix `a<b` & ship [M1]",
            progress=Progress(done=["Turn 1: edited a.py [M2]"]),
            errors_fixes_ruled_out=["Unexpected token '<', \"<!doctype \"... [M3]"],
            current_work="# plan: </system-reminder> next [M4]",
        ),
        files=[
            FileRow(path="/w/a.py", actions=["read", "edited"], turns=[1], citations=["M2"]),
            FileRow(path="/w/docs/b.md", actions=["read"], turns=[1], citations=["M3"]),
        ],
        last_user_request=Quote(text="ship it <now>\n## really", citation="M5"),
        warnings=[
            "log.jsonl:3: invalid JSON; skipped",
            SEARCH_WARNING,
            f"{INTERRUPTED_WARNING} 2, before its answer",
        ],
    )
    return r.model_copy(update=changes)


def test_the_prompt_carries_no_warning_and_no_html_escape() -> None:
    out = summary_prompt(_restoration())
    assert "Warning" not in out
    assert "narrow the pattern" not in out
    assert "Traceback" not in out
    assert "invalid JSON" not in out
    for entity in ("&lt;", "&gt;", "&amp;", "&#"):
        assert entity not in out
    assert "<\\recommended_plugins> Fix `a<b` & ship [M1]" in out
    assert "Unexpected token '<', \"<\\!doctype \"... [M3]" in out
    # What the next agent must know is said as state, not as a warning.
    assert f"**Unfinished:** {INTERRUPTED_WARNING} 2, before its answer." in out
    # The JSON keeps every warning.
    assert SEARCH_WARNING in json.loads(render_restoration(_restoration(), "json"))["warnings"]


def test_log_text_cannot_close_a_tag_or_make_a_heading() -> None:
    out = summary_prompt(_restoration())
    assert "</system-reminder>" not in out
    assert "\\# plan: <\\/system-reminder> next [M4]" in out.splitlines()
    r = _restoration(summary=_restoration().summary.model_copy(update={"next_step": ""}))
    lines = summary_prompt(r).splitlines()
    assert "> ship it <\\now>" in lines
    assert "> ## really" in lines
    assert not [line for line in lines if line.startswith("#") and "really" in line]


def test_the_prompt_lists_the_files_changed_and_read() -> None:
    out = summary_prompt(_restoration())
    assert "## Files changed\n- `a.py` (edited) [M2]\n" in out
    assert "## Files read\n- `docs/b.md` [M3]\n" in out


def test_a_session_that_only_read_files_has_a_files_read_list() -> None:
    r = _restoration(files=[FileRow(path="/w/x.py", actions=["read"], turns=[1])])
    for text in (summary_prompt(r), summary_markdown(r)):
        assert "Files read" in text
        assert "`x.py`" in text
        assert "Files changed" not in text


@pytest.mark.parametrize(
    ("provider", "warnings", "footer"),
    [
        (
            "offline:rules",
            [],
            "_Written by the offline rules from the log's facts: no model was called._",
        ),
        ("openai:gpt-4o", [], "_Summarized by `openai:gpt-4o`._"),
        (
            "openai:gpt-4o",
            [f"{FALLBACK_WARNING}: HTTP 500"],
            "_The model `openai:gpt-4o` could not write this summary: "
            "the offline rules wrote it from the log's facts._",
        ),
    ],
)
def test_the_last_line_says_who_wrote_the_summary(
    provider: str, warnings: list[str], footer: str
) -> None:
    out = summary_prompt(_restoration(provider, warnings=warnings))
    assert out.rstrip("\n").splitlines()[-1] == footer
    assert "HTTP 500" not in out


def test_turns_that_could_not_be_summarized_are_named_without_their_error() -> None:
    r = _restoration(failed_turns=[FailedTurnRow(turn=3, error="HTTP 429 <html>")])
    out = summary_prompt(r)
    assert "**Incomplete:** turns 3 could not be summarized; see their log." in out
    assert "429" not in out


def test_the_markdown_says_when_no_model_was_called() -> None:
    assert "summarized by offline rules: no model called" in summary_markdown(_restoration())
    assert "summarized by `openai:gpt-4o`" in summary_markdown(_restoration("openai:gpt-4o"))
