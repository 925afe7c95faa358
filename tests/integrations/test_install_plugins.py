"""``install opencode`` / ``install pi``: the plugin, the extension and opencode's ``.npmrc``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.integrations.install import (
    NPMRC_BEGIN,
    NPMRC_END,
    NPMRC_LINES,
    PI_EXTENSION_SOURCE,
    PLUGIN_SOURCE,
    companion_paths,
    install,
    npmrc_text,
    npmrc_without,
    plugin_text,
    target_path,
    uninstall,
)

ARGV = ["/opt/venv/bin/python", "-m", "opencode_restore"]


def _imports(text: str) -> list[str]:
    return re.findall(r'^import .* from "([^"]+)"', text, flags=re.M)


def test_the_opencode_plugin_imports_nothing_and_uses_the_documented_hooks() -> None:
    text = plugin_text(ARGV).decode()
    # No @opencode-ai/plugin (nor anything else) to install: opencode loads it as it is.
    assert _imports(text) == []
    assert "require(" not in text
    assert f"const COMMAND: string[] = {json.dumps(ARGV)}" in text
    assert 'const COMMAND: string[] = ["opencode-restore"]' not in text
    for hook in (
        '"experimental.session.compacting"',
        '"experimental.chat.messages.transform"',
        '"session.compacted"',
    ):
        assert hook in text
    assert '"restore", sessionID, "--agent", "opencode", "--format", "prompt", "-q"' in text


def test_the_opencode_plugin_waits_for_a_restore_after_a_restart_within_the_hooks_budget() -> None:
    text = plugin_text(ARGV).decode()
    # The hooks' budget: their environment variable, else [hooks] budget_seconds of the
    # user's config file (platformdirs' place, then the legacy one), else 8 s, as they read it.
    assert "process.env.OPENCODE_RESTORE_HOOKS_BUDGET_SECONDS" in text
    assert "/^hooks\\s*\\]/" in text
    assert "budget_seconds\\s*=" in text
    assert "XDG_CONFIG_HOME" in text
    assert "/.config/opencode-restore" in text
    assert "const DEFAULT_BUDGET_S = 8" in text
    # Read when first needed, never at start-up: the plugin's factory awaits nothing.
    factory = text[text.index("export const OpencodeRestore") :]
    assert "await" not in factory[: factory.index("return {")]
    assert "budget ??= readBudget()" in text
    # The transform awaits the restore bounded by the budget; one restore per summary.
    assert "text = await within(running, await budgetMs())" in text
    assert "if (inflight.has(key)) return" in text
    assert "void restore(" not in text
    # Exactly once: no second copy when the request already holds it.
    assert "asked.parts.some((p) => p.text === text)" in text


def test_the_opencode_plugin_budget_matches_the_hooks_default() -> None:
    from opencode_restore.config import HooksConfig
    from opencode_restore.hooks.restore import DEFAULT_BUDGET

    assert DEFAULT_BUDGET == HooksConfig().budget_seconds == 8.0
    assert f"const DEFAULT_BUDGET_S = {DEFAULT_BUDGET:g}" in plugin_text(ARGV).decode()


def test_the_pi_extension_imports_only_what_pi_provides() -> None:
    text = plugin_text(ARGV, PI_EXTENSION_SOURCE).decode()
    assert _imports(text) == ["node:child_process", "@mariozechner/pi-coding-agent"]
    assert f"const COMMAND: string[] = {json.dumps(ARGV)}" in text
    assert 'pi.on("session_before_compact"' in text
    assert '"--agent", "pi", "--format", "prompt", "-q"' in text
    assert "export default function" in text


def test_both_sources_hold_the_line_install_replaces() -> None:
    for source in (PLUGIN_SOURCE, PI_EXTENSION_SOURCE):
        assert source.read_text().count('const COMMAND: string[] = ["opencode-restore"]') == 1


def test_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, project = tmp_path / "h", tmp_path / "p"
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    assert target_path("pi", "user", home, project) == (
        home / ".pi/agent/extensions/opencode-restore.ts"
    )
    assert target_path("pi", "project", home, project) == (
        project / ".pi/extensions/opencode-restore.ts"
    )
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-home"))
    assert target_path("pi", "user", home, project) == (
        tmp_path / "pi-home/extensions/opencode-restore.ts"
    )
    # opencode waits on the user's config folder too, whichever folder holds the plugin.
    plugin = target_path("opencode", "project", home, project)
    own, shared = project / ".opencode", home / ".config/opencode"
    assert companion_paths("opencode", plugin, home) == [
        own / ".npmrc",
        own / "package.json",
        shared / ".npmrc",
        shared / "package.json",
    ]
    user_plugin = target_path("opencode", "user", home, project)
    assert companion_paths("opencode", user_plugin, home) == [
        shared / ".npmrc",
        shared / "package.json",
    ]
    assert companion_paths("pi", target_path("pi", "project", home, project), home) == []


@pytest.mark.parametrize(
    ("before", "added"),
    [
        (None, list(NPMRC_LINES)),
        (b"registry=https://npm.example/\n", list(NPMRC_LINES)),
        (b"registry=https://npm.example/", list(NPMRC_LINES)),  # no final newline
        (b"fetch-retries = 3\n", ["fetch-timeout=10000"]),
    ],
)
def test_npmrc_gets_only_the_settings_it_lacks(before: bytes | None, added: list[str]) -> None:
    after = npmrc_text(before)
    assert after is not None
    text = after.decode()
    assert text.startswith((before or b"").decode())
    block = text[len((before or b"").decode()) :].strip("\n").splitlines()
    assert block == [NPMRC_BEGIN, *added, NPMRC_END]
    assert npmrc_text(after) is None  # installed: no change
    cleaned = npmrc_without(after)
    assert cleaned is not None
    assert cleaned.decode().rstrip("\n") == (before or b"").decode().rstrip("\n")


def test_npmrc_that_sets_both_is_left_alone() -> None:
    assert npmrc_text(b"fetch-retries=5\nfetch-timeout=1000\n") is None
    assert npmrc_without(b"fetch-retries=5\n") is None


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_opencode_round_trip_with_the_npmrc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / ".opencode"
    folder.mkdir()
    npmrc = folder / ".npmrc"
    npmrc.write_text("registry=https://npm.example/\n")
    shared = Path(os.environ["HOME"]) / ".config/opencode/.npmrc"
    out = _cli("install", "opencode", "--project")
    assert f"installed in {folder / 'plugins/opencode-restore.ts'}" in out
    assert f"installed in {npmrc} (backup " in out
    assert f"installed in {shared}" in out
    assert npmrc.read_text().startswith("registry=https://npm.example/\n" + NPMRC_BEGIN)
    # npm reads the .npmrc of the first folder up holding a package.json: this one.
    assert (folder / "package.json").read_text() == "{}\n"
    assert out.count("unchanged") == 0
    assert _cli("install", "opencode", "--project").count("unchanged") == 5
    _cli("uninstall", "opencode", "--project")
    assert not (folder / "plugins/opencode-restore.ts").exists()
    assert npmrc.read_text() == "registry=https://npm.example/\n"
    assert not shared.exists()
    # The backup and the plugins folder install made are gone too.
    assert sorted(p.name for p in folder.iterdir()) == [".npmrc"]
    assert not (shared.parent / "package.json").exists()


def test_a_package_json_opencode_wrote_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / ".opencode"
    folder.mkdir()
    package = folder / "package.json"
    package.write_text('{"dependencies": {"@opencode-ai/plugin": "1.18.33"}}\n')
    out = _cli("install", "opencode", "--project")
    assert f"unchanged: {package} (there already)" in out
    made = Path(os.environ["HOME"]) / ".config/opencode/package.json"
    assert made.read_text() == "{}\n"
    made.write_text('{"dependencies": {"@opencode-ai/plugin": "1.18.33"}}\n')  # opencode's
    out = _cli("uninstall", "opencode", "--project")
    assert f"unchanged: {made} (not ours, or changed since; left alone)" in out
    assert package.read_text() == '{"dependencies": {"@opencode-ai/plugin": "1.18.33"}}\n'
    assert made.exists()


def test_the_user_npmrc_stays_while_another_plugin_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shared = Path(os.environ["HOME"]) / ".config/opencode/.npmrc"
    _cli("install", "opencode")
    assert "unchanged" in _cli("install", "opencode", "--project")
    out = _cli("uninstall", "opencode", "--project")
    assert f"kept {shared} (another opencode plugin of ours uses it)" in out
    assert not (tmp_path / ".opencode/.npmrc").exists()
    assert shared.read_text().splitlines()[1:3] == list(NPMRC_LINES)
    _cli("uninstall", "opencode")
    assert not shared.exists()
    assert not (shared.parent / "plugins/opencode-restore.ts").exists()


def test_cli_opencode_npmrc_made_by_install_goes_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _cli("install", "opencode", "--project")
    npmrc = tmp_path / ".opencode/.npmrc"
    assert npmrc.read_text().splitlines()[1:3] == list(NPMRC_LINES)
    dry = _cli("uninstall", "opencode", "--project", "--dry-run")
    assert dry.count("+++ /dev/null") == 5  # the plugin, both .npmrc, both package.json
    _cli("uninstall", "opencode", "--project")
    assert not npmrc.exists()


def test_an_npmrc_edited_after_install_loses_only_our_block(tmp_path: Path) -> None:
    npmrc = tmp_path / ".npmrc"
    data_dir = tmp_path / "data"
    install("opencode", npmrc, data_dir)
    npmrc.write_text(npmrc.read_text() + "save-exact=true\n")
    change = uninstall("opencode", npmrc, data_dir)
    assert "our lines removed" in change.notes
    assert npmrc.read_text() == "save-exact=true\n"


def test_cli_pi_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # The command on PATH, as after install.sh: its absence adds a note (tested below),
    # and the test must not depend on how the suite was started.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "opencode-restore").write_text("#!/bin/sh\n")
    (bin_dir / "opencode-restore").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    out = _cli("install", "pi", "--project")
    extension = tmp_path / ".pi/extensions/opencode-restore.ts"
    assert out == f"pi: installed in {extension}\n"
    assert 'pi.on("session_before_compact"' in extension.read_text()
    assert "unchanged" in _cli("install", "pi", "--project")
    assert "+++ /dev/null" in _cli("uninstall", "pi", "--project", "--dry-run")
    assert extension.exists()
    _cli("uninstall", "pi", "--project")
    assert not extension.exists()
    assert not (tmp_path / ".pi").exists()  # install made it


def test_user_pi_install_goes_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _cli("install", "pi")
    extension = tmp_path / "home/.pi/agent/extensions/opencode-restore.ts"
    assert extension.is_file()
    _cli("uninstall", "pi")
    assert not extension.exists()


def test_a_changed_extension_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "extensions/opencode-restore.ts"
    install("pi", path, tmp_path / "data")
    path.write_text(path.read_text() + "// mine\n")
    change = uninstall("pi", path, tmp_path / "data")
    assert change.notes == ["the extension file was changed; left alone"]
    assert path.read_text().endswith("// mine\n")


def test_pi_has_no_mcp_install() -> None:
    result = CliRunner().invoke(cli, ["install", "pi", "--mcp"])
    assert result.exit_code == 2
    assert "pi reads no MCP config" in result.output


def test_a_project_install_says_when_the_command_is_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = _cli("install", "pi", "--project")
    assert "pi: note: the project's files run `opencode-restore` from PATH" in out
