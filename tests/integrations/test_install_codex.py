"""``install codex``: the hooks in ``$CODEX_HOME/hooks.json`` beside its MCP entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.errors import UsageError
from opencode_restore.integrations.install import CODEX_EVENTS, hook_command, target_path

#: A user's own hooks.json (Claude Code's shape, as Codex 0.171 reads it).
OWN = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}


def test_target_is_codex_home_and_user_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = tmp_path / "h", tmp_path / "p"
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert target_path("codex", "user", home, project) == home / ".codex/hooks.json"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert target_path("codex", "user", home, project) == tmp_path / "ch/hooks.json"
    with pytest.raises(UsageError, match="user folder only"):
        target_path("codex", "project", home, project)


def test_cli_codex_hooks_round_trip_beside_the_mcp_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    hooks = codex_home / "hooks.json"
    hooks.write_text(json.dumps(OWN))
    original = hooks.read_bytes()
    runner = CliRunner()
    assert runner.invoke(cli, ["install", "codex", "--mcp"]).exit_code == 0
    config = (codex_home / "config.toml").read_bytes()
    result = runner.invoke(cli, ["install", "codex"])
    assert result.exit_code == 0, result.output
    assert f"codex: installed in {hooks}" in result.output
    assert "trust them" in result.output
    assert "/hooks" in result.output
    data = json.loads(hooks.read_text())
    command = hook_command("codex")
    assert command.endswith("hook --agent codex")
    assert set(data["hooks"]) == set(CODEX_EVENTS) | {"Stop"}
    for event in CODEX_EVENTS:
        assert {"type": "command", "command": command} in [
            h for group in data["hooks"][event] for h in group["hooks"]
        ]
    assert data["hooks"]["Stop"][0] == OWN["hooks"]["Stop"][0]  # the user's own stays
    assert "unchanged" in runner.invoke(cli, ["install", "codex"]).output
    # The MCP entry is its own install: the hooks leave config.toml alone, and back.
    assert (codex_home / "config.toml").read_bytes() == config
    assert runner.invoke(cli, ["uninstall", "codex"]).exit_code == 0
    assert hooks.read_bytes() == original
    assert (codex_home / "config.toml").read_bytes() == config


def test_uninstall_codex_after_an_edit_takes_out_only_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "codex"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    runner = CliRunner()
    assert runner.invoke(cli, ["install", "codex"]).exit_code == 0
    hooks = codex_home / "hooks.json"
    data = json.loads(hooks.read_text())
    data["hooks"]["PostCompact"] = [{"hooks": [{"type": "command", "command": "mine"}]}]
    hooks.write_text(json.dumps(data))
    result = runner.invoke(cli, ["uninstall", "codex"])
    assert result.exit_code == 0, result.output
    assert "our entries removed" in result.output
    assert json.loads(hooks.read_text())["hooks"] == {
        "PostCompact": [{"hooks": [{"type": "command", "command": "mine"}]}]
    }
