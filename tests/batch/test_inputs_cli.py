"""``batch`` as a user runs it on broken inputs and on one folder named two ways (offline)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli

from .helpers import read_manifest

FIX = Path(__file__).resolve().parents[2] / "fixtures"
TREE_V3 = FIX / "pi" / "own" / "tree-v3.jsonl"
[ROLLOUT] = (FIX / "codex" / "recorded" / "exec-resume").glob("rollout-*.jsonl")
THREAD = "01a1fde9-539c-77f2-9e0a-d405fab49546"


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def _batch(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["batch", "-m", "offline", *args])
    return result.exit_code, result.stdout, result.stderr


def test_named_broken_inputs_fail_the_batch(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(bytes(range(256)) * 4)
    out = tmp_path / "out"
    args = [str(broken), str(TREE_V3), str(empty), str(tmp_path / "nonexist.jsonl")]
    code, stdout, stderr = _batch(*args, "--out", str(out))
    assert code == 1
    rows = {r["key"]: r for r in read_manifest(out / "manifest.jsonl")}
    assert {k: r["status"] for k, r in rows.items()} == {
        "broken": "failed",
        "sess-tree-0001": "done",
        "empty": "failed",
        "nonexist": "failed",
    }
    assert "file is empty" in rows["empty"]["error"]
    assert "no such file or directory" in rows["nonexist"]["error"]
    assert "unknown log format" in rows["broken"]["error"]
    assert rows["broken"]["agent"] == "unknown"
    assert rows["broken"]["outputs"] == []
    # The final table lists each of them; nothing claims a line 0.
    for key in ("broken", "empty", "nonexist"):
        assert key in stdout
    assert ":0" not in stderr


def test_a_scanned_non_log_is_only_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(TREE_V3, folder / "tree-v3.jsonl")
    (folder / "binary.jsonl").write_bytes(b"\x00\xff" * 50)
    code, _, stderr = _batch(str(folder), "--out", str(tmp_path / "out"))
    assert code == 0
    assert f"warning: {folder / 'binary.jsonl'}: found by a scan, but unknown log format" in stderr
    assert [r["key"] for r in read_manifest(tmp_path / "out" / "manifest.jsonl")] == [
        "sess-tree-0001"
    ]


def test_a_folder_then_its_glob_restores_nothing_twice(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(TREE_V3, folder / "tree-v3.jsonl")
    shutil.copy(ROLLOUT, folder / ROLLOUT.name)
    out = tmp_path / "out"
    code, _, _ = _batch(str(folder), f"{folder}/*.jsonl", "--out", str(out), "-q")
    assert code == 0
    first = read_manifest(out / "manifest.jsonl")
    assert sorted(r["key"] for r in first) == sorted(["sess-tree-0001", THREAD])
    code, _, _ = _batch(f"{folder}/*.jsonl", "--out", str(out))
    assert code == 0
    assert len(read_manifest(out / "manifest.jsonl")) == 2  # both skipped as done
    assert sorted(p.name for p in out.glob("*.md")) == sorted(["sess-tree-0001.md", f"{THREAD}.md"])


def test_a_manifest_keyed_by_file_stems_costs_one_rerun_from_the_saved_timeline(
    tmp_path: Path,
) -> None:
    # Before session ids were keys, a named file was keyed by its stem. Its line does
    # not match the new key: the first run restores it again under the session id,
    # continuing the saved journal (named by the session id all along), so
    # no turn is summarized twice; later runs skip it.
    out = tmp_path / "out"
    code, _, _ = _batch(str(TREE_V3), "--out", str(out), "-q")
    assert code == 0
    [line] = read_manifest(out / "manifest.jsonl")
    assert (line["key"], line["turns_reused"]) == ("sess-tree-0001", 0)
    assert line["usage"]["offline_answers"] > 0
    old = {**line, "key": "tree-v3", "session": "tree-v3", "hash": "0" * 64}
    (out / "manifest.jsonl").write_text(json.dumps(old) + "\n")
    code, _, _ = _batch(str(TREE_V3), "--out", str(out), "-q")
    assert code == 0
    rerun = read_manifest(out / "manifest.jsonl")[-1]
    assert (rerun["key"], rerun["status"]) == ("sess-tree-0001", "done")
    assert rerun["usage"]["offline_answers"] == 0
    assert rerun["turns_reused"] > 0
    code, _, _ = _batch(str(TREE_V3), "--out", str(out), "-q")
    assert len(read_manifest(out / "manifest.jsonl")) == 2  # skipped from now on


def test_nightly_reports_non_logs_and_fails_an_empty_restore(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chats = root / ".gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    legacy = FIX / "gemini" / "own" / "session-2026-02-04T07-00-gemresum.json"
    (chats / legacy.name).write_bytes(legacy.read_bytes()[:300])  # truncated mid-write
    projects = root / ".claude" / "projects" / "-p"
    projects.mkdir(parents=True)
    (projects / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["nightly", "-m", "offline", "--root", str(root), "--out", str(out)]
    )
    assert result.exit_code == 1
    warned = [line for line in result.stderr.splitlines() if "binary.jsonl" in line]
    assert warned == [
        f"warning: {projects / 'binary.jsonl'}: found by a scan, but unknown log format "
        "(tried claude-code, codex, gemini, pi, opencode, inspect, terminal); skipped"
    ]
    [row] = [r for day in out.iterdir() for r in read_manifest(day / "manifest.jsonl")]
    assert (row["key"], row["status"], row["outputs"]) == ("gem-resume", "failed", [])
    assert "no messages could be read" in row["error"]


def test_since_restores_only_the_sessions_active_after_it(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(TREE_V3, folder / "tree-v3.jsonl")  # last active 2026-01-05
    shutil.copy(ROLLOUT, folder / ROLLOUT.name)  # last active 2026-11-21
    for path in folder.iterdir():
        os.utime(path, (0, 0))
    out = tmp_path / "out"
    code, _, _ = _batch(str(folder), "--out", str(out), "--since", "2026-06-01T00:00:00Z")
    assert code == 0
    assert [line["key"] for line in read_manifest(out / "manifest.jsonl")] == [THREAD]
    code, _, stderr = _batch(str(folder), "--out", str(out), "--since", "2027-01-01")
    assert code == 0
    assert "nothing to restore: no session was active after 2027-01-01 00:00:00 UTC" in stderr
    code, _, stderr = _batch(str(folder), "--out", str(out), "--since", "soon")
    assert code == 2
    assert "Invalid value for '--since': 'soon': expected an ISO 8601 time" in stderr


def test_captures_of_one_name_in_three_folders_are_three_sessions(tmp_path: Path) -> None:
    # Three agents' `script` captures, all named tui.typescript: named by the file, they
    # were one "session" of three files, and each restore replaced the others' journal.
    captures = FIX / "terminal" / "real"
    out = tmp_path / "out"
    code, _, _ = _batch(f"{captures}/*/tui.typescript", "--out", str(out))
    assert code == 0
    rows = read_manifest(out / "manifest.jsonl")
    assert sorted(r["source_files"][0] for r in rows) == [
        str(p) for p in sorted(captures.glob("*/tui.typescript"))
    ]
    assert [len(r["source_files"]) for r in rows] == [1, 1, 1]
    assert len({r["session"] for r in rows}) == 3
    assert all(r["session"].startswith("tui-") for r in rows)
    assert len(list((tmp_path / "data" / "timelines").glob("*.json"))) == 3
