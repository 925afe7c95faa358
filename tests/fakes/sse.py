"""A Chat Completions reply as the server-sent events of a streamed one.

The fakes answer whole replies; a request with `"stream": true` gets the same reply cut
into `chat.completion.chunk` events, the way OpenAI-compatible servers send them: a
first chunk with the role, the content a few characters at a time, each tool call as a
first delta with its id and name and then its arguments in pieces (by `index`), a last
chunk with the finish reason, the usage in a chunk of its own (only when
`stream_options.include_usage` asks, as the real API does; llama-cpp-python never sends
it), then `data: [DONE]`.
"""

from __future__ import annotations

import json
from typing import Any

#: Characters per content or arguments delta: several deltas even for short replies.
PIECE = 7


def _pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)] or [""]


def completion_events(completion: dict[str, Any], *, include_usage: bool) -> bytes:
    """The SSE body of a streamed `completion` (a `chat.completion` object)."""
    base = {
        "id": completion.get("id", "chatcmpl-stream"),
        "object": "chat.completion.chunk",
        "created": completion.get("created", 0),
        "model": completion.get("model", ""),
    }
    chunks: list[dict[str, Any]] = []

    def delta(choice: int, body: dict[str, Any], finish: str | None = None) -> None:
        chunks.append(
            {**base, "choices": [{"index": choice, "delta": body, "finish_reason": finish}]}
        )

    for choice in completion.get("choices", []):
        index = choice.get("index", 0)
        message = choice.get("message") or {}
        delta(index, {"role": "assistant", "content": ""})
        for piece in _pieces(message.get("content") or "") if message.get("content") else []:
            delta(index, {"content": piece})
        for number, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function", {})
            arguments = _pieces(function.get("arguments", ""))
            delta(
                index,
                {
                    "tool_calls": [
                        {
                            "index": number,
                            "id": call.get("id"),
                            "type": "function",
                            "function": {"name": function.get("name"), "arguments": arguments[0]},
                        }
                    ]
                },
            )
            for piece in arguments[1:]:
                delta(index, {"tool_calls": [{"index": number, "function": {"arguments": piece}}]})
        delta(index, {}, choice.get("finish_reason") or "stop")
    if include_usage and completion.get("usage") is not None:
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def wants_usage(body: dict[str, Any]) -> bool:
    """Whether a streamed request asked for the usage chunk."""
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True
