"""split_transcripts: inspect_scout's /clear splitting and slug merging (PEER rows)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Session, TimelineEvent
from opencode_restore.sources.claude_code.reader import READER, split_transcripts

SCOUT = Path(__file__).resolve().parents[3] / "fixtures" / "claude-code" / "scout"


def _split(*names: str) -> list[Session]:
    sink = WarningSink()
    out = split_transcripts([SCOUT / n for n in names], sink)
    assert sink.warnings == []
    return out


def _info(s: Session) -> list[str]:
    return [e.text or "" for e in s.timeline.root.events() if e.kind == "info"]


def test_single_file_is_one_transcript_without_session_ids() -> None:
    (t,) = _split("simple_conversation.jsonl")
    assert t.id == "test-session-001"
    assert t.meta["slug"] == "simple-conv-slug"
    assert "session_ids" not in t.meta
    assert len(t.messages()) == 4
    assert t.usage().total == 300


def test_clear_command_splits_a_file_in_two() -> None:
    first, second = _split("clear_split_session.jsonl")
    assert (first.id, second.id) == ("test-session-003-0", "test-session-003-1")
    assert [m.text for m in first.messages()] == [
        "First conversation message",
        "I understand. This is the first response.",
    ]
    assert [m.text for m in second.messages()] == [
        "Second conversation after clear",
        "This is a fresh start after the clear command.",
    ]
    assert second.started_at is not None
    assert second.started_at.minute == 0
    assert second.started_at.second == 3


def test_files_sharing_a_slug_merge() -> None:
    (merged,) = _split("slug_session_1.jsonl", "slug_session_2.jsonl")
    assert merged.id == "session-aaa"
    assert merged.meta["slug"] == "merged-slug-test"
    assert merged.meta["session_ids"] == ["session-aaa", "session-bbb"]
    assert len(merged.messages()) == 4
    assert merged.usage().total == 450
    info = _info(merged)
    assert len(info) == 1
    assert "Context reset" in info[0]
    assert len(merged.files) == 2


def test_merge_orders_members_by_time_not_by_argument_order() -> None:
    (merged,) = _split("slug_session_2.jsonl", "slug_session_1.jsonl")
    assert merged.id == "session-aaa"
    assert merged.messages()[0].text == "Plan how to implement the feature"


def test_slug_merge_takes_the_pre_clear_part_and_leaves_the_rest_alone() -> None:
    out = _split("slug_clear_session.jsonl", "slug_clear_partner.jsonl")
    assert len(out) == 2
    merged = next(t for t in out if "session_ids" in t.meta)
    alone = next(t for t in out if t is not merged)
    assert merged.meta["slug"] == "clear-merge-slug"
    assert merged.meta["session_ids"] == ["session-clear", "session-partner"]
    assert [m.text for m in merged.messages()] == [
        "Plan the feature",
        "Here is my plan.",
        "Execute the plan",
        "Executing the plan now.",
    ]
    assert "-1" in alone.id
    assert len(alone.messages()) == 2
    assert alone.messages()[0].text == "Unrelated question after clear"


def test_two_files_each_with_a_clear() -> None:
    """Own reading of scout's rule (no peer test): opening parts merge, the rest stand alone."""
    out = _split("slug_multi_clear_file1.jsonl", "slug_multi_clear_file2.jsonl")
    assert [t.id for t in out] == ["session-mc1-0", "session-mc1-1", "session-mc2-1"]
    assert out[0].meta["session_ids"] == ["session-mc1", "session-mc2"]
    assert [len(t.messages()) for t in out] == [4, 2, 2]


def test_whole_scout_directory_gives_at_least_five_transcripts() -> None:
    files = sorted(SCOUT.glob("*.jsonl"))
    out = split_transcripts(files, WarningSink())
    assert len(out) >= 5
    ids = [t.id for t in out]
    assert "test-session-003-0" in ids
    assert "test-session-003-1" in ids


def test_compaction_session_is_one_transcript_with_its_summary() -> None:
    (t,) = _split("compaction_session.jsonl")
    texts = [m.text for m in t.messages()]
    assert len(texts) >= 3
    assert any(x.startswith("Summary of previous conversation") for x in texts)


def test_segments_keep_sub_agent_spans(tmp_path: Path) -> None:
    for name in ("agent_session.jsonl", "agent-atest01.jsonl"):
        shutil.copy(SCOUT / name, tmp_path / name)
    (t,) = split_transcripts([tmp_path / "agent_session.jsonl"], WarningSink())
    assert [sp.name for sp in t.timeline.root.spans()] == ["Explore"]


def test_files_without_messages_and_without_slug(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b'{"type":"summary","summary":"only a title","leafUuid":"x"}\n')
    plain = tmp_path / "plain.jsonl"
    line = {"type": "user", "uuid": "p1", "sessionId": "plain", "message": {"content": "hi"}}
    plain.write_bytes(orjson.dumps(line) + b"\n")
    out = split_transcripts([empty, plain], WarningSink())
    assert [t.id for t in out] == ["plain"]
    assert READER.read([empty], WarningSink()).title == "only a title"
    assert isinstance(out[0].timeline.root.content[0], TimelineEvent)
