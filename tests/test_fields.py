"""Counts printed to people: a noun in its number ("1 session", not "1 sessions")."""

from __future__ import annotations

from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.fields import counted


def test_a_count_takes_the_noun_in_its_number() -> None:
    assert counted(0, "session") == "0 sessions"
    assert counted(1, "session") == "1 session"
    assert counted(2, "evidence item") == "2 evidence items"
    assert counted(1, "new transcript file") == "1 new transcript file"
    assert counted(3, "child", "children") == "3 children"


def test_a_one_turn_restore_says_one_turn(tmp_path: object) -> None:
    log = CliRunner()
    result = log.invoke(cli, ["restore", "--demo", "--max-turns", "1"])
    assert result.exit_code == 0, result.output
    assert "1 turn," in result.stderr
    assert "1 turns" not in result.output + result.stderr
