"""``install AGENT --memory``: SessionStart runs ``hook --memory``; uninstall takes it out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.errors import UsageError
from opencode_restore.integrations.install import hook_command, install, uninstall

from .test_install import REAL_LOOKING


def _commands(path: Path, event: str) -> list[str]:
    hooks: dict[str, Any] = json.loads(path.read_text())["hooks"]
    return [h["command"] for g in hooks.get(event, []) for h in g["hooks"]]


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_memory_install_switches_off_and_uninstalls_to_the_exact_bytes(
    agent: str, tmp_path: Path
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(REAL_LOOKING)
    data_dir = tmp_path / "data"
    command = hook_command(agent)
    assert install(agent, path, data_dir, memory=True).changed
    assert _commands(path, "SessionStart") == [f"{command} --memory"]
    others = "UserPromptSubmit" if agent != "gemini" else "BeforeAgent"
    assert _commands(path, others) == [command]  # only SessionStart is answered with it
    assert not install(agent, path, data_dir, memory=True).changed
    assert install(agent, path, data_dir).changed  # without --memory: off again
    assert _commands(path, "SessionStart") == [command]
    assert install(agent, path, data_dir, memory=True).changed
    assert _commands(path, "SessionStart") == [f"{command} --memory"]
    assert uninstall(agent, path, data_dir).changed
    assert path.read_text() == REAL_LOOKING
    assert not Path(f"{path}.bak").exists()
    assert not (data_dir / "installs.json").exists()


def test_uninstall_of_an_edited_file_takes_out_the_memory_entry_too(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(REAL_LOOKING)
    install("claude", path, tmp_path / "data", memory=True)
    data = json.loads(path.read_text())
    data["theme"] = "dark"
    path.write_text(json.dumps(data))
    uninstall("claude", path, tmp_path / "data")
    assert json.loads(path.read_text()) == {**json.loads(REAL_LOOKING), "theme": "dark"}


@pytest.mark.parametrize(
    ("agent", "mcp"), [("opencode", False), ("pi", False), ("claude", True), ("gemini", True)]
)
def test_memory_is_refused_where_no_session_start_is_answered(
    agent: str, mcp: bool, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="--memory is for the hooks of claude, codex, gemini"):
        install(agent, tmp_path / "settings.json", tmp_path / "data", mcp=mcp, memory=True)
    assert not (tmp_path / "settings.json").exists()


def test_cli_install_memory_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["install", "claude", "--project", "--memory"])
    assert result.exit_code == 0, result.output
    settings = tmp_path / ".claude/settings.json"
    assert _commands(settings, "SessionStart") == ["opencode-restore hook --memory"]
    refused = runner.invoke(cli, ["install", "pi", "--project", "--memory"])
    assert refused.exit_code == 2
    assert "--memory is for the hooks of claude, codex, gemini" in refused.output
    assert runner.invoke(cli, ["uninstall", "claude", "--project"]).exit_code == 0
    assert not (tmp_path / ".claude").exists()
