"""`restore` and its saved timeline, as a user runs it: resume, --fresh, --debug-render."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from tests.store.builders import CLAUDE_COMPACT, copy_to

EXPORT = Path("opencode") / "recorded" / "tui-compact" / "export.json"
TREE_V3 = Path("pi") / "own" / "tree-v3.jsonl"
CLAUDE_ID = CLAUDE_COMPACT.stem


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(tmp_path))
    return tmp_path / "timelines"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["restore", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_second_run_reuses_everything(fixtures: Path, data: Path) -> None:
    code, first, err = invoke(str(fixtures / EXPORT), "--skip-evidence-search")
    assert code == 0
    # The offline rules answered (three turns and the synthesis): no model was called.
    assert "3 turns, offline rules: no model called" in err
    assert "journal: new timeline" in err
    [saved] = list(data.glob("*.json"))
    payload = json.loads(saved.read_text())
    assert payload["schema"] == "restore.timeline.v1"
    assert len(payload["turn_ids"]) == 3
    code, second, err = invoke(str(fixtures / EXPORT), "--skip-evidence-search")
    assert code == 0
    assert "journal: resumed: all 3 turns unchanged" in err
    assert first == second
    _, again, _ = invoke(str(fixtures / EXPORT), "--skip-evidence-search", "--format", "json")
    assert json.loads(again)["usage"]["offline_answers"] == 0  # nothing was asked again
    code, fresh, err = invoke(
        str(fixtures / EXPORT), "--skip-evidence-search", "--fresh", "--format", "json"
    )
    assert json.loads(fresh)["usage"]["offline_answers"] == 4
    assert "fresh start (--fresh)" in err


def test_debug_render_marks_the_breakpoints(fixtures: Path, data: Path) -> None:
    code, _, err = invoke(str(fixtures / EXPORT), "--skip-evidence-search", "--debug-render")
    assert code == 0
    renders = err.split("── render ")[1:]
    assert [r.split(" ", 1)[0] for r in renders] == ["turn_summary"] * 3 + ["synthesis"]
    third = renders[2].splitlines()
    assert third[3].startswith("[user] [TURN 1 · M1–M")
    assert third[3].endswith("=>[1]")
    assert third[4].startswith("[user] [TURN 2 · M")
    assert third[4].endswith("=>[2]")
    # The turn's state and facts end a cached prefix too; the notice and the task follow.
    assert third[5].startswith("[user] Accumulated state so far")
    assert third[5].endswith("=>[3]")
    assert third[-2].startswith("[user] <session_log")  # then a blank line


def test_branch_restores_keep_their_own_timeline(fixtures: Path, data: Path) -> None:
    assert invoke(str(fixtures / TREE_V3), "-q")[0] == 0
    assert invoke(str(fixtures / TREE_V3), "-q", "--label", "approach-a")[0] == 0
    names = sorted(p.name for p in data.glob("*.json"))
    assert len(names) == 2
    assert any("approach-a" in n for n in names)


def test_resume_can_be_switched_off(
    fixtures: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_RESTORE_RESTORE_RESUME", "false")
    code, _, err = invoke(str(fixtures / EXPORT), "--skip-evidence-search")
    assert code == 0
    assert "timeline:" not in err
    assert not data.exists()


@pytest.fixture
def original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: Path) -> Path:
    """A Claude Code session where Claude Code keeps it, restored once by its id."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    log = copy_to(CLAUDE_COMPACT, home / ".claude/projects/-home-dev-src-greet-cli")
    assert invoke(CLAUDE_ID, "--skip-evidence-search", "-q")[0] == 0
    return log


def _reused_by_id() -> None:
    """`restore ID` continues the original's journal: nothing changed, nothing asked."""
    code, out, err = invoke(CLAUDE_ID, "--skip-evidence-search", "--format", "json")
    assert code == 0, err
    assert "journal: resumed: all 3 turns unchanged" in err
    assert "changed since the last run" not in err
    assert json.loads(out)["usage"]["offline_answers"] == 0


def test_a_backup_copy_is_not_taken_for_the_original(
    original: Path, tmp_path: Path, data: Path
) -> None:
    backup = copy_to(original, tmp_path / "backup")
    code, _, err = invoke(str(backup), "--skip-evidence-search")
    assert code == 0
    assert "journal: new timeline" in err
    _reused_by_id()
    assert len(list(data.glob("*.json"))) == 2


def test_a_truncated_copy_leaves_the_originals_journal_whole(
    original: Path, tmp_path: Path
) -> None:
    lines = original.read_text().splitlines(keepends=True)
    short = tmp_path / "short" / original.name
    short.parent.mkdir()
    short.write_text("".join(lines[: len(lines) // 2]))
    code, _, err = invoke(str(short), "--skip-evidence-search")
    assert code == 0
    assert "journal: new timeline" in err
    _reused_by_id()


def test_the_log_read_as_another_agents_leaves_the_originals_journal(original: Path) -> None:
    # Whether the wrong reader restores something or refuses, it is another journal.
    invoke(str(original), "--agent", "terminal", "--skip-evidence-search", "-q")
    _reused_by_id()
