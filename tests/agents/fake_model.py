"""A streaming fake model for the real agents: Anthropic Messages and OpenAI Chat Completions.

Claude Code and opencode stream their requests (SSE); this server answers every one
with a short text (a compaction request with a short summary), and keeps each request
body so a test can look at what the agent sent after a compaction. Stdlib only, on
127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "Noted. The greeting CLI change is done."
SUMMARY = "Summary: the user asked for a --shout flag in greet.py; it was added and tested."


def _is_compaction(body: dict[str, Any]) -> bool:
    text = json.dumps(body.get("messages", [])[-1:]).lower()
    return "summar" in text and ("compact" in text or "conversation" in text)


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def _wants_tool(body: dict[str, Any]) -> bool:
    """Claude Code: answer a typed request with one Bash call first (a real agent turn has
    tool calls, and Claude Code compacts nothing shorter)."""
    names = {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
    messages = body.get("messages") or [{}]
    last = messages[-1]
    content = last.get("content") if isinstance(last, dict) else None
    has_result = isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )
    return "Bash" in names and last.get("role") == "user" and not has_result


def anthropic_tool_stream(
    model: str, name: str = "Bash", arguments: dict[str, Any] | None = None
) -> bytes:
    """The Messages API event stream of one tool call (default: Bash ``ls``)."""
    message: dict[str, Any] = {
        "id": "msg_fake_tool",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 10},
    }
    call = {"type": "tool_use", "id": f"toolu_{threading.get_ident()}", "name": name, "input": {}}
    args = json.dumps(arguments or {"command": "ls", "description": "List the files"})
    return _sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": call},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": args},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 10},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def anthropic_stream(text: str, model: str) -> bytes:
    """The Messages API event stream of one text reply."""
    usage = {"input_tokens": 100, "output_tokens": 10}
    message: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return _sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 10},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def openai_stream(text: str, model: str) -> bytes:
    """The Chat Completions chunk stream of one text reply."""
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    chunks: list[tuple[str | None, dict[str, Any] | str]] = [
        (
            None,
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        ),
        (
            None,
            {
                **base,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            },
        ),
        (None, "[DONE]"),
    ]
    return _sse(chunks)


class FakeModel:
    """The server; ``requests`` holds ``(path, body)`` of every POST, oldest first."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        """Status, content type and body for one request."""
        with self._lock:
            self.requests.append((path, body))
        model = str(body.get("model", "fake"))
        text = SUMMARY if _is_compaction(body) else REPLY
        if path.split("?")[0].endswith("/count_tokens"):
            return 200, "application/json", b'{"input_tokens": 100}'
        if path.split("?")[0].endswith("/messages"):
            if body.get("stream") and not _is_compaction(body) and _wants_tool(body):
                return 200, "text/event-stream", anthropic_tool_stream(model)
            if body.get("stream"):
                return 200, "text/event-stream", anthropic_stream(text, model)
            reply: dict[str, Any] = {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 10},
            }
            return 200, "application/json", json.dumps(reply).encode()
        if path.split("?")[0].endswith("/chat/completions"):
            if body.get("stream"):
                return 200, "text/event-stream", openai_stream(text, model)
            reply = {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }
            return 200, "application/json", json.dumps(reply).encode()
        return 404, "application/json", b'{"error": {"message": "not here"}}'


def _handler(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._send(404, "application/json", b'{"error": {"message": "not here"}}')

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(size) if size else b""
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            self._send(*model.answer(self.path, body if isinstance(body, dict) else {}))

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
