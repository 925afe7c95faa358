"""`restore --skip-evidence-search / --max-searches / --workspace` and their config keys."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.pipeline.evidence import tools
from opencode_restore.pipeline.evidence.log_search import Limits

CLAUDE = "claude-code/recorded/print-continue/d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"


def restore(fixtures: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(
        cli, ["restore", str(fixtures / CLAUDE), "--format", "json", *args], catch_exceptions=False
    )
    data = json.loads(result.stdout) if result.exit_code == 0 else {}
    return result.exit_code, data, result.stderr


def workspace(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "greet.py").write_text("import argparse\n# --shout\n")
    (tmp_path / "tests" / "test_greet.py").write_text("import unittest\n")
    return tmp_path


def test_workspace_flag_lets_the_offline_pass_read_files(fixtures: Path, tmp_path: Path) -> None:
    code, data, _ = restore(fixtures, "--workspace", str(workspace(tmp_path)))
    assert code == 0
    assert [(e["tool"], e["query"]) for e in data["evidence"]] == [
        ("SEARCH_LOG", data["evidence"][0]["query"]),
        ("READ_FILE", '"greet.py"'),
        ("READ_FILE", '"tests/test_greet.py"'),
    ]
    assert "2 | # --shout" in data["evidence"][1]["result"]


def test_without_a_workspace_only_the_log_is_searched(fixtures: Path) -> None:
    code, data, _ = restore(fixtures)
    assert code == 0
    assert [e["tool"] for e in data["evidence"]] == ["SEARCH_LOG"]


def test_skip_and_max_searches(fixtures: Path, tmp_path: Path) -> None:
    ws = str(workspace(tmp_path))
    _, skipped, _ = restore(fixtures, "--workspace", ws, "--skip-evidence-search")
    assert skipped["evidence"] == []
    assert skipped["usage"]["offline_answers"] == 4  # three turns and the synthesis
    _, one, _ = restore(fixtures, "--workspace", ws, "--max-searches", "1")
    assert [e["tool"] for e in one["evidence"]] == ["SEARCH_LOG"]
    # The offline pass plans no more than it may run, so it still completes on its own.
    assert not any("stopped at the limit" in w for w in one["warnings"])


def test_config_file_and_flags(fixtures: Path, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    ws = workspace(tmp_path / "ws")
    config = tmp_path / "config.toml"
    config.write_text(f'[restore]\nskip_evidence_search = true\nworkspace = "{ws}"\n')
    _, off, _ = restore(fixtures, "--config", str(config))
    assert off["evidence"] == []
    config.write_text(f'[restore]\nmax_searches = 2\nworkspace = "{ws}"\n')
    _, two, _ = restore(fixtures, "--config", str(config))
    assert [e["tool"] for e in two["evidence"]] == ["SEARCH_LOG", "READ_FILE"]
    _, three, _ = restore(fixtures, "--config", str(config), "--max-searches", "3")
    assert len(three["evidence"]) == 3


def test_missing_workspace_directory_is_a_usage_error(fixtures: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["restore", str(fixtures / CLAUDE), "--workspace", str(tmp_path / "nope")]
    )
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


def test_summary_note_counts_evidence(fixtures: Path, tmp_path: Path) -> None:
    code, _, err = restore(fixtures, "--workspace", str(workspace(tmp_path)))
    assert code == 0
    assert "3 evidence items" in err


def test_a_log_search_cut_by_its_deadline_is_a_warning_of_the_restore(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = iter(range(10**6))
    # Each read of the clock is a second later: the 2-second deadline passes at once.
    monkeypatch.setattr(tools, "Limits", partial(Limits, clock=lambda: float(next(reads))))
    code, data, _ = restore(fixtures)
    assert code == 0
    cut = [w for w in data["warnings"] if "log search stopped after 2 s" in w]
    assert len(cut) == 1
    assert "results may be incomplete" in cut[0]
    assert data["evidence"][0]["query"] in cut[0]
    assert "results may be incomplete" in data["evidence"][0]["result"]
