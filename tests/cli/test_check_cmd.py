"""`opencode-restore check` against the strict fake server: accepted and refused, one line each."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.llm.server_profile import PROFILE_NAME, ServerProfile, ServerProfiles
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
    server.script = [{}, {"tool": "LIST_ARTIFACTS", "args": {}}]
    code, lines = _check("-m", "openai:o4-mini", "--base-url", server.openai_base_url)
    assert code == 0
    assert "OpenAI o-series" in lines["model"]
    assert "accepted 10240" in lines["max_completion_tokens"]  # 2048 + room to reason
    assert "accepted json_schema TurnSummary (strict)" in lines["response_format"]
    assert "accepted 5 tools" in lines["tools"]
    assert "temperature" not in lines
    assert "ok" in lines["reply"]
    assert "parsed TurnSummary" in lines["reply"]
    assert lines["structured"].split()[2:] == ["json_schema", "(strict)"]
    assert lines["tool"].endswith("native (the model called LIST_ARTIFACTS)")
    body = server.requests[0]["body"]
    # The request a restore would send: schema and tools in one.
    assert body["tools"]
    assert body["response_format"]
    # Then the tools probe: a tool call asked for, the model free to choose.
    probe = server.requests[1]["body"]
    assert "response_format" not in probe
    assert "tool_choice" not in probe
    assert len(server.requests) == 2


def test_unknown_model_reports_each_refusal_and_the_correction(server: FakeLLMServer) -> None:
    code, lines = _check("-m", "openai:acme-next", "--base-url", server.openai_base_url)
    assert code == 0
    assert lines["temperature"].split()[1] == "refused"
    assert "Only the default (1) value is supported. -> leaving it out" in lines["temperature"]
    assert "refused  2048: Unsupported parameter: 'max_tokens'" in lines["max_tokens"]
    assert "accepted 2048 (corrected)" in lines["max_completion_tokens"]
    # The fake's model answers the tools probe in prose, told which tool or not.
    assert lines["tool"].endswith(
        "text protocol (server ignored tools, even when tool_choice named one)"
    )
    assert [r.get("status") for r in server.requests] == [400, 400, None, None, None]


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
    assert lines["structured"].endswith("unknown (the call failed)")
    assert lines["tool"].endswith("unknown (the call failed)")


def test_offline_has_nothing_to_check() -> None:
    code, lines = _check("-m", "offline")
    assert code == 0
    assert "no server to check" in lines["offline:"]


def _profiles() -> dict[str, Any]:
    path = Path(os.environ["OPENCODE_RESTORE_DATA_DIR"]) / PROFILE_NAME
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_llama_cpp_python_works_with_json_object_and_the_text_protocol(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer(profile="llama_cpp_python") as fake:
        code, lines = _check("-m", "openai:smollm2", "--base-url", fake.openai_base_url)
        chat = [r for r in fake.requests if r["path"].endswith("/chat/completions")]
    assert code == 0, lines
    # The 500 naming response_format.type is read as a refusal, not retried as a crash.
    assert lines["response_format"].split()[1] == "refused"
    assert "Input should be 'text' or 'json_object'" in lines["response_format"]
    assert lines["response_format"].endswith(
        "-> asking for json_object with the schema in the prompt"
    )
    assert lines["structured"].split()[2] == "json_object"
    assert "json_schema (strict) refused: response_format.type" in lines["structured"]
    assert "parsed TurnSummary" in lines["reply"]
    # It drops tools unless tool_choice names one: found out, and said so.
    assert lines["tool"].endswith(
        "text protocol (server ignored tools unless tool_choice names one)"
    )
    assert [r.get("status") for r in chat] == [500, None, None, None]
    assert chat[3]["body"]["tool_choice"] == {
        "type": "function",
        "function": {"name": "LIST_ARTIFACTS"},
    }
    # The next run starts where check ended.
    learned = _profiles()["servers"][fake.openai_base_url]["smollm2"]
    assert learned == {"structured_output": "json_object", "tools": "text"}


def test_ollama_without_tools_refuses_them_and_check_still_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeLLMServer(profile="ollama") as fake:
        code, lines = _check("-m", "openai:smollm2", "--base-url", fake.openai_base_url)
        chat = [r for r in fake.requests if r["path"].endswith("/chat/completions")]
    assert code == 0, lines
    assert lines["tools"].endswith(
        "refused  5 tools: registry.ollama.ai/library/smollm2:latest does not support tools "
        "-> the text tool protocol instead"
    )
    assert lines["tool"].endswith(
        "text protocol (tools refused: registry.ollama.ai/library/smollm2:latest does not "
        "support tools)"
    )
    assert lines["structured"].split()[2:] == ["json_schema", "(strict)"]
    assert [r.get("status") for r in chat] == [400, None]  # no tools probe: refused already
    assert "tools" not in chat[1]["body"]


def test_a_read_timeout_is_one_attempt_and_exit_1(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[llm]\ntimeout = 0.5\nmax_attempts = 4\n", encoding="utf-8")
    with FakeLLMServer([{"delay": 2}]) as fake:
        code, lines = _check(
            "-m", "openai:smollm2", "--base-url", fake.openai_base_url, "--config", str(config)
        )
        attempts = len(fake.requests)
    assert code == 1
    assert "FAILED" in lines["reply"]
    assert attempts == 1


def test_check_learns_afresh_and_replaces_what_earlier_runs_learned(
    server: FakeLLMServer,
) -> None:
    url = server.openai_base_url
    ServerProfiles.default().remember(url, "gpt-4o", ServerProfile("text", "text"))
    server.script = [{}, {"tool": "LIST_ARTIFACTS", "args": {}}]
    code, lines = _check("-m", "openai:gpt-4o", "--base-url", url)
    assert code == 0
    assert lines["structured"].split()[2:] == ["json_schema", "(strict)"]
    assert lines["tool"].endswith("native (the model called LIST_ARTIFACTS)")
    assert server.requests[0]["body"]["response_format"]["type"] == "json_schema"
    learned = _profiles()["servers"][url]["gpt-4o"]
    assert learned == {"structured_output": "json_schema_strict", "tools": "native"}


def test_tools_ignored_and_a_failed_forced_probe_still_pass() -> None:
    script: list[dict[str, Any]] = [{}, {"text": "I would list the files."}, {"status": 503}]
    with FakeLLMServer(script) as fake:
        code, lines = _check("-m", "openai:smollm2", "--base-url", fake.openai_base_url)
        statuses = [r.get("status") for r in fake.requests]
    assert code == 0
    assert lines["tool"].endswith("text protocol (server ignored tools)")
    assert statuses == [None, None, 503]  # one attempt per probe, the 503 too
