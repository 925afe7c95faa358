"""A numbering keeps a few bytes per label beside the messages it labels, never a
reference object and a label string per label (bench/scale.py: ~60,000 labels at 200 MB)."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime

import pytest

from opencode_restore.model import Message
from opencode_restore.timeline.numbering import Numbering, Reference

pytestmark = pytest.mark.anyio

LABELS = 20_000
T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def _messages() -> list[Message]:
    return [Message(f"m{n:08d}", "assistant", "text", "done", T0, 0, n + 1) for n in range(LABELS)]


async def test_labelling_a_long_session_keeps_under_80_bytes_per_label() -> None:
    messages = _messages()
    numbering = Numbering()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for start in range(0, LABELS, 100):  # a turn's worth at a time, as a restore does
            await numbering.messages_as_str(messages[start : start + 100])
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(numbering) == LABELS
    # A Reference and its label string per label took ~165 bytes; now ~57.
    assert held / LABELS < 80, held / LABELS
    # What is kept still answers as before: the reference is the one of the message.
    last = messages[-1]
    assert numbering.label_for(last.id) == f"M{LABELS}"
    assert numbering.reference(f"M{LABELS}") == Reference.of(f"M{LABELS}", last)
    assert list(numbering)[:2] == [Reference.of("M1", messages[0]), Reference.of("M2", messages[1])]
    restored = Numbering.from_dict(numbering.to_dict())
    assert [r.id for r in restored] == [m.id for m in messages]
    assert restored.extract_references("[M3-M4]") == [
        Reference("M3", messages[2].id, 0, 3, T0),
        Reference("M4", messages[3].id, 0, 4, T0),
    ]
