"""Finding the sessions of a batch: files, globs, directories, containers, keys and hashes."""

from __future__ import annotations

import shutil
from pathlib import Path

from opencode_restore.batch.discover import Leftovers, discover
from opencode_restore.batch.items import BatchItem, FileHasher, finalize, safe_name
from opencode_restore.diagnostics import WarningSink

from .helpers import make_sessions, session_id

FIX = Path(__file__).resolve().parents[2] / "fixtures"
CLAUDE = (
    FIX / "claude-code" / "recorded" / "tui-compact" / "e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"
)
CODEX = FIX / "codex" / "recorded" / "exec-resume"
OPENCODE = FIX / "opencode" / "recorded" / "tui-compact"
INSPECT_TWO = FIX / "inspect" / "made" / "two_samples_truncated.json"


def test_a_file_is_one_session_named_by_its_session_id(sink: WarningSink) -> None:
    [item] = discover([str(CLAUDE)], sink)
    assert (item.agent, item.session_id, item.key) == ("claude-code", CLAUDE.stem, CLAUDE.stem)
    assert item.files == [CLAUDE]
    assert len(item.content_hash) == 64


def test_a_directory_is_scanned_like_sessions_scan(tmp_path: Path, sink: WarningSink) -> None:
    shutil.copytree(CODEX, tmp_path / "codex")
    shutil.copy(CLAUDE, tmp_path / "a.jsonl")
    # A Claude Code sub-agent transcript belongs to its parent and is not a session.
    (tmp_path / "a" / "subagents").mkdir(parents=True)
    shutil.copy(CLAUDE, tmp_path / "a" / "subagents" / "agent-x.jsonl")
    (tmp_path / "notes.json").write_text('{"not": "a log"}')
    left = Leftovers()
    items = discover([str(tmp_path)], sink, leftovers=left)
    assert sorted(i.agent for i in items) == ["claude-code", "codex"]
    codex = next(i for i in items if i.agent == "codex")
    assert codex.session_id == "01a1fde9-539c-77f2-9e0a-d405fab49546"
    # Unrecognized files in a directory are skipped quietly, but counted.
    assert sink.warnings == []
    assert left.not_logs == [tmp_path / "notes.json"]
    assert left.empty == []


def test_opencode_database_and_export_of_one_install_are_one_session(sink: WarningSink) -> None:
    items = discover([str(OPENCODE / "opencode.db"), str(OPENCODE / "export.json")], sink)
    assert [(i.agent, i.session_id, i.selector) for i in items] == [
        ("opencode", "ses_e021ac976ffeprCgfn115CWSLu", "ses_e021ac976ffeprCgfn115CWSLu")
    ]
    # A database holds other sessions too: its hash input is the session's update time.
    assert items[0].fingerprint.startswith("2026-")


def test_glob_expands_recursively_and_a_miss_holds_nothing_to_restore(tmp_path: Path) -> None:
    make_sessions(tmp_path / "x" / "y", 3)
    (tmp_path / "notes.json").write_text('{"not": "a log"}')
    sink = WarningSink()
    left = Leftovers()
    args = [f"{tmp_path}/**/*.json", f"{tmp_path}/nothing*.jsonl", f"{tmp_path}/notes*.json"]
    items = discover([*args, str(tmp_path / "gone")], sink, leftovers=left)
    assert [i.session_id for i in items[:3]] == [session_id(k) for k in range(3)]
    assert all(i.error is None for i in items[:3])
    # A file named outright fails; a pattern matching nothing is an empty folder's like.
    assert [(i.key, i.agent, i.error) for i in items[3:]] == [
        ("gone", "unknown", f"{tmp_path / 'gone'}: no such file or directory")
    ]
    assert left.empty == [
        (args[1], "the pattern matches nothing"),
        (args[2], "the pattern matches no session"),
    ]
    # Found by two patterns, the file that is no log is warned about and counted once.
    assert left.not_logs == [tmp_path / "notes.json"]
    assert [w.path for w in sink.warnings] == [str(tmp_path / "notes.json")]


def test_an_eval_log_gives_one_item_per_sample(sink: WarningSink) -> None:
    items = discover([str(INSPECT_TWO)], sink)
    assert [i.agent for i in items] == ["inspect"] * len(items)
    assert len(items) >= 1
    assert all(i.selector == i.session_id for i in items)
    session = items[0].load(WarningSink())
    assert session.id == items[0].selector


def test_eval_logs_that_reuse_sample_ids_stay_apart(tmp_path: Path, sink: WarningSink) -> None:
    # Inspect's ids name a sample within its log only (the reader says so): two runs of
    # one eval are two sessions per sample, never one chain of both files.
    first, second = tmp_path / "run1.json", tmp_path / "run2.json"
    shutil.copyfile(INSPECT_TWO, first)
    shutil.copyfile(INSPECT_TWO, second)
    one = discover([str(INSPECT_TWO)], WarningSink())
    items = discover([str(first), str(second)], sink)
    assert len(items) == 2 * len(one)
    assert all(len(i.files) == 1 for i in items)
    assert {i.files[0].name for i in items} == {"run1.json", "run2.json"}


def test_an_opencode_session_found_twice_is_one_item(tmp_path: Path, sink: WarningSink) -> None:
    # opencode's ids span inputs: the same export found under two names is one session.
    [export] = sorted(OPENCODE.glob("export*.json"))
    shutil.copyfile(export, tmp_path / "a.json")
    shutil.copyfile(export, tmp_path / "b.json")
    items = discover([str(tmp_path / "a.json"), str(tmp_path / "b.json")], sink)
    assert len(items) == 1


def test_an_unreadable_explicit_file_is_a_failed_item(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"what": 1}')
    sink = WarningSink()
    [item] = discover([str(bad)], sink)
    assert (item.key, item.agent, item.content_hash) == ("x", "unknown", "")
    assert item.error is not None
    assert item.error.startswith(f"{bad}: unknown log format")
    assert sink.warnings == []


def test_same_id_from_two_sources_gets_two_keys(tmp_path: Path, sink: WarningSink) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    make_sessions(first, 1)
    make_sessions(second, 1)
    items = finalize(
        [
            BatchItem(session_id(0), "opencode", [first / f"{session_id(0)}.json"], selector="s"),
            BatchItem(session_id(0), "claude-code", [second / f"{session_id(0)}.json"]),
        ]
    )
    assert items[0].key == session_id(0)
    assert items[1].key.startswith(session_id(0) + "-")
    assert len(items[1].key) == len(session_id(0)) + 9


def test_the_hash_follows_the_content(tmp_path: Path) -> None:
    [path] = make_sessions(tmp_path, 1)
    before = discover([str(path)], WarningSink())[0].content_hash
    assert discover([str(path)], WarningSink())[0].content_hash == before
    path.write_text(path.read_text() + "\n")
    assert discover([str(path)], WarningSink())[0].content_hash != before


def test_a_storage_directory_hashes_names_sizes_and_times(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    hasher = FileHasher()
    first = hasher.file(tmp_path / "d")
    assert hasher.file(tmp_path / "d") == first  # cached per run
    (tmp_path / "d" / "g").write_text("y")
    assert FileHasher().file(tmp_path / "d") != first


def test_an_item_that_cannot_be_read_carries_its_error(tmp_path: Path) -> None:
    [item] = finalize([BatchItem("s", "claude-code", [tmp_path / "missing.jsonl"])])
    assert item.error is not None
    assert "missing.jsonl: cannot read" in item.error
    assert item.content_hash == ""


def test_safe_names() -> None:
    assert safe_name("ses_1/../../etc") == "ses_1_.._.._etc"
    assert safe_name("..") == "session"
    assert safe_name("a b:c") == "a_b_c"
    assert len(safe_name("x" * 500)) == 120


def test_a_directory_with_an_opencode_install_and_its_export(
    tmp_path: Path, sink: WarningSink
) -> None:
    shutil.copytree(OPENCODE, tmp_path / "oc")
    [item] = discover([str(tmp_path)], sink)
    assert (item.agent, item.selector) == ("opencode", "ses_e021ac976ffeprCgfn115CWSLu")
    assert item.files == [tmp_path / "oc" / "opencode.db"]
    assert item.fingerprint  # the database's session time, not the file's bytes
    assert item.load(WarningSink()).id == item.selector


def test_resumed_rollouts_of_one_thread_join_one_chain(tmp_path: Path, sink: WarningSink) -> None:
    [rollout] = CODEX.glob("*.jsonl")
    shutil.copy(rollout, tmp_path / rollout.name)
    later = rollout.name.replace("T11-41-29", "T12-00-00")
    shutil.copy(rollout, tmp_path / later)
    [item] = discover([str(tmp_path)], sink)
    assert [p.name for p in item.files] == [rollout.name, later]
