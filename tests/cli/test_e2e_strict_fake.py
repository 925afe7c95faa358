"""End to end against a fake that refuses what the real APIs refuse, with today's model names.

`restore` runs as a subprocess (real SDKs, real HTTP) against the fake server's strict
mode: every request must fit the SDK parameter types and pass the real APIs' checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.process import fake_server_process

# Each test starts the fake server and the CLI as processes (seconds each).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT / "fixtures" / "opencode" / "recorded" / "tui-compact" / "export.json"


@pytest.fixture(scope="module")
def strict_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("strict")
    with fake_server_process(tmp, strict=True, reasoning_models=["acme-*"]) as (url, log, _):
        yield url, log


def _run(model: str, base_url: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Any]:
    env = dict(os.environ, HOME=str(tmp_path), OPENCODE_RESTORE_DATA_DIR=str(tmp_path / "data"))
    env.update(OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test")
    out = tmp_path / "restoration.json"
    command = [sys.executable, "-m", "opencode_restore", "restore", str(EXPORT), "-m", model]
    command += ["--base-url", base_url, "--format", "json", "-o", str(out)]
    proc = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    return proc, json.loads(out.read_text()) if out.exists() else None


def _requests_for(log: Path, model: str) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [e for e in entries if e["body"].get("model") == model]


@pytest.mark.parametrize(
    ("spec", "suffix"),
    [
        ("openai:gpt-5.1", "/v1"),
        ("openai:o4-mini", "/v1"),
        ("anthropic:claude-sonnet-4-5", ""),
        # A local model behind an OpenAI-compatible server (Ollama's naming).
        ("openai:qwen3:8b", "/v1"),
    ],
)
def test_restore_with_current_models_is_accepted_first_time(
    strict_server: tuple[str, Path], tmp_path: Path, spec: str, suffix: str
) -> None:
    base, log = strict_server
    proc, data = _run(spec, base + suffix, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert data["failed_turns"] == []
    assert len(data["turns"]) == 3
    model = spec.split(":", 1)[1]
    requests = _requests_for(log, model)
    assert requests
    assert [r for r in requests if r.get("status")] == []  # nothing refused
    assert "refused" not in proc.stderr
    if spec.startswith("openai:") and model != "qwen3:8b":
        assert all("temperature" not in r["body"] for r in requests)
        assert all("max_completion_tokens" in r["body"] for r in requests)


def test_a_model_the_table_does_not_know_is_corrected_once_per_refused_parameter(
    strict_server: tuple[str, Path], tmp_path: Path
) -> None:
    base, log = strict_server
    proc, data = _run("openai:acme-reasoner-2", f"{base}/v1", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert data["failed_turns"] == []
    refused = [r for r in _requests_for(log, "acme-reasoner-2") if r.get("status")]
    # One refusal per parameter for the whole run: temperature, then max_tokens.
    assert [r["status"] for r in refused] == [400, 400]
    assert "temperature" in refused[0]["body"]
    assert "temperature" not in refused[1]["body"]
    assert "max_tokens" in refused[1]["body"]
    notes = [line for line in proc.stderr.splitlines() if "refused" in line]
    assert len(notes) == 2
    assert "'temperature'" in notes[0]
    assert "max_completion_tokens instead" in notes[1]
