"""Whole-file JSON documents read one item at a time (issue 31: a 185 MB legacy Gemini
session took 2.2-3.3 GB read whole)."""

from __future__ import annotations

from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.gemini import replay
from opencode_restore.sources.gemini.reader import READER
from opencode_restore.sources.jsonstream import json_start, stream_items, top_level


def test_top_level_skips_the_streamed_member(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text('junk {"a": {"b": [1, 2]}, "messages": [{"id": "m1"}], "z": "last"}')
    sink = WarningSink()
    start = json_start(path, sink)
    assert start == 5
    assert top_level(path, "messages", sink, start) == {
        "a": {"b": [1, 2]},
        "messages": [],
        "z": "last",
    }
    assert list(stream_items(path, "messages.item", sink, start=start)) == [{"id": "m1"}]
    assert [w.message for w in sink.warnings] == ["skipped 5 bytes before the first '{'"]


def test_a_member_nested_too_deep_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"a": ' + "[" * 1000 + "]" * 1000 + ', "messages": []}')
    sink = WarningSink()
    assert top_level(path, "messages", sink) is None
    assert "nested more than 128 deep" in sink.warnings[0].message


def test_a_legacy_session_reads_up_to_the_message_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay, "MAX_LEGACY_MESSAGES", 3)
    path = tmp_path / "session-x.json"
    records = ",".join(
        f'{{"id": "m{n}", "type": "user", "content": "hi {n}", "timestamp": "{n}"}}'
        for n in range(5)
    )
    path.write_text(f'{{"sessionId": "s", "messages": [{records}]}}')
    sink = WarningSink()
    texts = [m.text for m in READER.read([path], sink).messages()]
    assert texts == ["hi 0", "hi 1", "hi 2"]
    assert [w.message for w in sink.warnings] == ["over 3 messages; the rest skipped"]
