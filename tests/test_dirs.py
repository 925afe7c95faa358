"""The user's directories: the platform's (XDG on Linux), the old places kept, made 0700."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.config import load_config
from opencode_restore.dirs import (
    default_data_dir,
    make_private_dirs,
    user_config_path,
)
from opencode_restore.store.paths import data_dir_str


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("OPENCODE_RESTORE_DATA_DIR")
    return h


def test_xdg_variables_are_honoured(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_data_dir() == str(home / ".local/share/opencode-restore")
    assert user_config_path() == str(home / ".config/opencode-restore/config.toml")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    assert default_data_dir() == str(tmp_path / "xdg-data/opencode-restore")
    assert user_config_path() == str(tmp_path / "xdg-config/opencode-restore/config.toml")
    assert load_config().data_dir == tmp_path / "xdg-data/opencode-restore"
    assert data_dir_str() == str(tmp_path / "xdg-data/opencode-restore")


def test_an_earlier_installs_places_are_kept(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sessions and config made before platformdirs stay in use under other XDG homes."""
    old_data = home / ".local/share/opencode-restore"
    old_data.mkdir(parents=True)
    old_config = home / ".config/opencode-restore/config.toml"
    old_config.parent.mkdir(parents=True)
    old_config.write_text('[llm]\nmodel = "openai:from-old-file"\n')
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    assert data_dir_str() == str(old_data)
    config = load_config()
    assert config.data_dir == old_data
    assert config.llm.model == "openai:from-old-file"
    # Once the platform's places exist they win.
    new_config = tmp_path / "xdg-config/opencode-restore/config.toml"
    new_config.parent.mkdir(parents=True)
    new_config.write_text('[paths]\ndata_dir = "~/elsewhere"\n')
    (tmp_path / "xdg-data/opencode-restore").mkdir(parents=True)
    assert load_config().llm.model == "offline"
    assert load_config().data_dir == home / "elsewhere"
    assert data_dir_str() == str(home / "elsewhere")


def test_the_environment_still_wins(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", "~/from-env")
    assert data_dir_str() == str(home / "from-env")
    assert load_config().data_dir == home / "from-env"


def test_private_dirs_make_every_missing_directory_0700(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    outer.mkdir(mode=0o755)
    os.chmod(outer, 0o755)
    old = os.umask(0o022)
    try:
        make_private_dirs(outer / "a" / "b")
        make_private_dirs(outer / "a" / "b")  # already there: nothing to do
    finally:
        os.umask(old)
    assert _mode(outer) == 0o755  # an existing directory keeps its mode
    assert _mode(outer / "a") == 0o700
    assert _mode(outer / "a" / "b") == 0o700
    (outer / "file").write_text("")
    with pytest.raises(FileExistsError):
        make_private_dirs(outer / "file")
    with pytest.raises(NotADirectoryError):
        make_private_dirs(outer / "file" / "below")


def test_a_restore_makes_the_data_dir_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "fresh" / "data"
    old = os.umask(0o022)
    try:
        result = CliRunner().invoke(
            cli, ["restore", "-q", "--demo"], env={"OPENCODE_RESTORE_DATA_DIR": str(data)}
        )
        scan = CliRunner().invoke(
            cli, ["sessions", "list"], env={"OPENCODE_RESTORE_DATA_DIR": str(data)}
        )
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert scan.exit_code == 0, scan.output
    assert (data / "store.sqlite3").exists()
    for made in (tmp_path / "fresh", data, data / "timelines"):
        assert _mode(made) == 0o700, made
