"""The Gemini API for the fake model: generateContent, streamGenerateContent, countTokens.

Gemini CLI (``GOOGLE_GEMINI_BASE_URL`` pointing here, any ``GEMINI_API_KEY``) posts to
``/v1beta/models/<model>:streamGenerateContent?alt=sse`` for the chat and to
``:generateContent`` for its helpers (a ``/compress`` summary and its check, the session
title, JSON classifiers). Every answer is a short text: a ``<state_snapshot>`` with
``SUMMARY`` for a compression, ``{}`` where a JSON answer is asked for, ``REPLY`` otherwise.
Requests are kept as ``FakeModel`` keeps them. Stdlib only, on 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

from tests.agents.fake_model import REPLY, SUMMARY, FakeModel

#: The model Gemini CLI is told to use (``--model``).
MODEL = "gemini-2.5-flash"
#: A prompt size over 0.61's auto-compression threshold (half of the model's 1,048,576
#: tokens): the request after a reply reporting it is compressed first, with no /compress.
OVERFLOW_TOKENS = 900_000


def texts(body: dict[str, Any]) -> str:
    """Every text part of a request's ``contents`` and system instruction, joined."""
    parts: list[str] = []
    blocks = list(body.get("contents") or [])
    system = body.get("systemInstruction") or body.get("system_instruction")
    if isinstance(system, dict):
        blocks.append(system)
    for block in blocks:
        for part in block.get("parts") or [] if isinstance(block, dict) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    return "\n".join(parts)


def last_text(body: dict[str, Any]) -> str:
    """The text parts of the request's last content (the prompt, or a tool's answer)."""
    contents = body.get("contents") or [{}]
    return texts({"contents": contents[-1:]})


def is_compression(body: dict[str, Any]) -> bool:
    """The summary (or its check) Gemini CLI asks for on ``/compress``: no tools, and the
    last content asks for a ``<state_snapshot>``."""
    return not body.get("tools") and "<state_snapshot>" in last_text(body)


def is_chat(path: str, body: dict[str, Any]) -> bool:
    """A request of the conversation itself (streamed, with the tools), not a helper's."""
    return ":streamGenerateContent" in path and bool(body.get("tools"))


def _reply(text: str, prompt_tokens: int = 50_000) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        # A long history (far under 0.61's auto-compression threshold, half of 1M tokens):
        # a /compress summary is then shorter, so Gemini keeps it instead of the history.
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": 10,
            "totalTokenCount": prompt_tokens + 10,
        },
        "modelVersion": MODEL,
    }


def _tool_rounds(body: dict[str, Any]) -> int:
    """The tool answers since the turn's prompt (contents ending in ``functionResponse``)."""
    rounds = 0
    for content in reversed(body.get("contents") or []):
        parts = content.get("parts") or [] if isinstance(content, dict) else []
        if any(isinstance(p, dict) and "functionResponse" in p for p in parts):
            rounds += 1
        elif any(isinstance(p, dict) and "functionCall" in p for p in parts):
            continue
        else:
            break
    return rounds


class FakeGemini(FakeModel):
    """``FakeModel`` that also speaks the Gemini API.

    ``tool_calls``: each chat turn first calls ``read_file`` on ``greet.py`` that many
    times, so a turn makes ``tool_calls + 1`` model requests (``bench/hook.py`` timing).
    ``overflow``: the first turn whose prompt starts with this text calls ``read_file`` in a reply
    reporting ``OVERFLOW_TOKENS``, so Gemini compresses on its own before sending the
    tool's answer (the compression's own requests are answered as ``/compress``'s).
    """

    def __init__(self, tool_calls: int = 0, overflow: str | None = None) -> None:
        super().__init__()
        self.tool_calls = tool_calls
        self.overflow = overflow

    def __enter__(self) -> FakeGemini:
        super().__enter__()
        return self

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        route = path.split("?")[0]
        if ":countTokens" in route:
            return 200, "application/json", b'{"totalTokens": 100}'
        if ":generateContent" not in route and ":streamGenerateContent" not in route:
            return super().answer(path, body)
        with self._lock:
            self.requests.append((path, body))
        config = body.get("generationConfig") or {}
        if is_compression(body):
            text = f"<state_snapshot>{SUMMARY}</state_snapshot>"
        elif config.get("responseMimeType") == "application/json":
            text = "{}"
        else:
            text = REPLY
        reply = json.dumps(_reply(text))
        overflow = (
            self.overflow is not None
            and is_chat(path, body)
            and _tool_rounds(body) == 0
            and last_text(body).startswith(self.overflow)  # not a restoration quoting it
        )
        if overflow:
            self.overflow = None  # once: each overflow is one more compression
        if is_chat(path, body) and (overflow or _tool_rounds(body) < self.tool_calls):
            call = {"functionCall": {"name": "read_file", "args": {"file_path": "greet.py"}}}
            answer = _reply("", OVERFLOW_TOKENS if overflow else 50_000)
            answer["candidates"][0]["content"]["parts"] = [call]
            reply = json.dumps(answer)
        if ":streamGenerateContent" in route:
            return 200, "text/event-stream", f"data: {reply}\r\n\r\n".encode()
        return 200, "application/json", reply.encode()
