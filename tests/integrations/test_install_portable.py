"""``install --project`` writes files a team commits: they run ``opencode-restore`` from each
user's PATH, never this machine's path to it; a user's own install names this one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.integrations.install import PLUGIN_SOURCE, cli_argv, hook_command

#: The CLI of this test run, as a user install names it (an absolute path).
HERE = cli_argv()


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _commands(settings: Path) -> set[str]:
    data = json.loads(settings.read_text())
    return {h["command"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]}


@pytest.mark.parametrize(
    ("agent", "command"),
    [("claude", "opencode-restore hook"), ("gemini", "opencode-restore hook --agent gemini")],
)
def test_project_hooks_run_the_command_from_path(agent: str, command: str, project: Path) -> None:
    _cli("install", agent, "--project")
    assert _commands(project / f".{agent}/settings.json") == {command}
    _cli("install", agent)
    user = Path(os.environ["HOME"], f".{agent}/settings.json")
    assert _commands(user) == {hook_command(agent)}
    assert os.path.isabs(HERE[0])
    assert HERE[0] in hook_command(agent)


def test_project_mcp_servers_run_the_command_from_path(project: Path) -> None:
    _cli("install", "claude", "--project", "--mcp")
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["opencode-restore"]
    assert (server["command"], server["args"]) == ("opencode-restore", ["mcp"])
    _cli("install", "opencode", "--project", "--mcp")
    server = json.loads((project / "opencode.json").read_text())["mcp"]["opencode-restore"]
    assert server["command"] == ["opencode-restore", "mcp"]
    _cli("install", "gemini", "--project", "--mcp")
    server = json.loads((project / ".gemini/settings.json").read_text())["mcpServers"]
    assert server["opencode-restore"]["command"] == "opencode-restore"


@pytest.mark.parametrize(
    ("agent", "folder"), [("opencode", ".opencode/plugins"), ("pi", ".pi/extensions")]
)
def test_project_plugins_run_the_command_from_path(agent: str, folder: str, project: Path) -> None:
    _cli("install", agent, "--project")
    text = (project / folder / "opencode-restore.ts").read_text()
    assert 'const COMMAND: string[] = ["opencode-restore"]' in text
    if agent == "opencode":
        assert text == PLUGIN_SOURCE.read_text()


def test_a_project_install_says_when_path_lacks_the_command(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(project / "empty"))
    out = _cli("install", "claude", "--project")
    assert "the project's files run `opencode-restore` from PATH" in out
    assert _commands(project / ".claude/settings.json") == {"opencode-restore hook"}
    assert "note" not in _cli("uninstall", "claude", "--project")
