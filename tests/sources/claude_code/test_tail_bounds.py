"""A store tail read is bounded like a full read (issue 31): a line over the line cap is
reported and skipped, and a line nested past the readers' depth is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.base import Checkpoint
from opencode_restore.sources.claude_code.tail import read_tail
from tests.security.hostile_corpus import _claude_line


def test_a_tail_skips_long_and_deep_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCODE_RESTORE_MAX_LINE_BYTES", "5000")
    first = _claude_line("u1", None, "user", "first", 1) + "\n"
    deep = '{"a": ' * 200 + "1" + "}" * 200
    lines = [
        _claude_line("a1", "u1", "assistant", "y" * 6000, 2),
        _claude_line("u2", "u1", "user", "@@", 3).replace('"@@"', deep),
        _claude_line("u3", "u1", "user", "after", 4),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text(first + "\n".join(lines) + "\n")
    sink = WarningSink()
    messages = read_tail([path], [Checkpoint(len(first), 1)], sink)
    assert messages is not None
    assert [m.text for m in messages] == ["after"]
    warned = [(w.line, w.message) for w in sink.warnings]
    assert (2, "line of 6220 bytes, over the 5000-byte limit; skipped") in warned
    assert any(line == 3 and "invalid JSON" in message for line, message in warned)
