"""`restore` and its saved timeline, as a user runs it: resume, --fresh, --debug-render."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli

EXPORT = Path("opencode") / "recorded" / "tui-compact" / "export.json"
TREE_V3 = Path("pi") / "own" / "tree-v3.jsonl"


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
    assert third[-2].startswith("[user] Accumulated state so far")  # then a blank line


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
