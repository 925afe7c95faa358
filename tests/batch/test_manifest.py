"""The manifest: fsynced lines, the last line of a key wins, torn lines are survived."""

from __future__ import annotations

import json
from pathlib import Path

from opencode_restore.batch.manifest import Manifest
from opencode_restore.diagnostics import WarningSink


def _line(
    key: str, status: str = "done", h: str = "h1", provider: str = "p:m"
) -> dict[str, object]:
    return {"key": key, "status": status, "hash": h, "provider": provider}


def test_lines_are_appended_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "out" / "manifest.jsonl"
    m = Manifest(path)
    m.append(_line("a", "failed"))
    m.append(_line("b"))
    m.append(_line("a"))
    m.close()
    assert [json.loads(x)["key"] for x in path.read_text().splitlines()] == ["a", "b", "a"]
    again = Manifest(path)
    assert again.is_done("a", "h1", "p:m")
    assert again.is_done("b", "h1", "p:m")


def test_done_needs_same_hash_and_provider(tmp_path: Path) -> None:
    m = Manifest(tmp_path / "m.jsonl")
    m.append(_line("a"))
    m.append(_line("c", "incomplete"))
    assert not m.is_done("a", "h2", "p:m")
    assert not m.is_done("a", "h1", "other:model")
    assert not m.is_done("b", "h1", "p:m")
    assert not m.is_done("c", "h1", "p:m")
    m.close()


def test_a_torn_last_line_is_ignored_and_not_glued_to_the_next(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(json.dumps(_line("a")).encode() + b'\n{"key": "b", "sta')
    sink = WarningSink()
    m = Manifest(path, sink)
    assert [w.line for w in sink.warnings] == [2]
    assert set(m.latest) == {"a"}
    m.append(_line("b"))
    m.close()
    sink = WarningSink()
    reread = Manifest(path, sink)
    assert set(reread.latest) == {"a", "b"}
    assert len(sink.warnings) == 1  # the torn fragment, still on its own line


def test_lines_without_a_key_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('[1]\n\n{"status": "done"}\n')
    sink = WarningSink()
    assert Manifest(path, sink).latest == {}
    assert [w.line for w in sink.warnings] == [1, 3]
