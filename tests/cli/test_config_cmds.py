"""`config show`: every effective setting with the layer it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli


def show(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["config", "show", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def shown(*args: str, env: dict[str, str] | None = None) -> dict[str, dict[str, object]]:
    code, out, err = show(*args, "--format", "json", env=env)
    assert code == 0, err
    data: dict[str, dict[str, object]] = json.loads(out)
    return data


def test_every_layer_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = Path.home() / ".config/opencode-restore/config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[llm]\nmax_tokens = 999\ntimeout = 30\n[restore]\nmax_searches = 3\n")
    monkeypatch.setenv("OPENCODE_RESTORE_LLM_TIMEOUT", "5")
    monkeypatch.setenv("OPENCODE_RESTORE_MODEL", "anthropic:claude-haiku-4-5")
    got = shown("--base-url", "http://localhost:11434/v1")
    assert got["llm.max_attempts"] == {"value": 4, "source": "default"}
    assert got["llm.max_tokens"] == {"value": 999, "source": f"user file {user}"}
    assert got["restore.max_searches"] == {"value": 3, "source": f"user file {user}"}
    assert got["llm.timeout"] == {"value": 5.0, "source": "env OPENCODE_RESTORE_LLM_TIMEOUT"}
    assert got["llm.model"] == {
        "value": "anthropic:claude-haiku-4-5",
        "source": "env OPENCODE_RESTORE_MODEL",
    }
    assert got["llm.base_url"] == {"value": "http://localhost:11434/v1", "source": "flag"}
    assert shown("-m", "offline")["llm.model"] == {"value": "offline", "source": "flag"}


def test_a_config_file_given_replaces_the_user_file(tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text('[restore]\nworkspace = "/srv"\n[prices."openai:x"]\ninput = 1\noutput = 2\n')
    user = Path.home() / ".config/opencode-restore/config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[llm]\nmax_tokens = 999\n")
    got = shown("--config", str(other))
    assert got["restore.workspace"] == {"value": "/srv", "source": f"--config file {other}"}
    assert got["prices.openai:x.output"] == {"value": 2.0, "source": f"--config file {other}"}
    assert got["prices.openai:x.cache_read"] == {"value": 0.0, "source": "default"}
    assert got["llm.max_tokens"] == {"value": 2048, "source": "default"}
    assert got["prices.openai:gpt-4o.input"]["source"] == "default"


def test_the_table_is_one_line_per_key() -> None:
    code, out, _ = show("-m", "openai:gpt-4o")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["llm.model", "=", '"openai:gpt-4o"', "#", "flag"]
    assert "llm.max_attempts = 4" in out
    assert len(lines) == len(shown())


def test_a_broken_config_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[llm]\nmax_tokens = 'many'\n")
    code, _, err = show("--config", str(bad))
    assert code == 2
    assert err.startswith("error: configuration llm.max_tokens: ")
    assert len(err.splitlines()) == 1
