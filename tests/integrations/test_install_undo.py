"""``install`` then ``uninstall`` leaves the home and the project byte for byte as they were:
no ``.bak`` files, no folders install made, no newline added, for every agent and scope."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.integrations.install import AGENTS, FILE_AGENTS, target_path
from opencode_restore.integrations.mcp_config import MCP_AGENTS, mcp_target

#: (agent, scope, mcp) for every install the command takes (codex: user scope only).
CASES = [
    (agent, scope, mcp)
    for scope in ("user", "project")
    for mcp in (False, True)
    for agent in (MCP_AGENTS if mcp else AGENTS)
    if not (agent == "codex" and scope == "project")
]
#: A settings file as Gemini CLI writes one (JSON.stringify's two-space indent, no final
#: newline); Claude Code's and opencode's are shaped alike.
SETTINGS = '{\n  "theme": "Default",\n  "general": {\n    "vimMode": true\n  }\n}'


def _tree(*roots: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``roots``."""
    out: dict[str, bytes | None] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs:
                out[os.path.join(folder, name)] = None
            for name in files:
                out[os.path.join(folder, name)] = Path(folder, name).read_bytes()
    return out


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _flags(agent: str, scope: str, mcp: bool) -> list[str]:
    return [agent, *(["--project"] if scope == "project" else []), *(["--mcp"] if mcp else [])]


def _existing(agent: str, path: Path, mcp: bool) -> None:
    """What the agent's own folder already holds before an install."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if agent in FILE_AGENTS and not mcp:
        (path.parent / "other.ts").write_text("export default {}\n")
        if agent == "opencode":
            (path.parent.parent / ".npmrc").write_text("registry=https://npm.example/\n")
    elif path.suffix == ".toml":
        path.write_text('model = "o3"\n')
    else:
        path.write_text(SETTINGS)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder, a project; the data folder in its default place under HOME."""
    monkeypatch.delenv("OPENCODE_RESTORE_DATA_DIR")
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize("existing", [False, True], ids=["fresh", "existing"])
@pytest.mark.parametrize(("agent", "scope", "mcp"), CASES)
def test_install_then_uninstall_leaves_the_tree_as_it_was(
    agent: str, scope: str, mcp: bool, existing: bool, project: Path
) -> None:
    home = Path(os.environ["HOME"])
    if existing:
        where = mcp_target if mcp else target_path
        _existing(agent, where(agent, scope, home, project), mcp)
    before = _tree(home, project)
    _cli("install", *_flags(agent, scope, mcp))
    assert _tree(home, project) != before
    _cli("uninstall", *_flags(agent, scope, mcp))
    assert _tree(home, project) == before


@pytest.mark.parametrize("scope", ["user", "project"])
def test_gemini_hooks_and_server_in_one_file_undone_in_either_order(
    scope: str, project: Path
) -> None:
    home = Path(os.environ["HOME"])
    path = target_path("gemini", scope, home, project)
    _existing("gemini", path, mcp=False)
    before = _tree(home, project)
    _cli("install", *_flags("gemini", scope, False))
    _cli("install", *_flags("gemini", scope, True))
    # Taken out in the order they went in: neither finds the bytes it wrote.
    _cli("uninstall", *_flags("gemini", scope, False))
    _cli("uninstall", *_flags("gemini", scope, True))
    assert _tree(home, project) == before


def test_an_upgrade_over_our_install_keeps_one_backup(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["HOME"])
    path = target_path("claude", "user", home, project)
    _existing("claude", path, mcp=False)
    before = _tree(home, project)
    monkeypatch.setattr(shutil, "which", lambda name: "/old/bin/opencode-restore")
    _cli("install", "claude")
    # The command moved (a reinstall elsewhere): the file changes again, the backup stays the
    # original's (no .bak.1 left behind), and uninstall still gives the original bytes back.
    monkeypatch.setattr(shutil, "which", lambda name: "/new/bin/opencode-restore")
    assert "backup" not in _cli("install", "claude")
    assert "/new/bin/opencode-restore hook" in path.read_text()
    _cli("uninstall", "claude")
    assert _tree(home, project) == before
