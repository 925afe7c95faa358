"""Evidence search over real HTTP: the fake LLM server answers with native tool calls in
the OpenAI and the Anthropic wire formats, driven through the real SDKs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.base import Provider
from opencode_restore.llm.registry import close_provider, get_provider
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.pipeline.restoration import Restoration
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.sources import open_session
from tests.fakes.fake_llm_server import FakeLLMServer

CLAUDE = "claude-code/recorded/print-continue/d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"
TURNS = 3


@pytest.fixture(autouse=True)
def _fake_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


def make(kind: str, server: FakeLLMServer) -> Provider:
    url = server.openai_base_url if kind == "openai" else server.base_url
    return get_provider(f"{kind}:fake-model", ProviderSettings(base_url=url))


def restore(kind: str, server: FakeLLMServer, fixtures: Path, workspace: Path) -> Restoration:
    cfg = load_config(env={})
    cfg.llm.max_attempts = 1
    session = open_session([fixtures / CLAUDE], WarningSink(), None)

    async def go() -> Restoration:
        provider = make(kind, server)
        try:
            options = RestoreOptions(workspace=str(workspace))
            return await restore_session(session, cfg, provider, options=options)
        finally:
            await close_provider(provider)

    return anyio.run(go)


def steps() -> list[dict[str, Any]]:
    """Auto answers for the turns, three evidence rounds, an auto synthesis."""
    return [
        *([{}] * TURNS),
        {"tool": "SEARCH_LOG", "args": {"pattern": "Ran 2 tests", "context_lines": 0}},
        {"tool": "READ_FILE", "args": {"path": "greet.py", "start_line": 1, "end_line": 2}},
        {"tool": "COMPLETE_EVIDENCE_SEARCH", "args": {"findings": "Both tests passed."}},
    ]


def model_calls(server: FakeLLMServer) -> list[dict[str, Any]]:
    """The model calls the server logged (an OpenAI client first asks /v1/models for the
    window)."""
    return [q for q in server.requests if q["path"].endswith(("/chat/completions", "/messages"))]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "greet.py").write_text('"""Tiny greeting CLI."""\nimport argparse\n')
    return tmp_path


def test_openai_native_tool_calls(fixtures: Path, workspace: Path) -> None:
    with FakeLLMServer(steps()) as server:
        r = restore("openai", server, fixtures, workspace)
    bodies = [q["body"] for q in model_calls(server)]
    evidence = bodies[TURNS : TURNS + 3]
    names = [t["function"]["name"] for t in evidence[0]["tools"]]
    assert names == [
        "SEARCH_LOG",
        "SEARCH_FILE",
        "READ_FILE",
        "LIST_ARTIFACTS",
        "COMPLETE_EVIDENCE_SEARCH",
    ]
    assert "tools" not in bodies[-1]  # the synthesis is a structured call
    replay = evidence[2]["messages"]
    calls = [m for m in replay if m["role"] == "assistant" and m.get("tool_calls")]
    assert [c["tool_calls"][0]["function"]["name"] for c in calls] == ["SEARCH_LOG", "READ_FILE"]
    assert json.loads(calls[0]["tool_calls"][0]["function"]["arguments"])["pattern"] == (
        "Ran 2 tests"
    )
    answers = [m for m in replay if m["role"] == "tool"]
    # The fake names a call by the number of the request it answers.
    numbers = [q["n"] for q in model_calls(server)][TURNS : TURNS + 2]
    assert [a["tool_call_id"] for a in answers] == [f"call_fake_{n}" for n in numbers]
    assert "Ran 2 tests" in answers[0]["content"]
    assert "2 | import argparse" in answers[1]["content"]
    assert [e.tool for e in r.evidence] == ["SEARCH_LOG", "READ_FILE", "COMPLETE_EVIDENCE_SEARCH"]
    assert "<evidence>" in bodies[-1]["messages"][-1]["content"]
    assert r.usage.calls == TURNS + 3 + 1


def test_anthropic_native_tool_use(fixtures: Path, workspace: Path) -> None:
    with FakeLLMServer(steps()) as server:
        r = restore("anthropic", server, fixtures, workspace)
    bodies = [q["body"] for q in model_calls(server)]
    evidence = bodies[TURNS : TURNS + 3]
    assert [t["name"] for t in evidence[0]["tools"]][:3] == [
        "SEARCH_LOG",
        "SEARCH_FILE",
        "READ_FILE",
    ]
    assert "tool_choice" not in evidence[0]
    replay = evidence[2]["messages"]
    uses = [b for m in replay if m["role"] == "assistant" for b in m["content"]]
    assert [b["name"] for b in uses if b["type"] == "tool_use"] == ["SEARCH_LOG", "READ_FILE"]
    results = [
        b for m in replay if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"
    ]
    assert [b["tool_use_id"] for b in results] == [
        f"toolu_fake_{TURNS + 1}",
        f"toolu_fake_{TURNS + 2}",
    ]
    assert "2 | import argparse" in results[1]["content"]
    assert [e.tool for e in r.evidence] == ["SEARCH_LOG", "READ_FILE", "COMPLETE_EVIDENCE_SEARCH"]
    assert r.evidence[-1].result == "Both tests passed."
    assert not r.failed_turns


def test_http_failure_during_the_search_does_not_fail_the_restore(
    fixtures: Path, workspace: Path
) -> None:
    script: list[dict[str, Any]] = [
        *([{}] * TURNS),
        {"tool": "LIST_ARTIFACTS", "args": {}},
        {"status": 500},
    ]
    with FakeLLMServer(script) as server:
        r = restore("openai", server, fixtures, workspace)
    assert [e.tool for e in r.evidence] == ["LIST_ARTIFACTS"]
    assert any(w.startswith("evidence search stopped early") for w in r.warnings)
    assert r.summary is not None
    assert not r.failed_turns
