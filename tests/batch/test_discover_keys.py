"""One session, one key: however a batch input is named, and what a broken input becomes.

QA: ``batch DIR 'DIR/*.jsonl'`` restored the same file twice (the stem when named,
the session id when found in the directory), and broken inputs only warned.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from opencode_restore.batch.discover import Leftovers, discover
from opencode_restore.batch.items import BatchItem
from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError

FIX = Path(__file__).resolve().parents[2] / "fixtures"
[ROLLOUT] = (FIX / "codex" / "recorded" / "exec-resume").glob("rollout-*.jsonl")
THREAD = "01a1fde9-539c-77f2-9e0a-d405fab49546"
TREE_V3 = FIX / "pi" / "own" / "tree-v3.jsonl"
SCOUT = FIX / "claude-code" / "scout"
GEMINI_LEGACY = FIX / "gemini" / "own" / "session-2026-02-04T07-00-gemresum.json"


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """A folder of logs whose names are not their session ids."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(ROLLOUT, folder / ROLLOUT.name)
    shutil.copy(TREE_V3, folder / "tree-v3.jsonl")
    shutil.copy(SCOUT / "simple_conversation.jsonl", folder / "scout__simple.jsonl")
    return folder


def _keys(items: list[BatchItem]) -> list[tuple[str, str]]:
    return sorted((i.agent, i.key) for i in items)


EXPECTED = [
    ("claude-code", "test-session-001"),
    ("codex", THREAD),
    ("pi", "sess-tree-0001"),
]


def test_named_globbed_and_scanned_files_get_the_same_keys(inputs: Path) -> None:
    named = discover([str(p) for p in sorted(inputs.iterdir())], WarningSink())
    globbed = discover([f"{inputs}/*.jsonl"], WarningSink())
    scanned = discover([str(inputs)], WarningSink())
    assert _keys(named) == _keys(globbed) == _keys(scanned) == EXPECTED
    # The same content hashes too, so a manifest written one way skips the other.
    hashes = [sorted(i.content_hash for i in items) for items in (named, globbed, scanned)]
    assert hashes[0] == hashes[1] == hashes[2]


def test_a_file_named_several_ways_is_one_item_read_once(
    inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(inputs.parent)
    items = discover(
        [str(inputs), f"{inputs}/*.jsonl", "in/tree-v3.jsonl", f"{inputs}/../in/tree-v3.jsonl"],
        WarningSink(),
    )
    assert _keys(items) == EXPECTED
    tree = next(i for i in items if i.agent == "pi")
    assert [p.resolve() for p in tree.files] == [(inputs / "tree-v3.jsonl").resolve()]


def test_slug_continued_files_named_in_any_order_are_one_chain(tmp_path: Path) -> None:
    # EXPECTATIONS: slug_session_1 + slug_session_2 merge into 1 session, id session-aaa,
    # 4 messages, session_ids holds both ids.
    for name in ("slug_session_1.jsonl", "slug_session_2.jsonl"):
        shutil.copy(SCOUT / name, tmp_path / f"scout__{name}")
    later, earlier = (
        tmp_path / "scout__slug_session_2.jsonl",
        tmp_path / "scout__slug_session_1.jsonl",
    )
    [item] = discover([str(later), str(earlier)], WarningSink())
    assert (item.session_id, item.key) == ("session-aaa", "session-aaa")
    assert item.files == [earlier, later]  # oldest first, whatever the argument order
    session = item.load(WarningSink())
    assert session.id == "session-aaa"
    assert len(session.messages()) == 4
    assert sorted(session.meta["session_ids"]) == ["session-aaa", "session-bbb"]
    assert session.usage().total == 450
    [scanned] = discover([str(tmp_path)], WarningSink())
    assert (scanned.key, scanned.files) == ("session-aaa", [earlier, later])


def test_a_sub_agent_file_is_left_to_its_parent_unless_named(tmp_path: Path) -> None:
    # scout's sub-agent file is named agent-atest01.jsonl upstream; with a prefix only
    # its isSidechain entries (and the parent's sessionId) say what it is.
    shutil.copy(SCOUT / "agent_session.jsonl", tmp_path / "scout__agent_session.jsonl")
    sub = tmp_path / "scout__agent-atest01.jsonl"
    shutil.copy(SCOUT / "agent-atest01.jsonl", sub)
    for args in ([str(tmp_path)], [f"{tmp_path}/*.jsonl"]):
        [item] = discover(args, WarningSink())
        assert (item.key, [p.name for p in item.files]) == (
            "test-session-004",
            ["scout__agent_session.jsonl"],
        )
    # Named on its own it is restored on its own, under its file name, not the parent's id.
    [alone] = discover([str(sub)], WarningSink())
    assert (alone.key, alone.files) == ("scout__agent-atest01", [sub])


def test_named_inputs_that_cannot_be_read_are_failed_items(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    sink = WarningSink()
    items = discover([str(empty), str(binary), str(tmp_path / "gone.jsonl"), str(TREE_V3)], sink)
    assert [(i.key, i.agent, i.content_hash) for i in items[:3]] == [
        ("empty", "unknown", ""),
        ("binary", "unknown", ""),
        ("gone", "unknown", ""),
    ]
    assert [i.error for i in items[:3]] == [
        f"{empty}: file is empty",
        f"{binary}: unknown log format (tried claude-code, codex, gemini, pi, opencode, "
        "inspect, terminal); force one with --agent NAME",
        f"{tmp_path / 'gone.jsonl'}: no such file or directory",
    ]
    assert (items[3].key, items[3].error) == ("sess-tree-0001", None)
    assert sink.warnings == []


def test_two_missing_inputs_with_one_name_stay_two_items(tmp_path: Path) -> None:
    items = discover(
        [str(tmp_path / "a" / "s.jsonl"), str(tmp_path / "b" / "s.jsonl")], WarningSink()
    )
    assert [i.key for i in items] == ["s", items[1].key]
    assert items[1].key.startswith("s-")


def test_scanned_files_that_are_no_logs_are_warned_once_without_line_zero(
    inputs: Path,
) -> None:
    (inputs / "binary.jsonl").write_bytes(b"\x00\xff" * 100)
    (inputs / "notes.json").write_text('{"not": "a log"}')
    sink = WarningSink()
    left = Leftovers()
    items = discover([str(inputs), f"{inputs}/*.jsonl", f"{inputs}/*.json"], sink, leftovers=left)
    assert _keys(items) == EXPECTED
    assert left.not_logs == [inputs / "binary.jsonl", inputs / "notes.json"]
    assert [(w.path, w.line) for w in sink.warnings] == [
        (str(inputs / "binary.jsonl"), 0),
        (str(inputs / "notes.json"), 0),
    ]
    binary, notes = (str(w) for w in sink.warnings)
    assert binary.startswith(f"{inputs / 'binary.jsonl'}: found by a scan, but unknown log format")
    assert notes.startswith(f"{inputs / 'notes.json'}: matched by a pattern, but unknown log")
    assert binary.endswith("; skipped")
    assert notes.endswith("; skipped")
    assert ":0" not in binary + notes
    assert "--agent" not in binary + notes


def test_an_empty_named_directory_is_noted(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    sink = WarningSink()
    left = Leftovers()
    assert discover([str(tmp_path / "nothing")], sink, leftovers=left) == []
    assert left.empty == [(str(tmp_path / "nothing"), "no sessions found in this directory")]
    # The command says it (a warning, or the usage error when nothing else is found).
    assert sink.warnings == []


def test_a_session_without_messages_does_not_load(tmp_path: Path) -> None:
    header = tmp_path / "header-only.jsonl"
    header.write_text(
        '{"type":"session","version":3,"id":"bad-pi","timestamp":"2026-01-01T00:00:00Z",'
        '"cwd":"/w"}\n'
    )
    [item] = discover([str(header)], WarningSink())
    assert (item.key, item.agent, item.error) == ("bad-pi", "pi", None)
    with pytest.raises(SourceError, match="no messages could be read"):
        item.load(WarningSink())


def test_a_truncated_legacy_gemini_session_does_not_load(tmp_path: Path) -> None:
    cut = tmp_path / GEMINI_LEGACY.name
    cut.write_bytes(GEMINI_LEGACY.read_bytes()[:300])
    [item] = discover([str(cut)], WarningSink())
    assert (item.key, item.agent) == ("gem-resume", "gemini")
    with pytest.raises(SourceError) as caught:
        item.load(WarningSink())
    assert caught.value.reason.startswith("no messages could be read (")
    assert "invalid JSON" in caught.value.reason
    # The whole file still loads.
    [whole] = discover([str(GEMINI_LEGACY)], WarningSink())
    assert len(whole.load(WarningSink()).messages()) == 2


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_since_keeps_the_sessions_active_after_it(inputs: Path, tmp_path: Path) -> None:
    # The logs say: pi last active 2026-01-05, Claude 2026-01-31, Codex 2026-11-21.
    for path in inputs.iterdir():
        os.utime(path, (0, 0))  # their files untouched since 1970
    scanned = discover([str(inputs)], WarningSink(), since=_at("2026-01-20"))
    assert _keys(scanned) == [("claude-code", "test-session-001"), ("codex", THREAD)]
    named = [str(p) for p in sorted(inputs.iterdir())]
    assert _keys(discover(named, WarningSink(), since=_at("2026-01-20"))) == _keys(scanned)
    # A file written since counts, whatever its log says; a missing input still fails.
    touched = _at("2026-12-01").timestamp()
    os.utime(inputs / "tree-v3.jsonl", (touched, touched))
    gone = str(tmp_path / "gone.jsonl")
    items = discover([str(inputs), gone], WarningSink(), since=_at("2026-11-30"))
    assert _keys(items) == [("pi", "sess-tree-0001"), ("unknown", "gone")]
    assert discover([str(inputs)], WarningSink(), since=_at("2027-01-01")) == []
