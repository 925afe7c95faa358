"""Commands by session id or ``--latest``; ``sessions list`` with titles and filters."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from tests.store.builders import fake_home

CLAUDE_ID = "e57fea98-e10e-4cce-a470-5de2e7413154"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> dict[str, list[Path]]:
    h = tmp_path / "home"
    made = fake_home(h)
    monkeypatch.setenv("HOME", str(h))
    for k, paths in enumerate(made.values()):
        for p in paths:
            os.utime(p, (1_800_000_000 + k, 1_800_000_000 + k))
    return made


def test_restore_by_id_prefix_equals_restore_by_path(home: dict[str, list[Path]]) -> None:
    runner = CliRunner()
    by_path = runner.invoke(cli, ["restore", "-q", "--fresh", str(home["claude-code"][0])])
    by_id = runner.invoke(cli, ["restore", "-q", "--fresh", "e57fea"])
    assert by_id.exit_code == 0, by_id.output
    assert by_id.output == by_path.output
    assert f"session `{CLAUDE_ID}`" in by_id.output


@pytest.mark.parametrize("command", ["messages", "turns", "report", "tree"])
def test_other_commands_take_an_id(command: str, home: dict[str, list[Path]]) -> None:
    result = CliRunner().invoke(cli, [command, "sess-tree"])
    assert result.exit_code == 0, result.output
    assert "--shout" in result.output


def test_ambiguity_is_an_error_listing_candidates(home: dict[str, list[Path]]) -> None:
    result = CliRunner().invoke(cli, ["restore", "01a1fde"])
    assert result.exit_code == 2
    assert "matches 2 sessions" in result.output
    assert "01a1fde6-b303-7f63-b067-d32dfaddcad9  codex  /home/dev/src/greet-cli" in result.output


def test_latest_in_a_directory_and_by_agent(
    home: dict[str, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["messages", "--latest", "--cwd", "/work/demo"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[0])["id"] == "a1000001"  # the pi session
    result = runner.invoke(cli, ["tree", "--latest", "--cwd", "/work/demo"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("a1000001 ")
    result = runner.invoke(cli, ["turns", "--latest", "--agent", "codex", "--format", "json"])
    assert result.exit_code == 0, result.output
    monkeypatch.chdir(tmp_path)  # a folder with no sessions: any folder counts
    result = runner.invoke(cli, ["restore", "-q", "--latest"])
    assert result.exit_code == 0, result.output
    # The newest last entry (11:41:32), not the file touched last by the fixture (pi).
    assert "agent **codex**" in result.output


def test_bad_combinations_are_usage_errors(home: dict[str, list[Path]]) -> None:
    runner = CliRunner()
    for args, reason in (
        (["restore"], "give a log file, a session id"),
        (["restore", "--latest", "sess-tree"], "not both"),
        (["restore", "sess-tree", "--cwd", "/tmp"], "--cwd narrows --latest"),
        (["restore", "nope"], "nope: no such file, and no session id starts with it"),
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, args
        assert reason in result.output, (args, result.output)
    # Something that looks like a path keeps the file error.
    result = runner.invoke(cli, ["restore", "missing/x.jsonl"])
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_a_session_inside_opencodes_database_is_read_by_id(home: dict[str, list[Path]]) -> None:
    runner = CliRunner()
    by_id = runner.invoke(cli, ["turns", "ses_e021", "--format", "json"])
    assert by_id.exit_code == 0, by_id.output
    by_path = runner.invoke(
        cli,
        ["turns", str(home["opencode"][0]), "--session", "ses_e021", "--format", "json"],
    )
    assert by_id.output == by_path.output
    assert "--shout" in by_id.output


def test_sessions_list_titles_cwd_limit_json(home: dict[str, list[Path]]) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["sessions", "list", "--cwd", "/home/dev/src/greet-cli"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["updated", "agent", "id", "cwd", "title"]
    # The header's columns start where the rows' do.
    assert lines[0].index("agent") == lines[1].index("codex")
    assert lines[0].index(" id ") + 1 == lines[1].index("01a1fde")
    assert lines[-1] == "5 of 5 sessions"
    assert any(
        "codex" in x
        and x.endswith(
            "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a te…"
        )
        for x in lines
    )
    result = runner.invoke(
        cli, ["sessions", "list", "--agent", "pi", "--limit", "1", "--format", "json"]
    )
    data = json.loads(result.output)
    assert data["total"] == 1
    (pi,) = data["sessions"]
    assert (pi["title"], pi["cwd"]) == ("add a --shout flag to greet.py", "/work/demo")
    assert pi["size"] == home["pi"][0].stat().st_size


def test_sessions_list_without_scan_lists_the_store_alone(home: dict[str, list[Path]]) -> None:
    result = CliRunner().invoke(cli, ["sessions", "list", "--no-scan"])
    assert result.output.splitlines() == ["0 of 0 sessions"]  # no header over no rows
