"""`opencode-restore check` against the strict fake server: accepted and refused, one line each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from tests.fakes.fake_llm_server import FakeLLMServer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeLLMServer(strict=True, reasoning_models=["acme-*"]) as fake:
        yield fake


def _check(*args: str) -> tuple[int, dict[str, str]]:
    result = CliRunner().invoke(cli, ["check", *args])
    lines = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    return result.exit_code, lines


def test_reasoning_model_is_sent_what_it_accepts(server: FakeLLMServer) -> None:
    code, lines = _check("-m", "openai:o4-mini", "--base-url", server.openai_base_url)
    assert code == 0
    assert "OpenAI o-series" in lines["model"]
    assert "accepted 10240" in lines["max_completion_tokens"]  # 2048 + room to reason
    assert "accepted json_schema TurnSummary (strict)" in lines["response_format"]
    assert "accepted 5 tools" in lines["tools"]
    assert "temperature" not in lines
    assert "ok" in lines["reply"]
    assert "parsed TurnSummary" in lines["reply"]
    body = server.requests[0]["body"]
    # The request a restore would send: schema and tools in one.
    assert body["tools"]
    assert body["response_format"]
    assert len(server.requests) == 1


def test_unknown_model_reports_each_refusal_and_the_correction(server: FakeLLMServer) -> None:
    code, lines = _check("-m", "openai:acme-next", "--base-url", server.openai_base_url)
    assert code == 0
    assert lines["temperature"].split()[1] == "refused"
    assert "Only the default (1) value is supported. -> leaving it out" in lines["temperature"]
    assert "refused  2048: Unsupported parameter: 'max_tokens'" in lines["max_tokens"]
    assert "accepted 2048 (corrected)" in lines["max_completion_tokens"]
    assert [r.get("status") for r in server.requests] == [400, 400, None]


def test_claude_output_limit_above_the_model_maximum(server: FakeLLMServer, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[llm]\nmax_tokens = 16384\n", encoding="utf-8")
    code, lines = _check(
        "-m", "anthropic:claude-3-5-haiku", "--base-url", server.base_url, "--config", str(config)
    )
    assert code == 0
    assert "refused  16384: max_tokens: 16384 > 8192" in lines["max_tokens"]
    assert lines["max_tokens"].endswith("-> output limit capped at 8192")
    assert "accepted tool emit_turn_summary" in lines["tool_choice"]


def test_unreachable_server_fails_with_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = tmp_path / "config.toml"
    config.write_text("[llm]\nmax_attempts = 1\ntimeout = 5\n", encoding="utf-8")
    with FakeLLMServer() as fake:
        url = fake.openai_base_url  # a port that was just free
    code, lines = _check("-m", "openai:gpt-4o", "--base-url", url, "--config", str(config))
    assert code == 1
    assert "FAILED" in lines["reply"]
    assert "unknown" in lines["temperature"]


def test_offline_has_nothing_to_check() -> None:
    code, lines = _check("-m", "offline")
    assert code == 0
    assert "no server to check" in lines["offline:"]
