"""`openai:MODEL`: Chat Completions through the official SDK.

With `base_url` set this talks to any OpenAI-compatible server (Ollama, vLLM,
llama.cpp, LM Studio). Structured output asks for a strict `json_schema`
response format and still parses leniently, because some servers ignore it.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageToolCallUnion,
)
from openai.types.completion_usage import CompletionUsage

from opencode_restore.llm.base import (
    ChatMessage,
    LLMRequest,
    LLMResult,
    ToolCallRequest,
    ToolsUnsupportedError,
)
from opencode_restore.llm.retry import error_message
from opencode_restore.llm.sdk_provider import SDKProvider
from opencode_restore.llm.strict_schema import strict_json_schema
from opencode_restore.llm.structured import json_candidates, parse_structured, parse_text_tool_calls
from opencode_restore.model import Usage


class OpenAIProvider(SDKProvider):
    """One Chat Completions call per `complete`; retries belong to `retry.call_with_retry`."""

    name = "openai"
    client_class = openai.AsyncOpenAI
    connection_error = openai.APIConnectionError
    status_error = openai.APIStatusError
    aiohttp_client_class = openai.DefaultAioHttpClient
    _client: openai.AsyncOpenAI

    async def _send(self, request: LLMRequest, params: dict[str, Any]) -> LLMResult:
        try:
            # The raw response too: a 2xx whose body is no JSON object is reported with it.
            raw = await self._client.chat.completions.with_raw_response.create(**params)
        except openai.BadRequestError as exc:
            if "tools" in params and self._tools_rejected(exc):
                self.supports_native_tools = False
                raise ToolsUnsupportedError(
                    self.name, self.model, error_message(exc), exc.status_code
                ) from exc
            raise
        completion: object = raw.parse()
        if not isinstance(completion, ChatCompletion):
            # The SDK hands back the text (or the list) of a body that is no JSON object.
            response = raw.http_response
            raise openai.APIResponseValidationError(
                response,
                completion,
                message=f"the server's reply is not a JSON object: {response.text[:200]!r}",
            )
        return self._result(request, completion)

    def _build(self, request: LLMRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            system = "\n\n".join(block.text for block in request.system)
            messages.append({"role": "system", "content": system})
        messages.extend(_message(message) for message in request.messages)
        params: dict[str, Any] = {"model": self.model, "messages": messages}
        rules = self.rules
        # api.openai.com wants max_completion_tokens (reasoning models refuse max_tokens);
        # compatible servers do not all know it, unless the model is a known reasoner.
        limit_key = rules.limit_param or (
            "max_tokens" if self.settings.base_url else "max_completion_tokens"
        )
        params[limit_key] = self.output_limit(request)
        temperature = request.temperature
        if temperature is None:
            temperature = self.settings.temperature
        if temperature is not None and rules.sampling:
            params["temperature"] = temperature
        if rules.reasoning_effort is not None:
            params["reasoning_effort"] = rules.reasoning_effort
        if request.cache_key:
            params["prompt_cache_key"] = request.cache_key
        if request.response_schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.response_schema.__name__,
                    "schema": strict_json_schema(request.response_schema),
                    "strict": True,
                },
            }
        if request.tools and self.supports_native_tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                        "strict": tool.strict,
                    },
                }
                for tool in request.tools
            ]
        return params

    def _tools_rejected(self, exc: openai.BadRequestError) -> bool:
        # Ollama: 400 "registry.ollama.ai/library/x does not support tools".
        return self.settings.tool_mode == "auto" and "tool" in error_message(exc).lower()

    def _result(self, request: LLMRequest, completion: ChatCompletion) -> LLMResult:
        # The SDK builds its models without validating them (a compatible server's reply
        # may lack fields the types call required): a missing field reads as None.
        text = ""
        finish_reason: str | None = None
        tool_calls: list[ToolCallRequest] = []
        if completion.choices:
            choice = completion.choices[0]
            finish_reason = choice.finish_reason
            message = choice.message
            if message is not None:
                text = message.content or message.refusal or ""
                tool_calls = _tool_calls(message.tool_calls or [])
        if request.tools and not tool_calls and self.settings.tool_mode == "auto":
            tool_calls = parse_text_tool_calls(text)
            if tool_calls:
                # The model answers in the text protocol: build later requests for it.
                self.supports_native_tools = False
        parsed = None
        if request.response_schema is not None and text:
            parsed, _ = parse_structured(text, request.response_schema)
        return LLMResult(
            text=text,
            parsed=parsed,
            tool_calls=tool_calls,
            usage=_usage(completion.usage),
            model=completion.model or self.model,
            finish_reason=finish_reason,
        )


def _tool_calls(calls: list[ChatCompletionMessageToolCallUnion]) -> list[ToolCallRequest]:
    """The function calls of a reply; a call without a type or a name is skipped."""
    found = []
    for call in calls:
        if not isinstance(call, ChatCompletionMessageFunctionToolCall) or call.type != "function":
            continue
        function = call.function
        if function is not None and function.name:
            arguments = _arguments(function.arguments or "")
            found.append(ToolCallRequest(call.id or "", function.name, arguments))
    return found


def _message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def _arguments(raw: str) -> dict[str, Any]:
    for value in json_candidates(raw):
        if isinstance(value, dict):
            return value
    return {}


def _usage(usage: CompletionUsage | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens if details is not None else None) or 0
    written = (details.cache_write_tokens if details is not None else None) or 0
    return Usage(
        input=max(0, (usage.prompt_tokens or 0) - cached - written),
        output=usage.completion_tokens or 0,
        cache_read=cached,
        cache_write=written,
    )
