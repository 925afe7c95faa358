"""The learned-server cache: one entry per base URL and model, in the data directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from opencode_restore.config import load_config
from opencode_restore.llm.server_profile import PROFILE_NAME, ServerProfile, ServerProfiles
from opencode_restore.llm.settings import ProviderSettings

URL = "http://127.0.0.1:8080/v1"


def test_nothing_learned_yet(tmp_path: Path) -> None:
    assert ServerProfiles(tmp_path / PROFILE_NAME).get(URL, "smollm2") == ServerProfile()


def test_learned_fields_are_kept_per_server_and_model(tmp_path: Path) -> None:
    profiles = ServerProfiles(tmp_path / PROFILE_NAME)
    profiles.remember(URL, "smollm2", ServerProfile(structured_output="json_object"))
    profiles.remember(URL + "/", "smollm2", ServerProfile(tools="text"))
    profiles.remember(URL, "qwen3", ServerProfile(tools="native"))
    again = ServerProfiles(tmp_path / PROFILE_NAME)  # the next run
    assert again.get(URL, "smollm2") == ServerProfile("json_object", "text")
    assert again.get(URL, "qwen3") == ServerProfile(tools="native")
    assert again.get("http://127.0.0.1:11434/v1", "smollm2") == ServerProfile()


def test_the_default_file_is_in_the_data_dir() -> None:
    profiles = ServerProfiles.default()
    assert profiles.path == Path(os.environ["OPENCODE_RESTORE_DATA_DIR"]) / PROFILE_NAME


def test_a_config_files_data_dir_holds_the_profiles(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[paths]\ndata_dir = "{tmp_path / "data"}"\n')
    settings = ProviderSettings.from_config(load_config(config, env={}))
    assert ServerProfiles.default(settings.data_dir).path == tmp_path / "data" / PROFILE_NAME


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        '["a list"]',
        '{"servers": {"http://127.0.0.1:8080/v1": {"smollm2": {"structured_output": "grammar"}}}}',
    ],
)
def test_a_damaged_file_reads_as_nothing_learned(tmp_path: Path, content: str) -> None:
    path = tmp_path / PROFILE_NAME
    path.write_text(content, encoding="utf-8")
    profiles = ServerProfiles(path)
    assert profiles.get(URL, "smollm2") == ServerProfile()
    profiles.remember(URL, "smollm2", ServerProfile(tools="text"))
    assert profiles.get(URL, "smollm2") == ServerProfile(tools="text")


def test_an_unwritable_data_dir_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    profiles = ServerProfiles(blocker / PROFILE_NAME)  # its directory is a file
    profiles.remember(URL, "smollm2", ServerProfile(tools="text"))
    assert profiles.get(URL, "smollm2") == ServerProfile()


def test_the_file_is_readable_json(tmp_path: Path) -> None:
    profiles = ServerProfiles(tmp_path / PROFILE_NAME)
    profiles.remember(URL, "smollm2", ServerProfile(structured_output="text"))
    data = json.loads((tmp_path / PROFILE_NAME).read_text(encoding="utf-8"))
    assert data == {"servers": {URL: {"smollm2": {"structured_output": "text"}}}}
