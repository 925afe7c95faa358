"""The synthesis's candidates over real HTTP: the fake LLM server (strict, as the real APIs)
gets the candidate list in the request and the `rejected_candidates` field in the schema,
answers with a rejection in the OpenAI and the Anthropic wire formats, driven through the
real SDKs; the restore honours it and keeps everything else the rules found."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.llm.registry import close_provider, get_provider
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.pipeline.restoration import Restoration
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from tests.fakes.fake_llm_server import FakeLLMServer

from .test_synthesizer import offered_in, restore, session, texts, turn

HEAD = "Candidate facts found by rules over the log"


@pytest.fixture(autouse=True)
def _fake_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


@pytest.fixture(scope="module")
def listed() -> list[dict[str, str]]:
    """The candidates of the test session, as the scripted provider was offered them."""
    probe = ScriptedProvider([turn(1), turn(2)], auto=True)
    restore(probe)
    return offered_in(probe)


def restore_over_http(kind: str, server: FakeLLMServer) -> Restoration:
    config = load_config(env={})
    config.llm.max_attempts = 1
    url = server.openai_base_url if kind == "openai" else server.base_url

    async def go() -> Restoration:
        provider = get_provider(f"{kind}:fake-model", ProviderSettings(base_url=url))
        try:
            options = RestoreOptions(skip_evidence_search=True)
            return await restore_session(session(), config, provider, options=options)
        finally:
            await close_provider(provider)

    return anyio.run(go)


def _task_text(kind: str, body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    if isinstance(last, str):
        return last
    return "\n".join(b.get("text", "") for b in last if isinstance(b, dict))


def _schema(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    if kind == "openai":
        schema: dict[str, Any] = body["response_format"]["json_schema"]["schema"]
        return schema
    [tool] = [t for t in body["tools"] if t["name"] == body["tool_choice"]["name"]]
    return dict(tool["input_schema"])


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_model_rejects_a_candidate_over_http(kind: str, listed: list[dict[str, str]]) -> None:
    decision = next(c for c in listed if c["section"] == "key_decisions")
    answer = {
        "goal": "Add a --shout flag to greet.py [M1]",
        "rejected_candidates": [
            {"id": decision["id"], "reason": "the user only said commit [M11]"}
        ],
    }
    with FakeLLMServer([{}, {}, {"json": answer}], strict=True) as server:
        r = restore_over_http(kind, server)
    assert not server.invalid
    # Nothing refused (a refusal is logged with its status): the schema is strict-valid.
    # The model calls only (an OpenAI client first asks /v1/models for the window).
    calls = [q for q in server.requests if q["path"].endswith(("/chat/completions", "/messages"))]
    assert len(calls) == 3
    assert not any("status" in q for q in calls)
    body = calls[-1]["body"]
    task = _task_text(kind, body)
    assert HEAD in task
    assert f'{{"id":"{decision["id"]}","section":"key_decisions"' in task
    # Only the list's own characters: the ids and sections the rules gave.
    start = task.index("\n", task.index(HEAD)) + 1
    assert json.loads(task[start : task.index("\n\n", start)]) == listed
    schema = _schema(kind, body)
    assert "rejected_candidates" in schema["required"]
    assert "ignored_rejections" not in schema["properties"]

    assert not r.failed_turns
    assert r.summary.key_decisions == []
    [rejected] = r.summary.rejected_candidates
    assert (rejected.id, rejected.reason) == (decision["id"], "the user only said commit [M11]")
    offline = restore(OfflineProvider()).summary
    got = texts(r.summary)
    for item in texts(offline):
        if not item.startswith(offline.key_decisions[0].decision):
            assert item in got, item
