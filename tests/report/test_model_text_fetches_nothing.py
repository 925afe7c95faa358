"""Model text cannot make a rendered summary fetch anything (issue 31).

A link reference definition in one model-written field (``[r1]: https://…/pixel.png``) and
``![x][r1]`` in another rendered as ``<img>`` in ``--format markdown`` and ``--format
prompt``: a viewer that opened the summary told a remote host so. Every model field is
planted with each piece of that attack (and inline images, autolinks, raw ``<img>``), the
outputs are rendered by a CommonMark renderer, and no image, raw HTML or link to the
planted host may come out.
"""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from opencode_restore.pipeline.restoration import (
    FailedTurnRow,
    Quote,
    Restoration,
    SessionInfo,
)
from opencode_restore.pipeline.schemas import (
    ArtifactNote,
    Decision,
    Progress,
    SessionSummary,
    TurnSummary,
)
from opencode_restore.report.summary import render_restoration

HOST = "pixel.example"
#: The pieces of the attack: each field gets all of them, so any two fields can pair up.
PIECES = [
    f"[r1]: https://{HOST}/a.png",
    "![x][r1]",
    "![r1]",
    "![r1][]",
    f"![y](https://{HOST}/b.png)",
    f"<img src=https://{HOST}/c.png>",
    f"<https://{HOST}/d>",
    f'<picture><source srcset="https://{HOST}/e.png"></picture>',
    f"\\<img src=https://{HOST}/f.png>",
    f"[r2]:\thttps://{HOST}/g.png 'title'",
    "[link][r2]",
]


def _fields() -> list[str]:
    return [f"{piece} [M1]" for piece in PIECES]


def _one(index: int) -> str:
    return _fields()[index % len(PIECES)]


def _turn(number: int) -> TurnSummary:
    fields = _fields()
    return TurnSummary(
        turn_number=number,
        user_request_summary=_one(number),
        agent_response_summary=_one(number + 1),
        key_outcomes=fields,
        state_changes=fields,
        artifacts_modified=[ArtifactNote(path="a.py", note=f) for f in fields],
        constraints_assumptions_added=fields,
        decisions=[Decision(decision=f, reason=f) for f in fields],
        errors_and_fixes=fields,
        open_questions=fields,
    )


def _restoration() -> Restoration:
    fields = _fields()
    return Restoration(
        session=SessionInfo(id="s1", agent="claude-code", files=["log.jsonl"], cwd="/w"),
        provider="openai:model",
        summary=SessionSummary(
            goal=_one(0),
            constraints_preferences=fields,
            progress=Progress(done=fields, in_progress=fields, blocked=fields),
            key_decisions=[Decision(decision=f, reason=f) for f in fields],
            errors_fixes_ruled_out=fields,
            findings=fields,
            current_work=_one(1),
            next_step=_one(2),
            open_questions=fields,
            compaction_notes=fields,
        ),
        turns=[_turn(1), _turn(2)],
        failed_turns=[FailedTurnRow(turn=3, error=_one(3))],
        last_user_request=Quote(text="\n".join(fields), citation="M2"),
    )


_RENDERER = MarkdownIt("commonmark").enable("table")


@pytest.mark.parametrize(
    ("fmt", "dump_turns"), [("markdown", False), ("markdown", True), ("prompt", False)]
)
def test_no_model_field_makes_an_image_or_a_link_out(fmt: str, dump_turns: bool) -> None:
    out = render_restoration(_restoration(), fmt, dump_turns=dump_turns, references=True)
    assert HOST in out  # the planted text is there, as text
    html = _RENDERER.render(out)
    assert "<img" not in html
    assert "<picture" not in html
    assert "<source" not in html
    assert f'href="https://{HOST}' not in html
    assert f'src="https://{HOST}' not in html
    tokens = _RENDERER.parse(out)
    kinds = {tok.type for tok in tokens} | {
        child.type for tok in tokens for child in tok.children or []
    }
    assert not kinds & {"image", "html_inline", "html_block", "link_open"}, out
