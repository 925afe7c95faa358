"""The summary template writes every log or model string inert, not only those it filters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from opencode_restore.pipeline.restoration import (
    FALLBACK_WARNING,
    BranchSummaryRow,
    CommandRow,
    CompactionPoint,
    FailedTurnRow,
    FileRow,
    Quote,
    ReferenceRow,
    Restoration,
    SessionInfo,
)
from opencode_restore.pipeline.schemas import Decision, Progress, SessionSummary
from opencode_restore.report.summary import summary_markdown

#: The headings the template writes; log text must never add one.
_HEADINGS = {
    "Goal",
    "Constraints and preferences",
    "Progress",
    "Key decisions",
    "Errors, fixes and ruled-out approaches",
    "Findings",
    "Current work",
    "Next step",
    "Open questions",
    "Compaction",
    "Abandoned branches",
    "Files",
    "Files changed",
    "Files read",
    "Commands",
    "References",
}
_PARSER = MarkdownIt("commonmark").enable("table")
_hostile = st.text(alphabet="`\\<>ab /=\n[]()!#*_&|-+.1):~", max_size=24)
_items = st.lists(_hostile, max_size=3)


@st.composite
def _restorations(draw: st.DrawFn) -> Restoration:
    t = draw
    return Restoration(
        session=SessionInfo(
            id=t(_hostile), agent=t(_hostile), files=[], cwd=t(_hostile), title=t(_hostile)
        ),
        provider=t(_hostile),
        summary=SessionSummary(
            goal=t(_hostile),
            constraints_preferences=t(_items),
            progress=Progress(done=t(_items), in_progress=t(_items), blocked=t(_items)),
            key_decisions=[Decision(decision=t(_hostile), reason=t(_hostile))],
            errors_fixes_ruled_out=t(_items),
            findings=t(_items),
            current_work=t(_hostile),
            next_step=t(st.sampled_from(["", t(_hostile)])),
            open_questions=t(_items),
            compaction_notes=t(_items),
        ),
        files=[
            FileRow(path=t(_hostile), actions=["edited"], turns=[1], citations=["M1"]),
            FileRow(path=t(_hostile), actions=["read"], turns=[1]),
        ],
        commands=[CommandRow(command=t(_hostile), turn=1, citation="M1")],
        last_user_request=Quote(text=t(_hostile), citation="M2"),
        compactions=[
            CompactionPoint(citation="M3", turn=1, kind="summary", summary_excerpt=t(_hostile))
        ],
        references=[
            ReferenceRow(
                label="M1", message_id=t(_hostile), file=t(_hostile), file_index=0, entry_index=0
            )
        ],
        branch_summaries=[
            BranchSummaryRow(
                branch_id="b",
                leaf_id="l",
                from_id=t(_hostile),
                label=t(_hostile),
                source="llm",
                summary=t(_hostile),
            )
        ],
        failed_turns=[FailedTurnRow(turn=2, error=t(_hostile))],
        warnings=[f"{FALLBACK_WARNING}: {t(_hostile)}"],
    )


@settings(max_examples=150, deadline=None)
@given(_restorations())
def test_no_log_or_model_text_makes_markup_or_structure(r: Restoration) -> None:
    md = summary_markdown(r, references=True)
    tokens = _PARSER.parse(md)
    kinds = {tok.type for tok in tokens} | {
        child.type for tok in tokens for child in tok.children or []
    }
    assert not kinds & {"html_block", "html_inline", "link_open", "image", "fence", "code_block"}
    headings = [tokens[i + 1].content for i, tok in enumerate(tokens) if tok.type == "heading_open"]
    assert headings[0].startswith("SESSION SUMMARY")
    assert set(headings[1:]) <= _HEADINGS, md
    # One table per appendix section: no line of text started or ended one.
    assert sum(tok.type == "table_open" for tok in tokens) == 2, md
