"""Whole-file replacement and the clean-up after killed writers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from opencode_restore.atomic import atomic_write, remove_stale_temporaries, write_output


def test_replaces_whole_files_with_bytes_or_chunks(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "t.json"
    atomic_write(target, b"old")
    atomic_write(target, iter([b"new ", b"content"]), mode=0o600)
    assert target.read_bytes() == b"new content"
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in target.parent.iterdir()] == ["t.json"]


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "x.jsonl"
    target.write_bytes(b"kept\n")

    def boom() -> Iterator[bytes]:
        yield b"ok\n"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom())
    assert target.read_bytes() == b"kept\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.jsonl"]


def test_stale_temporaries_of_dead_writers_go(tmp_path: Path) -> None:
    dead = tmp_path / ".a.md.999999999.tmp"
    live = tmp_path / f".b.md.{os.getppid()}.tmp"
    junk = tmp_path / ".c.md.notapid.tmp"
    other = tmp_path / "d.md"
    for p in (dead, live, junk, other):
        p.write_text("half")
    assert remove_stale_temporaries(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "d.md"]


def test_an_output_longer_than_a_chunk_is_written_as_one_encoding(tmp_path: Path) -> None:
    text = ("é€😀 line\n" * 300_000)[:2_500_001]  # three 1M-character chunks, non-ASCII
    out = tmp_path / "out.json"
    write_output(out, text)
    assert out.read_bytes() == text.encode("utf-8")
    write_output(out, "")
    assert out.read_bytes() == b""
