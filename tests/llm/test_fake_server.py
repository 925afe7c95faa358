"""The real SDKs over real HTTP (127.0.0.1) against tests/fakes/fake_llm_server.py."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import (
    ChatMessage,
    LLMRequest,
    Provider,
    SystemBlock,
    ToolCallRequest,
    ToolSpec,
)
from opencode_restore.llm.registry import close_provider, get_provider
from opencode_restore.llm.retry import RetryPolicy, call_with_retry
from opencode_restore.llm.settings import ProviderSettings
from tests.fakes.fake_llm_server import FakeLLMServer, running
from tests.fakes.tokens import tokens
from tests.llm.conftest import SleepLog
from tests.waits import RUNAWAY_S

pytestmark = pytest.mark.anyio

FAKE_SERVER = Path(__file__).resolve().parent.parent / "fakes" / "fake_llm_server.py"


class Finding(BaseModel):
    title: str
    lines: list[int]
    severity: int = 1


OPENED: list[Provider] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    # Real sockets: pools must close while the test's event loop is still running.
    yield
    while OPENED:
        await close_provider(OPENED.pop())


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def openai(fake: FakeLLMServer | str, **settings: Any) -> Provider:
    url = fake if isinstance(fake, str) else fake.openai_base_url
    OPENED.append(get_provider("openai:fake-gpt", ProviderSettings(base_url=url, **settings)))
    return OPENED[-1]


def anthropic(fake: FakeLLMServer, **settings: Any) -> Provider:
    options = ProviderSettings(base_url=fake.base_url, **settings)
    OPENED.append(get_provider("anthropic:fake-claude", options))
    return OPENED[-1]


def ask(schema: type[BaseModel] | None = None, **kwargs: Any) -> LLMRequest:
    return LLMRequest(
        messages=[ChatMessage("user", "Summarize turn 1")], response_schema=schema, **kwargs
    )


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_scripted_json_step_is_parsed(server: FakeLLMServer, make: Any) -> None:
    server.script = [{"json": {"title": "parser fixed", "lines": [3, 4]}}]
    result = await make(server).complete(ask(Finding))
    assert result.parsed == Finding(title="parser fixed", lines=[3, 4])
    assert result.usage.input > 0
    assert result.usage.output > 0


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_auto_mode_answers_any_schema(server: FakeLLMServer, make: Any) -> None:
    provider = make(server)
    for _ in range(3):
        result = await provider.complete(ask(Finding))
        # Strict schemas carry no defaults: the minimal answer writes every field.
        assert result.parsed == Finding(title="x", lines=[], severity=0)
    plain = await provider.complete(ask())
    assert plain.text == "auto reply"


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_tool_step(server: FakeLLMServer, make: Any) -> None:
    server.script = [{"tool": "search_log", "args": {"pattern": "Traceback"}}, {"text": "done"}]
    tools = [ToolSpec("search_log", "Search the log", {"type": "object", "properties": {}})]
    provider = make(server)
    first = await provider.complete(ask(tools=tools))
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("search_log", {"pattern": "Traceback"})
    ]
    call = first.tool_calls[0]
    history = [
        ChatMessage("user", "find errors"),
        ChatMessage(
            "assistant", "", tool_calls=[ToolCallRequest(call.id, call.name, call.arguments)]
        ),
        ChatMessage("tool", "no match", tool_call_id=call.id),
    ]
    second = await provider.complete(LLMRequest(messages=history, tools=tools))
    assert second.text == "done"


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_429_then_success_over_http(
    server: FakeLLMServer, make: Any, sleeps: SleepLog
) -> None:
    server.script = [{"status": 429, "headers": {"retry-after": "1"}}, {"text": "ok"}]
    policy = RetryPolicy(max_attempts=3, sleep=sleeps)
    result = await call_with_retry(make(server), ask(), policy)
    assert (result.text, result.attempts) == ("ok", 2)
    assert sleeps.waits == [1.0]
    assert len(server.requests) == 2
    assert all(r["headers"].get("x-stainless-retry-count") == "0" for r in server.requests)


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_errors_until_give_up_carry_the_server_message(
    server: FakeLLMServer, make: Any, sleeps: SleepLog
) -> None:
    server.script = [{"status": 503}, {"status": 503}]
    with pytest.raises(ProviderError) as info:
        await call_with_retry(make(server), ask(), RetryPolicy(max_attempts=2, sleep=sleeps))
    assert info.value.status == 503
    assert str(info.value).endswith("(HTTP 503): fake error 503")


async def test_custom_error_body(server: FakeLLMServer) -> None:
    server.script = [{"status": 400, "body": {"error": {"message": "context too long"}}}]
    with pytest.raises(ProviderError, match="context too long"):
        await call_with_retry(openai(server), ask(), RetryPolicy(max_attempts=1))


async def test_delay_beyond_the_timeout(server: FakeLLMServer) -> None:
    server.script = [{"delay": 0.6}]
    with pytest.raises(ProviderError, match="timed out"):
        await call_with_retry(openai(server, timeout=0.1), ask(), RetryPolicy(max_attempts=1))


def _closed_port() -> int:
    # Bound, then closed: nothing listens there, so a connection is refused at once.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_refused_connection_names_the_address_not_a_timeout(
    kind: str, sleeps: SleepLog
) -> None:
    port = _closed_port()
    base_url = f"http://127.0.0.1:{port}" + ("/v1" if kind == "openai" else "")
    OPENED.append(get_provider(f"{kind}:m", ProviderSettings(base_url=base_url)))
    with pytest.raises(ProviderError) as info:
        await call_with_retry(OPENED[-1], ask(), RetryPolicy(max_attempts=2, sleep=sleeps))
    message = str(info.value)
    assert f"connection refused by 127.0.0.1:{port}" in message
    # The aiohttp transport's own words: a timeout, and TLS on a plain-http URL.
    assert "timed out" not in message
    assert "ssl" not in message
    assert len(sleeps.waits) == 1  # still retried: the server may be starting


async def test_anthropic_cache_accounting(server: FakeLLMServer) -> None:
    rules = "Summarize faithfully. " * 100
    provider = anthropic(server)

    def turn(text: str) -> LLMRequest:
        return LLMRequest(
            system=[SystemBlock(rules, cache_breakpoint=True)],
            messages=[
                ChatMessage("user", "header", cache_breakpoint=True),
                ChatMessage("user", text),
            ],
        )

    first = await provider.complete(turn("turn one"))
    second = await provider.complete(turn("turn two, longer"))
    prefix = tokens(len(rules)) + tokens(len("header"))
    assert (first.usage.cache_read, first.usage.cache_write) == (0, prefix)
    assert (second.usage.cache_read, second.usage.cache_write) == (prefix, 0)
    assert second.usage.input == tokens(len("turn two, longer"))
    # A changed header still hits the system-prompt breakpoint.
    changed = turn("turn three")
    changed.messages[0].content = "new header"
    third = await provider.complete(changed)
    assert third.usage.cache_read == tokens(len(rules))
    assert third.usage.cache_write == tokens(len("new header"))


async def test_openai_reports_a_shared_prefix_as_cached(server: FakeLLMServer) -> None:
    provider = openai(server)
    context = "stable session context " * 300
    first = await provider.complete(LLMRequest(messages=[ChatMessage("user", context + "turn 1")]))
    second = await provider.complete(LLMRequest(messages=[ChatMessage("user", context + "turn 2")]))
    assert first.usage.cache_read == 0
    assert second.usage.cache_read >= 1024
    assert second.usage.cache_read % 128 == 0
    short = await provider.complete(LLMRequest(messages=[ChatMessage("user", "tiny")]))
    assert short.usage.cache_read == 0


async def test_log_and_masked_headers(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with FakeLLMServer([{"text": "a"}], log_path=log, latency=0.05) as fake:
        started = time.perf_counter()
        await openai(fake).complete(ask())
        assert time.perf_counter() - started >= 0.05
        await anthropic(fake).complete(ask())
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["path"] for e in entries] == ["/v1/chat/completions", "/v1/messages"]
    assert entries[0]["body"]["model"] == "fake-gpt"
    assert entries[0]["headers"]["authorization"] == "***"
    anthropic_headers = entries[1]["headers"]
    assert "***" in (anthropic_headers.get("x-api-key"), anthropic_headers.get("authorization"))
    assert "sk-test-openai" not in log.read_text()


def post(url: str, data: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


async def test_auth_routes_and_bad_bodies() -> None:
    with running() as base_url:
        auth = {"authorization": "Bearer k"}
        assert post(f"{base_url}/v1/chat/completions", b"{}", {})[0] == 401
        assert post(f"{base_url}/v1/other", b"{}", auth)[0] == 404
        assert post(f"{base_url}/v1/messages", b"not json", {"x-api-key": "k"})[0] == 400
        minimal = b'{"model": "m", "messages": []}'
        status, body = post(f"{base_url}/chat/completions", minimal, auth)
        assert status == 200
        assert body["choices"][0]["message"]["content"] == "auto reply"
        status, body = post(
            f"{base_url}/v1/messages",
            json.dumps(
                {
                    "model": "m",
                    "max_tokens": 10,
                    "system": "plain",
                    "messages": [{"role": "user", "content": "hi"}],
                    "tool_choice": {"type": "tool", "name": "missing"},
                }
            ).encode(),
            {"x-api-key": "k"},
        )
        assert status == 200
        assert body["content"][0]["input"] == {}
        anthropic_min = {"model": "m", "max_tokens": 10, "messages": []}
        status, body = post(
            f"{base_url}/v1/messages", json.dumps(anthropic_min).encode(), {"x-api-key": "k"}
        )
        assert body["content"] == [{"type": "text", "text": "auto reply"}]
        # A body the SDK's own types refuse (an unknown key) gets a 400, as from the API.
        status, body = post(
            f"{base_url}/v1/messages",
            json.dumps({**anthropic_min, "__": 1}).encode(),
            {"x-api-key": "k"},
        )
        assert status == 400
        assert body["type"] == "error"
        assert "Extra inputs are not permitted" in body["error"]["message"]


async def test_json_step_without_a_forced_tool_is_text_for_anthropic() -> None:
    with running([{"json": {"a": 1}}]) as base_url:
        minimal = b'{"model": "m", "max_tokens": 5, "messages": []}'
        status, body = post(f"{base_url}/v1/messages", minimal, {"x-api-key": "k"})
    assert status == 200
    assert body["content"] == [{"type": "text", "text": '{"a": 1}'}]


@pytest.mark.slow
async def test_subprocess_mode(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"status": 500}, {"json": {"title": "t", "lines": [1]}}]))
    port_file, log = tmp_path / "port", tmp_path / "log.jsonl"
    process = subprocess.Popen(
        [
            sys.executable,
            str(FAKE_SERVER),
            "--port-file",
            str(port_file),
            "--script",
            str(script),
            "--log",
            str(log),
        ]
    )
    try:
        # The server imports the SDKs' parameter types first: seconds on a loaded machine.
        deadline = time.monotonic() + RUNAWAY_S
        while not port_file.exists():
            assert process.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        provider = openai(f"http://127.0.0.1:{port_file.read_text()}/v1")
        policy = RetryPolicy(max_attempts=2, multiplier=0.01, max_wait=0.01)
        result = await call_with_retry(provider, ask(Finding), policy)
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    assert result.parsed == Finding(title="t", lines=[1])
    assert result.attempts == 2
    assert len(log.read_text().splitlines()) == 2


def _chat(model: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}


def _strict_answer(body: dict[str, Any], path: str = "/v1/chat/completions") -> Any:
    with FakeLLMServer(strict=True, reasoning_models=["acme-*"]) as server:
        return server.handle(path, {}, body)


async def test_strict_mode_refuses_sampling_and_max_tokens_of_reasoning_models_verbatim() -> None:
    status, _, body = _strict_answer(_chat("gpt-5.1", temperature=0.0, max_tokens=10))
    assert status == 400
    assert body == {
        "error": {
            "message": "Unsupported value: 'temperature' does not support 0.0 with this model. "
            "Only the default (1) value is supported.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "unsupported_value",
        }
    }
    status, _, body = _strict_answer(_chat("acme-think", max_tokens=10))
    assert (status, body["error"]["param"], body["error"]["code"]) == (
        400,
        "max_tokens",
        "unsupported_parameter",
    )
    assert _strict_answer(_chat("o4-mini", max_completion_tokens=10))[0] == 200
    assert _strict_answer(_chat("gpt-4o", temperature=0.0, max_tokens=10))[0] == 200


async def test_strict_mode_refuses_reasoning_effort_for_chat_models_and_loose_schemas() -> None:
    status, _, body = _strict_answer(_chat("gpt-4o", reasoning_effort="low"))
    assert (status, body["error"]["message"], body["error"]["param"]) == (
        400,
        "Unrecognized request argument supplied: reasoning_effort",
        None,
    )
    loose = {
        "type": "json_schema",
        "json_schema": {"name": "Finding", "schema": Finding.model_json_schema(), "strict": True},
    }
    status, _, body = _strict_answer(_chat("gpt-4o", response_format=loose))
    assert status == 400
    assert body["error"]["message"].startswith("Invalid schema for response_format 'Finding'")
    assert body["error"]["param"] == "response_format"


async def test_strict_mode_refuses_anthropic_cache_blocks_and_output_limits_verbatim() -> None:
    block = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    base = {"model": "claude-sonnet-4-5", "max_tokens": 100}
    five = {**base, "messages": [{"role": "user", "content": [block] * 5}]}
    status, _, body = _strict_answer(five, "/v1/messages")
    assert (status, body["error"]["message"]) == (
        400,
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    )
    haiku = {"model": "claude-3-5-haiku-20241022", "max_tokens": 16384}
    haiku["messages"] = [{"role": "user", "content": "hi"}]
    status, _, body = _strict_answer(haiku, "/v1/messages")
    assert body["error"]["message"] == (
        "max_tokens: 16384 > 8192, which is the maximum allowed number of output tokens "
        "for claude-3-5-haiku-20241022"
    )
    # anthropic 2.x has no temperature: the SDK's own types refuse it.
    status, _, body = _strict_answer(
        {**base, "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0},
        "/v1/messages",
    )
    assert status == 400
    assert "temperature: Extra inputs are not permitted" in body["error"]["message"]
