"""HTTP-level fakes of both SDKs' wire formats, injected through `http_client`.

Every request body a `Recorder` receives is validated against the SDKs' own parameter
types (`tests.fakes.wire_types`): one that does not fit is answered 400 and fails the
test that sent it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from opencode_restore.llm.retry import RetryPolicy
from tests.fakes.sse import completion_events, wants_usage
from tests.fakes.wire_types import request_problems

Handler = Callable[[httpx2.Request], httpx2.Response]
# Bodies the SDK types refused during the current test: (path, problems).
INVALID_BODIES: list[tuple[str, list[str]]] = []


@pytest.fixture(autouse=True)
def _request_bodies_fit_the_sdk_types() -> Iterator[None]:
    INVALID_BODIES.clear()
    yield
    assert not INVALID_BODIES, f"request bodies the SDK types refuse: {INVALID_BODIES}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _fake_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


def streamed_if_asked(request: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
    """`response` as a local server streams it when `request` asks for a stream (the
    provider streams from local servers), else unchanged."""
    if not request.url.path.endswith("/chat/completions") or response.status_code != 200:
        return response
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return response  # scripted as events already
    body = json.loads(request.content)
    if body.get("stream") is not True:
        return response
    events = completion_events(response.json(), include_usage=wants_usage(body))
    return httpx2.Response(200, content=events, headers={"content-type": "text/event-stream"})


@dataclass
class Recorder:
    """A MockTransport handler replaying `responses` and keeping every request."""

    responses: list[httpx2.Response | Exception]
    requests: list[httpx2.Request] = field(default_factory=list)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        path = request.url.path
        if path.endswith(("/chat/completions", "/messages")):
            problems = request_problems(path, json.loads(request.content))
            if problems:
                INVALID_BODIES.append((path, problems))
                return httpx2.Response(400, json={"error": {"message": "; ".join(problems)}})
        step = self.responses.pop(0)
        if isinstance(step, Exception):
            raise step
        return streamed_if_asked(request, step)

    def body(self, index: int = -1) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.requests[index].content)
        return result

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))


@dataclass
class SleepLog:
    """Stands in for anyio.sleep: records the waits, never waits."""

    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> SleepLog:
    return SleepLog()


@pytest.fixture
def policy(sleeps: SleepLog) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=3, multiplier=0.01, max_wait=0.05, retry_after_cap=5.0, sleep=sleeps
    )


def openai_reply(
    content: str | None = "hello",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    prompt: int = 100,
    completion: int = 20,
    cached: int = 0,
    model: str = "gpt-test-2026",
    finish_reason: str = "stop",
) -> httpx2.Response:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        },
    )


def anthropic_reply(
    content: list[dict[str, Any]] | None = None,
    *,
    input_tokens: int = 50,
    output_tokens: int = 10,
    cache_read: int | None = 0,
    cache_write: int | None = 0,
    stop_reason: str = "end_turn",
    model: str = "claude-test-4",
) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content if content is not None else [{"type": "text", "text": "hello"}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        },
    )


def openai_error(
    status: int, message: str, headers: dict[str, str] | None = None
) -> httpx2.Response:
    body = {"error": {"message": message, "type": "error", "code": None}}
    return httpx2.Response(status, json=body, headers=headers or {})


def anthropic_error(
    status: int, message: str, headers: dict[str, str] | None = None
) -> httpx2.Response:
    body = {"type": "error", "error": {"type": "api_error", "message": message}}
    return httpx2.Response(status, json=body, headers=headers or {})
