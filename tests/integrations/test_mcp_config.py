"""``install AGENT --mcp``: our server merged into each agent's MCP config and taken out."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore.cli import cli
from opencode_restore.integrations.install import cli_argv, install, uninstall
from opencode_restore.integrations.mcp_config import (
    SERVER_NAME,
    add_server,
    mcp_target,
    remove_server,
)
from opencode_restore.integrations.settings_json import SettingsError

#: A Codex config as users keep it: comments, a model, another MCP server.
CODEX_TOML = """# my codex settings
model = "gpt-5.1-codex"  # fast enough

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[profiles.work]
approval_policy = "on-request"
"""
#: ~/.claude.json holds much more than MCP servers (Claude Code's own state).
CLAUDE_JSON = json.dumps(
    {
        "numStartups": 12,
        "projects": {"/home/dev/p": {"allowedTools": []}},
        "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}},
    },
    indent=2,
)


def _servers(agent: str, text: str) -> dict[str, Any]:
    if agent == "codex":
        return dict(tomllib.loads(text).get("mcp_servers", {}))
    key = "mcp" if agent == "opencode" else "mcpServers"
    return dict(json.loads(text).get(key, {}))


@pytest.mark.parametrize(
    ("agent", "before"),
    [("claude", CLAUDE_JSON), ("codex", CODEX_TOML), ("gemini", "{}"), ("opencode", "")],
)
def test_install_adds_ours_beside_the_others_and_uninstall_restores_the_bytes(
    agent: str, before: str, tmp_path: Path
) -> None:
    path = tmp_path / ("config.toml" if agent == "codex" else "config.json")
    path.write_text(before)
    data = tmp_path / "data"
    first = install(agent, path, data, mcp=True)
    assert first.changed
    text = path.read_text()
    servers = _servers(agent, text)
    ours = servers[SERVER_NAME]
    argv = [*cli_argv(), "mcp"]
    if agent == "opencode":
        assert ours == {"type": "local", "command": argv, "enabled": True}
    else:
        assert [ours["command"], *ours["args"]] == argv
    # Claude Code: the tools in the first request, not deferred; Codex: time for a restore.
    assert ours.get("alwaysLoad") is (True if agent == "claude" else None)
    assert ours.get("tool_timeout_sec") == (300 if agent == "codex" else None)
    others = _servers(agent, before) if before.strip() else {}
    assert {k: v for k, v in servers.items() if k != SERVER_NAME} == others
    if agent == "codex":
        assert "# my codex settings" in text  # comments and layout kept
        assert tomllib.loads(text)["profiles"] == tomllib.loads(CODEX_TOML)["profiles"]
    assert not install(agent, path, data, mcp=True).changed  # idempotent
    uninstall(agent, path, data, mcp=True)
    assert path.read_text() == before


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "opencode"])
def test_after_the_user_edits_the_file_only_our_server_goes(agent: str, tmp_path: Path) -> None:
    before = CODEX_TOML if agent == "codex" else CLAUDE_JSON
    path = tmp_path / "config"
    path.write_text(before)
    data = tmp_path / "data"
    install(agent, path, data, mcp=True)
    edited = path.read_text() + ("\n[extra]\nx = 1\n" if agent == "codex" else "")
    if agent != "codex":
        loaded = json.loads(edited)
        loaded["theme"] = "dark"
        edited = json.dumps(loaded)
    path.write_text(edited)
    change = uninstall(agent, path, data, mcp=True)
    assert change.notes == ["our server removed"]
    after = path.read_text()
    assert SERVER_NAME not in _servers(agent, after)
    assert ("x = 1" in after) if agent == "codex" else json.loads(after)["theme"] == "dark"
    assert not uninstall(agent, path, data, mcp=True).changed


def test_hooks_and_server_in_one_gemini_file_keep_separate_histories(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"theme": "dark"}\n')
    data = tmp_path / "data"
    install("gemini", path, data)
    install("gemini", path, data, mcp=True)
    both = json.loads(path.read_text())
    assert SERVER_NAME in both["mcpServers"]
    assert "SessionStart" in both["hooks"]
    uninstall("gemini", path, data, mcp=True)
    hooks_only = json.loads(path.read_text())
    assert "mcpServers" not in hooks_only
    assert "SessionStart" in hooks_only["hooks"]
    uninstall("gemini", path, data)
    assert json.loads(path.read_text()) == {"theme": "dark"}


def test_broken_configs_are_refused_naming_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"c\.toml:2: not valid TOML"):
        add_server("codex", 'a = 1\nb = "open\n', ["x"], str(tmp_path / "c.toml"))
    with pytest.raises(SettingsError, match=r"s\.json:3: not valid JSON"):
        add_server("gemini", '{\n"a": 1,\n}', ["x"], str(tmp_path / "s.json"))
    with pytest.raises(SettingsError, match="mcpServers is not a JSON object"):
        add_server("claude", '{"mcpServers": []}', ["x"], "f")
    with pytest.raises(SettingsError, match="mcp_servers is not a table"):
        add_server("codex", "mcp_servers = 3\n", ["x"], "f")
    assert remove_server("gemini", "{}", "f") is None
    assert remove_server("codex", "", "f") is None


def test_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, project = tmp_path / "h", tmp_path / "p"
    assert mcp_target("claude", "user", home, project) == home / ".claude.json"
    assert mcp_target("claude", "project", home, project) == project / ".mcp.json"
    assert mcp_target("gemini", "project", home, project) == project / ".gemini/settings.json"
    assert mcp_target("opencode", "user", home, project) == (
        home / ".config/opencode/opencode.json"
    )
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert mcp_target("codex", "user", home, project) == home / ".codex/config.toml"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert mcp_target("codex", "user", home, project) == tmp_path / "ch/config.toml"
    with pytest.raises(Exception, match="user config only"):
        mcp_target("codex", "project", home, project)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: k not in ("mcpServers",)),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=6),
            lambda c: st.lists(c, max_size=3),
            max_leaves=6,
        ),
        max_size=5,
    )
)
def test_other_keys_survive_add_and_remove(other: dict[str, Any]) -> None:
    text = json.dumps(other)
    added = add_server("claude", text, ["opencode-restore"], "f")
    removed = remove_server("claude", added, "f")
    assert removed is not None
    assert json.loads(removed) == other


def test_cli_codex_round_trip_and_hooks_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    runner = CliRunner()
    hooks = runner.invoke(cli, ["install", "codex", "--dry-run"])  # the hooks: hooks.json
    assert hooks.exit_code == 0
    assert f"+++ {tmp_path / 'codex' / 'hooks.json'}" in hooks.output
    dry = runner.invoke(cli, ["install", "codex", "--mcp", "--dry-run"])
    assert dry.exit_code == 0
    assert "+[mcp_servers.opencode-restore]" in dry.output
    assert not (tmp_path / "codex" / "config.toml").exists()
    done = runner.invoke(cli, ["install", "codex", "--mcp"])
    assert done.exit_code == 0, done.output
    assert "installed in" in done.output
    assert SERVER_NAME in _servers("codex", (tmp_path / "codex" / "config.toml").read_text())
    gone = runner.invoke(cli, ["uninstall", "codex", "--mcp"])
    assert gone.exit_code == 0
    assert not (tmp_path / "codex" / "config.toml").exists()
