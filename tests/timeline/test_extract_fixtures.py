"""timeline_messages over real Inspect data, built by the timeline builder.

Fixtures are the ones in fixtures/inspect (provenance in fixtures/inspect/PROVENANCE.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.sources.inspect.builder import build_timeline
from opencode_restore.timeline import Numbering, timeline_messages

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "inspect"


def load(relative: str) -> Any:
    return json.loads((FIXTURES / relative).read_text(encoding="utf-8"))


async def test_compaction_boundary_fixture_splits_main_into_two_segments() -> None:
    # Scout's compaction_boundary.json: e-001, e-002, e-compact (summary), e-003, e-004.
    events = load("scout-timeline-fixtures/compaction_boundary.json")["events"]
    numbering = Numbering()
    items = []
    async for item in timeline_messages(build_timeline(events)):
        items.append((item, await numbering.messages_as_str(item.messages)))
    assert [(i.span.name, i.segment, i.segment_count) for i, _ in items] == [
        ("main", 0, 2),
        ("main", 1, 2),
    ]
    # Each segment is its last call's input + output (e-002, then e-004).
    assert [m.text for m in items[0][0].messages] == [
        "You are an assistant",
        "Solve the task",
        "Let me think",
        "Continue",
        "Here is my answer",
    ]
    assert [m.text for m in items[1][0].messages][-3:] == [
        "Approach B",
        "Elaborate",
        "Details here",
    ]
    # The system prompt is not shown, so each segment takes four labels, globally numbered.
    assert items[0][1].startswith("[M1] USER:\nSolve the task\n")
    assert items[1][1].startswith("[M5] USER:\nSolve the task\n")
    refs = numbering.extract_references("Answered [M4], then elaborated [M7-M8].")
    assert [r.message.text for r in refs if r.message] == [
        "Here is my answer",
        "Elaborate",
        "Details here",
    ]


async def test_eval_log_sample_yields_the_final_conversation_once() -> None:
    # The browser eval log: 5 model calls repeat the growing conversation; scanning must
    # give the sample's 10 messages once, not the concatenation of every call's input.
    sample = load("eval-logs/2025-05-12T20-27-36-04-00_browser.json")["samples"][0]
    items = [item async for item in timeline_messages(build_timeline(sample["events"]))]
    assert len(items) == 1
    assert items[0].span.name == "main"
    assert [m.id for m in items[0].messages] == [m["id"] for m in sample["messages"]]
    assert [m.role for m in items[0].messages][:5] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
