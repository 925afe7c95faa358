"""``install`` / ``uninstall``: merged settings, backups, idempotence, byte-exact undo."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore.cli import cli
from opencode_restore.integrations.install import (
    CLAUDE_EVENTS,
    GEMINI_EVENTS,
    hook_command,
    install,
    target_path,
    uninstall,
)
from opencode_restore.integrations.settings_json import (
    SettingsError,
    merge_hooks,
    parse_settings,
    remove_hooks,
)

#: Settings shaped like a real user's ~/.claude/settings.json (own hooks, env, permissions).
REAL_LOOKING = """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "model": "opus",
  "env": {"FOO": "1"},
  "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
  "hooks": {
    "PostToolUse": [
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier --write"}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}]
  }
}
"""


def _groups(data: dict[str, Any], event: str, command: str) -> list[Any]:
    return [g for g in data["hooks"].get(event, []) if g["hooks"][0]["command"] == command]


@pytest.mark.parametrize(
    ("agent", "events"), [("claude", CLAUDE_EVENTS), ("gemini", GEMINI_EVENTS)]
)
def test_install_merges_backs_up_is_idempotent_and_uninstall_restores_bytes(
    agent: str, events: tuple[str, ...], tmp_path: Path
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(REAL_LOOKING)
    os.chmod(path, 0o600)
    data_dir = tmp_path / "data"
    change = install(agent, path, data_dir)
    assert change.changed
    assert Path(str(path) + ".bak").read_text() == REAL_LOOKING
    merged = json.loads(path.read_text())
    original = json.loads(REAL_LOOKING)
    command = hook_command(agent)
    for key in ("$schema", "model", "env", "permissions"):
        assert merged[key] == original[key]
    assert merged["hooks"]["PostToolUse"] == original["hooks"]["PostToolUse"]
    assert merged["hooks"]["Stop"][0] == original["hooks"]["Stop"][0]
    for spec in events:
        event, _, matcher = spec.partition(":")
        (ours,) = _groups(merged, event, command)
        assert ours.get("matcher") == (matcher or None)
    assert path.stat().st_mode & 0o777 == 0o600
    installed = path.read_bytes()
    again = install(agent, path, data_dir)
    assert not again.changed
    assert path.read_bytes() == installed
    assert not Path(str(path) + ".bak.1").exists()
    assert uninstall(agent, path, data_dir).changed
    assert path.read_text() == REAL_LOOKING
    assert not uninstall(agent, path, data_dir).changed


def test_uninstall_after_the_user_edited_the_file_removes_only_ours(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(REAL_LOOKING)
    install("claude", path, tmp_path / "data")
    data = json.loads(path.read_text())
    data["theme"] = "dark"
    path.write_text(json.dumps(data))
    change = uninstall("claude", path, tmp_path / "data")
    assert "our entries removed" in change.notes
    left = json.loads(path.read_text())
    assert left == {**json.loads(REAL_LOOKING), "theme": "dark"}


def test_a_file_created_by_install_goes_away_again(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    install("claude", path, tmp_path / "data")
    assert set(json.loads(path.read_text())["hooks"]) == set(CLAUDE_EVENTS)
    uninstall("claude", path, tmp_path / "data")
    assert not path.exists()


def test_gemini_precompress_runs_only_on_compress_and_old_entries_are_replaced(
    tmp_path: Path,
) -> None:
    # Gemini CLI 0.61 fires PreCompress(auto) before every model request and waits for the
    # hook; a "manual" matcher (compared with the trigger) keeps it to /compress. An earlier
    # install's unmatched PreCompress and AfterAgent groups go; the user's own stay.
    path = tmp_path / "settings.json"
    command = hook_command("gemini")
    mine = {"hooks": [{"type": "command", "command": "log-compress"}]}
    old = {
        "hooks": {
            "AfterAgent": [{"hooks": [{"type": "command", "command": command}]}],
            "PreCompress": [mine, {"hooks": [{"type": "command", "command": command}]}],
        }
    }
    path.write_text(json.dumps(old))
    install("gemini", path, tmp_path / "data")
    hooks = json.loads(path.read_text())["hooks"]
    assert "AfterAgent" not in hooks
    ours = {"matcher": "manual", "hooks": [{"type": "command", "command": command}]}
    assert hooks["PreCompress"] == [mine, ours]
    assert [g["hooks"][0]["command"] for g in hooks["BeforeAgent"]] == [command]
    assert not install("gemini", path, tmp_path / "data").changed
    path.write_text(json.dumps(old))  # changed since: uninstall takes out ours, old and new
    uninstall("gemini", path, tmp_path / "data")
    assert json.loads(path.read_text()) == {"hooks": {"PreCompress": [mine]}}


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(REAL_LOOKING)
    change = install("gemini", path, tmp_path / "data", dry_run=True)
    diff = change.diff()
    assert diff.startswith(f"--- {path}\n+++ {path}\n")
    assert '+            "command": ' in diff
    assert path.read_text() == REAL_LOOKING
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("text", "line"),
    [('{\n  "a": 1,\n  "b": \n}\n', 4), ("[1, 2]\n", 1), ('{"a": 1}\n// c\n', 2)],
)
def test_invalid_settings_are_refused_naming_file_and_line(
    text: str, line: int, tmp_path: Path
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(SettingsError, match=rf"^{path}:{line}: "):
        install("claude", path, tmp_path / "data")
    assert path.read_text() == text
    assert not Path(str(path) + ".bak").exists()


def test_odd_shapes_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match='"hooks" is not an object'):
        merge_hooks({"hooks": []}, [("Stop", "x", None)], "f")
    with pytest.raises(SettingsError, match=r"hooks\.Stop is not a list"):
        merge_hooks({"hooks": {"Stop": {}}}, [("Stop", "x", None)], "f")
    assert parse_settings("  \n", "f") == {}
    assert remove_hooks({"a": 1}, [("Stop", "x", None)], "f") == {"a": 1}


def test_a_read_only_folder_fails_cleanly(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "settings.json"
    path.write_text(REAL_LOOKING)
    folder.chmod(0o500)
    try:
        with pytest.raises(PermissionError):
            install("claude", path, tmp_path / "data")
    finally:
        folder.chmod(0o700)
    assert path.read_text() == REAL_LOOKING


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=8).filter(lambda k: k != "hooks"), json_values, max_size=5))
def test_other_keys_survive_merge_and_remove(other: dict[str, Any]) -> None:
    entries = [(event, "opencode-restore hook", None) for event in CLAUDE_EVENTS]
    merged = merge_hooks(other, entries, "f")
    assert {k: v for k, v in merged.items() if k != "hooks"} == other
    assert remove_hooks(merged, entries, "f") == other
    assert merge_hooks(merged, entries, "f") == merged


def test_targets(tmp_path: Path) -> None:
    home, project = tmp_path / "h", tmp_path / "p"
    assert target_path("claude", "user", home, project) == home / ".claude/settings.json"
    assert target_path("gemini", "project", home, project) == project / ".gemini/settings.json"
    assert target_path("opencode", "user", home, project) == (
        home / ".config/opencode/plugins/opencode-restore.ts"
    )
    assert target_path("opencode", "project", home, project) == (
        project / ".opencode/plugins/opencode-restore.ts"
    )


def test_cli_opencode_plugin_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["install", "opencode", "--project"])
    assert result.exit_code == 0, result.output
    plugin = tmp_path / ".opencode/plugins/opencode-restore.ts"
    text = plugin.read_text()
    assert '"experimental.session.compacting"' in text
    assert "const COMMAND: string[] = [" in text
    # The installed script when it is on PATH, else this Python with -m (PATH decides).
    command = text.split("const COMMAND", 1)[1].splitlines()[0]
    assert "opencode-restore" in command or '"-m", "opencode_restore"' in command
    assert "unchanged" in runner.invoke(cli, ["install", "opencode", "--project"]).output
    dry = runner.invoke(cli, ["uninstall", "opencode", "--project", "--dry-run"])
    assert "+++ /dev/null" in dry.output
    assert plugin.exists()
    assert runner.invoke(cli, ["uninstall", "opencode", "--project"]).exit_code == 0
    assert not plugin.exists()


def test_cli_refuses_invalid_json(tmp_path: Path) -> None:
    settings_file = Path(os.environ["HOME"]) / ".claude/settings.json"
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    settings_file.write_text('{"a": }')
    result = CliRunner().invoke(cli, ["install", "claude"])
    assert result.exit_code == 2
    assert f"{settings_file}:1: not valid JSON" in result.output
