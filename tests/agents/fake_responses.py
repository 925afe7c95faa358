"""The OpenAI Responses API for the fake model: what Codex speaks (``wire_api = "responses"``).

`ResponsesModel` is `FakeModel` answering ``POST .../responses`` too: a streamed reply
(``response.created``, one ``response.output_item.done`` per item,
``response.completed``), by default one text message. A test overrides
`ResponsesModel.items` to answer with tool calls (`call_item`). `codex_config` is the
``config.toml`` that points Codex at it, offline.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tests.agents.fake_model import REPLY, SUMMARY, FakeModel, _sse

_USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 10,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 110,
}
_counter = iter(range(1, 1_000_000))
_counter_lock = threading.Lock()


def _next_id(prefix: str) -> str:
    with _counter_lock:
        return f"{prefix}_{next(_counter)}"


def text_item(text: str) -> dict[str, Any]:
    """An assistant message holding ``text``."""
    return {
        "type": "message",
        "id": _next_id("msg"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call_item(name: str, arguments: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """A function call of tool ``name`` (of a ``namespace`` tool: Codex offers each MCP
    server's tools as one, ``mcp__SERVER``)."""
    item = {
        "type": "function_call",
        "id": _next_id("fc"),
        "call_id": _next_id("call"),
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    return {**item, "namespace": namespace} if namespace else item


def responses_stream(items: list[dict[str, Any]], model: str) -> bytes:
    """The Responses API event stream of one response made of ``items``."""
    response: dict[str, Any] = {
        "id": _next_id("resp"),
        "object": "response",
        "created_at": 0,
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("response.created", {"type": "response.created", "response": response}),
    ]
    for index, item in enumerate(items):
        events.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": index, "item": item},
            )
        )
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": text,
                    },
                )
            )
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        )
    done = {**response, "status": "completed", "output": items, "usage": _USAGE}
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return _sse(events)


def tool_names(body: dict[str, Any]) -> set[str]:
    """The names of the tools a Responses request offers (functions, and namespaces'
    functions as ``namespace.name`` too)."""
    names: set[str] = set()
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("name"), str):
            names.add(tool["name"])
        for inner in tool.get("tools") or []:
            if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                names.add(inner["name"])
                names.add(f"{tool.get('name')}.{inner['name']}")
    return names


def function_outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``function_call_output`` items of a request's input."""
    return [
        item
        for item in body.get("input") or []
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


class ResponsesModel(FakeModel):
    """`FakeModel` that also answers the Responses API."""

    def items(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """What one response holds; by default a short text (a summary when asked to
        compact)."""
        text = json.dumps(body.get("input", [])[-1:]).lower()
        summary = "summar" in text and ("compact" in text or "conversation" in text)
        return [text_item(SUMMARY if summary else REPLY)]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if path.split("?")[0].endswith("/responses"):
            with self._lock:
                self.requests.append((path, body))
            model = str(body.get("model", "fake"))
            return 200, "text/event-stream", responses_stream(self.items(body), model)
        return super().answer(path, body)


def codex_config(url: str, extra: str = "") -> str:
    """A ``config.toml`` for Codex with the fake model as its only provider, nothing
    fetched, no sandbox and no approvals (the tests' HOME is thrown away)."""
    return (
        'model = "fake-model"\n'
        'model_provider = "fake"\n'
        'approval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
        "check_for_update_on_startup = false\n"
        "[analytics]\nenabled = false\n"
        "[feedback]\nenabled = false\n"
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "FAKE_API_KEY"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n" + extra
    )
