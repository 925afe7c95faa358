"""`anthropic:MODEL`: the Messages API through the official SDK.

Structured output is a forced tool whose `input_schema` is the pydantic model's
schema. Blocks flagged `cache_breakpoint` get `cache_control: ephemeral`; the API
allows at most four, so only the last four flagged blocks keep theirs (a later
breakpoint covers the longer prefix, which is what repeated calls share).

No `temperature` is sent: anthropic 2.x dropped it from `messages.create`, and
models after Opus 4.6 answer 400 "`temperature` is deprecated for this model".
"""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
from anthropic.types import Message
from pydantic import BaseModel

from opencode_restore.llm.base import (
    ChatMessage,
    LLMRequest,
    LLMResult,
    ToolCallRequest,
)
from opencode_restore.llm.sdk_provider import SDKProvider
from opencode_restore.llm.strict_schema import strict_json_schema
from opencode_restore.llm.structured import parse_structured, validate_value
from opencode_restore.model import Usage

MAX_CACHE_BREAKPOINTS = 4
_EPHEMERAL = {"type": "ephemeral"}


def structured_tool_name(schema: type[BaseModel]) -> str:
    """The name of the forced tool that carries a `schema` reply."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", schema.__name__).lower()
    return f"emit_{re.sub(r'[^a-z0-9_]', '_', snake)}"[:64]


class AnthropicProvider(SDKProvider):
    """One Messages call per `complete`; retries belong to `retry.call_with_retry`."""

    name = "anthropic"
    client_class = anthropic.AsyncAnthropic
    connection_error = anthropic.APIConnectionError
    status_error = anthropic.APIStatusError
    aiohttp_client_class = anthropic.DefaultAioHttpClient
    _client: anthropic.AsyncAnthropic

    async def _send(self, request: LLMRequest, params: dict[str, Any]) -> LLMResult:
        message = await self._client.messages.create(**params)
        return self._result(request, message)

    def _build(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for `request`."""
        system: list[dict[str, Any]] = []
        flagged: list[dict[str, Any]] = []
        for part in request.system:
            system.append({"type": "text", "text": part.text})
            if part.cache_breakpoint:
                flagged.append(system[-1])
        messages = _messages(request.messages, system, flagged)
        for block in flagged[-MAX_CACHE_BREAKPOINTS:]:
            block["cache_control"] = dict(_EPHEMERAL)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.output_limit(request),
            "messages": messages,
        }
        if system:
            params["system"] = system
        tools: list[dict[str, Any]] = []
        if self.supports_native_tools:
            tools = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        if request.response_schema is not None:
            name = structured_tool_name(request.response_schema)
            tools.append(
                {
                    "name": name,
                    "description": "Return the answer as this tool's input.",
                    "input_schema": strict_json_schema(request.response_schema),
                }
            )
            params["tool_choice"] = {"type": "tool", "name": name}
        if tools:
            params["tools"] = tools
        return params

    def _result(self, request: LLMRequest, message: Message) -> LLMResult:
        schema = request.response_schema
        forced = structured_tool_name(schema) if schema is not None else None
        texts: list[str] = []
        tool_calls: list[ToolCallRequest] = []
        parsed: BaseModel | None = None
        structured_text: str | None = None
        for block in message.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use" and block.name == forced and schema is not None:
                structured_text = json.dumps(block.input, ensure_ascii=False)
                parsed = validate_value(block.input, schema)
            elif block.type == "tool_use":
                tool_calls.append(ToolCallRequest(block.id, block.name, dict(block.input)))
        text = structured_text if structured_text is not None else "".join(texts)
        if schema is not None and structured_text is None and text:
            # A compatible server that ignored tool_choice and answered in prose.
            parsed, _ = parse_structured(text, schema)
        usage = message.usage
        return LLMResult(
            text=text,
            parsed=parsed,
            tool_calls=tool_calls,
            usage=Usage(
                input=usage.input_tokens,
                output=usage.output_tokens,
                cache_read=usage.cache_read_input_tokens or 0,
                cache_write=usage.cache_creation_input_tokens or 0,
            ),
            model=message.model or self.model,
            finish_reason=message.stop_reason,
        )


def _messages(
    chat: list[ChatMessage], system: list[dict[str, Any]], flagged: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Map chat messages to Anthropic turns, merging consecutive same-role turns.

    System messages join the system blocks (the API has no system role in turns);
    tool results travel as `tool_result` blocks of a user turn.
    """
    turns: list[dict[str, Any]] = []
    for message in chat:
        if message.role == "system":
            system.append({"type": "text", "text": message.content})
            if message.cache_breakpoint:
                flagged.append(system[-1])
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
        if message.cache_breakpoint:
            flagged.append(blocks[-1])
    return turns


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
        ]
    # The API rejects empty text blocks.
    blocks: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        blocks.append({"type": "text", "text": message.content or "(empty)"})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return blocks
