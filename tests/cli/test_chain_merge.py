"""``LOG...`` of different sessions: one error line naming both, unless ``--merge``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", ["messages", "turns", "restore", "report", "tree"])
def test_two_sessions_need_merge(command: str, fixtures: Path, tmp_path: Path) -> None:
    short = str(fixtures / "claude-code" / "spotter" / "short.jsonl")
    heavy = str(fixtures / "claude-code" / "spotter" / "tool_heavy.jsonl")
    extra = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    code, out, err = _run(command, short, heavy, *extra)
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith(f"error: {heavy}: holds session d6e0bada-")
    assert f"but {short} holds session 55604662-" in line
    code, out, err = _run(command, "--merge", short, heavy, *extra)
    assert code == 0, err


def test_a_continued_session_needs_no_merge(fixtures: Path) -> None:
    scout = fixtures / "claude-code" / "scout"
    code, out, err = _run(
        "turns", str(scout / "slug_session_1.jsonl"), str(scout / "slug_session_2.jsonl")
    )
    assert code == 0, err
    assert "## Turn 1" in out
