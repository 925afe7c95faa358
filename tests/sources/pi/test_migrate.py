"""Phase 2 (migration) and branch extraction: the files ``migrate`` and ``export-branch`` write."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from opencode_restore.atomic import backup_path
from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError, UsageError
from opencode_restore.sources import open_session
from opencode_restore.sources.pi import tree as pi_tree
from opencode_restore.sources.pi.migrate import (
    default_migrated_path,
    export_pi_branch,
    migrate_file,
)
from opencode_restore.tree import select_branch, tree_of
from opencode_restore.tree.export import export_branch

PI = Path("pi")


def _copy(fixtures: Path, rel: str, tmp: Path) -> Path:
    dest = tmp / Path(rel).name
    shutil.copyfile(fixtures / PI / rel, dest)
    return dest


def _lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_v1_migrates_to_v3_with_ids_parents_and_first_kept_id(
    fixtures: Path, tmp_path: Path
) -> None:
    src = _copy(fixtures, "own/small-v1.jsonl", tmp_path)
    original = src.read_bytes()
    sink = WarningSink()
    result = migrate_file(src, sink=sink)
    assert (result.from_version, result.to_version, result.entries) == (1, 3, 5)
    assert result.written == default_migrated_path(src) == tmp_path / "small-v1.v3.jsonl"
    assert src.read_bytes() == original  # the source is never touched without --in-place
    assert [w.line for w in sink.warnings] == [4]  # the invalid line is reported, then dropped
    header, *entries = _lines(result.written)
    assert header["version"] == 3
    assert header["id"] == "sess-v1-0001"
    assert [e["id"] for e in entries] == [
        "00000001",
        "00000002",
        "00000003",
        "00000004",
        "00000005",
    ]
    assert [e["parentId"] for e in entries] == [
        None,
        "00000001",
        "00000002",
        "00000003",
        "00000004",
    ]
    comp = entries[3]
    assert comp["type"] == "compaction"
    assert "firstKeptEntryIndex" not in comp
    assert comp["firstKeptEntryId"] == "00000003"  # index 3 counts the header
    assert entries[2]["message"]["content"] == "three"


def test_migration_is_idempotent_and_reads_the_same(fixtures: Path, tmp_path: Path) -> None:
    src = _copy(fixtures, "pi-mono/before-compaction.jsonl", tmp_path)
    first = migrate_file(src)
    assert first.written is not None
    migrated = first.written.read_bytes()
    again = migrate_file(first.written)
    assert again.written is None
    assert again.from_version == 3
    assert first.written.read_bytes() == migrated
    # same message ids, roles and texts as the in-memory migration of the original
    before = open_session([src], WarningSink()).messages()
    after = open_session([first.written], WarningSink()).messages()
    assert [(m.id, m.role, m.text) for m in before] == [(m.id, m.role, m.text) for m in after]
    # a re-parse + migrate of the written file changes nothing
    pi = pi_tree.parse_file(first.written, WarningSink())
    assert pi.version == 3
    assert not pi_tree.migrate(pi)


def test_v2_hook_message_becomes_custom(fixtures: Path, tmp_path: Path) -> None:
    src = _copy(fixtures, "own/hook-v2.jsonl", tmp_path)
    result = migrate_file(src, tmp_path / "out.jsonl")
    assert result.written == tmp_path / "out.jsonl"
    assert result.from_version == 2
    roles = [e["message"]["role"] for e in _lines(result.written)[1:] if e["type"] == "message"]
    assert "custom" in roles
    assert "hookMessage" not in roles
    assert "hookMessage" in src.read_text()


def test_in_place_keeps_a_backup_and_never_overwrites_one(fixtures: Path, tmp_path: Path) -> None:
    src = _copy(fixtures, "own/small-v1.jsonl", tmp_path)
    original = src.read_bytes()
    src.with_name(src.name + ".bak").write_text("an older backup")
    result = migrate_file(src, in_place=True)
    assert result.written == src
    assert result.backup == tmp_path / "small-v1.jsonl.bak.1"
    assert result.backup.read_bytes() == original
    assert (tmp_path / "small-v1.jsonl.bak").read_text() == "an older backup"
    assert _lines(src)[0]["version"] == 3
    assert migrate_file(src, in_place=True).written is None  # idempotent: no second backup
    assert backup_path(src) == tmp_path / "small-v1.jsonl.bak.2"
    assert not list(tmp_path.glob(".*.tmp"))  # the temp file was renamed away


def test_migrate_refuses_clobbering_and_non_pi_files(fixtures: Path, tmp_path: Path) -> None:
    src = _copy(fixtures, "own/small-v1.jsonl", tmp_path)
    out = tmp_path / "out.jsonl"
    out.write_text("keep me")
    with pytest.raises(UsageError, match="exists; pass --force"):
        migrate_file(src, out)
    assert out.read_text() == "keep me"
    assert migrate_file(src, out, force=True).written == out
    with pytest.raises(UsageError, match="not both"):
        migrate_file(src, out, in_place=True)
    headless = tmp_path / "headless.jsonl"
    headless.write_text('{"type":"message","message":{"role":"user","content":"x"}}\n')
    with pytest.raises(SourceError, match="no session header"):
        migrate_file(headless)


# -- createBranchedSession ---------------------------------------------------------------


def test_export_pi_branch_writes_the_path_and_fresh_labels(fixtures: Path, tmp_path: Path) -> None:
    src = fixtures / PI / "own" / "tree-v3.jsonl"
    dest = tmp_path / "branch.jsonl"
    result = export_pi_branch(src, "b2000002", dest)
    header, *entries = _lines(dest)
    assert header["type"] == "session"
    assert header["version"] == 3
    assert header["parentSession"] == str(src)
    assert header["id"] == result.session_id
    assert header["cwd"] == "/work/demo"
    ids = [e["id"] for e in entries]
    assert ids[:-1] == ["a1000001", "a1000002", "a1000003", "a1000004", "b2000001", "b2000002"]
    label = entries[-1]
    assert label["type"] == "label"
    assert label["targetId"] == "b2000001"
    assert label["label"] == "approach-a"
    assert label["parentId"] == "b2000002"
    assert (result.entries, result.labels) == (7, 1)
    tree = tree_of(open_session([dest], WarningSink()))
    assert tree.branch_points() == []
    assert tree.labels == {"b2000001": "approach-a"}
    with pytest.raises(UsageError, match="no entry with id 'zzz'"):
        export_pi_branch(src, "zzz", tmp_path / "x.jsonl")


def test_export_through_a_dropped_label_keeps_the_chain(fixtures: Path, tmp_path: Path) -> None:
    # c3000007's parent is the label entry c3000006, which the export drops.
    src = fixtures / PI / "own" / "tree-v3.jsonl"
    dest = tmp_path / "branch.jsonl"
    export_pi_branch(src, "c300000f", dest)
    _, *entries = _lines(dest)
    kept = [e for e in entries if e["type"] != "label"]
    assert "c3000006" not in {e["id"] for e in entries}
    assert [e["parentId"] for e in kept[1:]] == [e["id"] for e in kept[:-1]]
    assert kept[0]["parentId"] is None
    original = open_session([src], WarningSink())
    branch = select_branch(original, leaf="c300000f")
    exported = open_session([dest], WarningSink())
    texts = [m.text for m in exported.messages()]
    assert texts == [m.text for m in branch.messages()]
    assert len(texts) == 15  # before the fix: 4 (the chain broke at the label)


def test_export_branch_of_a_v1_file_uses_migrated_ids(fixtures: Path, tmp_path: Path) -> None:
    src = fixtures / PI / "own" / "small-v1.jsonl"
    n = export_branch(src, "pi", "00000003", tmp_path / "b.jsonl")
    assert n == 3
    assert [e.get("id") for e in _lines(tmp_path / "b.jsonl")[1:]] == [
        "00000001",
        "00000002",
        "00000003",
    ]


def test_export_claude_branch_drops_the_other_branch(fixtures: Path, tmp_path: Path) -> None:
    src = fixtures / "claude-code" / "claude-code-log" / "dag_compact_after_rewind.jsonl"
    dest = tmp_path / "rewind.jsonl"
    kept = export_branch(src, "claude-code", "b1a", dest)
    uuids = [e.get("uuid") for e in _lines(dest)]
    assert kept == len(uuids)
    assert {"u1", "a1", "b1u", "b1a"} <= set(uuids)
    assert not {"b2u", "b2a", "p1a"} & set(uuids)
    session = open_session([dest], WarningSink())
    assert [m.id for m in session.messages()] == ["u1", "a1", "b1u", "b1a"]


def test_export_branch_guards(fixtures: Path, tmp_path: Path) -> None:
    src = fixtures / PI / "own" / "tree-v3.jsonl"
    taken = tmp_path / "taken.jsonl"
    taken.write_text("x")
    with pytest.raises(UsageError, match="exists"):
        export_branch(src, "pi", "b2000002", taken)
    with pytest.raises(UsageError, match="must not be the session file"):
        export_branch(taken, "pi", "b2000002", taken, force=True)
    with pytest.raises(UsageError, match="writes pi and claude-code sessions, not codex"):
        export_branch(src, "codex", "x", tmp_path / "n.jsonl")
    claude = fixtures / "claude-code" / "claude-code-log" / "dag_compact_after_rewind.jsonl"
    with pytest.raises(UsageError, match="no entry or message with id 'zzz'"):
        export_branch(claude, "claude-code", "zzz", tmp_path / "n.jsonl")


def test_written_sessions_are_readable_by_their_owner_only(fixtures: Path, tmp_path: Path) -> None:
    dest = tmp_path / "branch.jsonl"
    export_pi_branch(fixtures / PI / "own" / "tree-v3.jsonl", "c300000f", dest)
    assert oct(dest.stat().st_mode & 0o777) == "0o600"
