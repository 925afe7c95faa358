"""`openai:MODEL`: Chat Completions through the official SDK.

With `base_url` set this talks to any OpenAI-compatible server (Ollama, vLLM,
llama.cpp, LM Studio). Structured output asks for a strict `json_schema` response
format, or as far down the ladder as the server made the provider step
(`sdk_provider`): below `json_schema` the schema goes into the system prompt. Replies
are parsed leniently at every rung, because some servers ignore the format.

Tools are sent natively until the server refuses them (any status whose body names
`tools`, or says it does not support them) or ignores them: at a compatible server
whose native tool calls were never seen, a reply to a request that offers tools and
wants no structured answer (every round of the evidence search must call a tool) that
calls none, natively or in a protocol, means the tools were dropped (llama-cpp-python
drops them unless `tool_choice` names one). Either way the request fails with
`ToolsUnsupportedError` and the caller asks again in the text protocol.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx2
import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageToolCallUnion,
)
from openai.types.completion_usage import CompletionUsage
from pydantic import BaseModel

from opencode_restore.llm.base import (
    ChatMessage,
    LLMRequest,
    LLMResult,
    ToolCallRequest,
    ToolsUnsupportedError,
)
from opencode_restore.llm.refusals import parse_refusal
from opencode_restore.llm.retry import error_message
from opencode_restore.llm.sdk_provider import SDKProvider
from opencode_restore.llm.strict_schema import bounded_json_schema, strict_json_schema
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
        if params.get("stream"):
            return await self._stream(request, params)
        try:
            # The raw response too: a 2xx whose body is no JSON object is reported with it.
            raw = await self._client.chat.completions.with_raw_response.create(**params)
        except openai.APIStatusError as exc:
            self._raise_if_tools_refused(exc, params)
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
        return self._result(request, completion, native_tools="tools" in params)

    async def _stream(self, request: LLMRequest, params: dict[str, Any]) -> LLMResult:
        """The reply of a local server, streamed (see `_build`), gathered into one result."""
        try:
            stream = await self._client.chat.completions.create(**params)
        except openai.APIStatusError as exc:
            self._raise_if_tools_refused(exc, params)
            raise
        text: list[str] = []
        calls: dict[int, list[str]] = {}  # index -> [id, name, arguments]
        finish_reason: str | None = None
        usage: CompletionUsage | None = None
        model = ""
        pieces = 0
        started = time.monotonic()
        wait: float | None = None
        # Leaving the block (a finished reply, a timeout, a cancelled run) closes the
        # connection, which is what tells the server to stop generating.
        try:
            async with stream:
                async for chunk in stream:
                    model = chunk.model or model
                    usage = chunk.usage or usage
                    for choice in chunk.choices or []:
                        finish_reason = choice.finish_reason or finish_reason
                        delta = choice.delta
                        if delta is None:
                            continue
                        if delta.content or delta.tool_calls:
                            pieces += 1
                            if wait is None:
                                wait = time.monotonic() - started
                        text.append(delta.content or delta.refusal or "")
                        for call in delta.tool_calls or []:
                            slot = calls.setdefault(call.index, ["", "", ""])
                            slot[0] = call.id or slot[0]
                            if call.function is not None:
                                slot[1] += call.function.name or ""
                                slot[2] += call.function.arguments or ""
        except (httpx2.HTTPError, openai.APIError, OSError):
            if pieces:
                raise
            finish_reason = None  # broken before its first piece: see below
        if finish_reason is None and not pieces:
            # llama-cpp-python checks the context window inside the stream: an overflow
            # ends it after its 200 and before any piece. Asked whole, the same request
            # gets the 400 that names the window (at once: nothing is generated).
            whole = {k: v for k, v in params.items() if k not in ("stream", "stream_options")}
            try:
                return await self._send(request, whole)
            except openai.APIConnectionError:
                # The pool may hand back the broken stream's connection, which the server
                # closed: the first send resets, the next goes on a fresh one.
                return await self._send(request, whole)
        tool_calls = [
            ToolCallRequest(call_id, name, _arguments(arguments))
            for call_id, name, arguments in (calls[index] for index in sorted(calls))
            if name
        ]
        # A server that reports no usage in a stream (llama-cpp-python) writes about one
        # token per piece; its prompt tokens stay unknown (0) rather than guessed.
        counted = _usage(usage) if usage is not None else Usage(output=pieces)
        result = self._reply(
            request,
            "".join(text),
            finish_reason,
            tool_calls,
            counted,
            model,
            native_tools="tools" in params,
        )
        result.wait_seconds = wait
        return result

    def _raise_if_tools_refused(self, exc: openai.APIStatusError, params: dict[str, Any]) -> None:
        """`ToolsUnsupportedError` when `exc` refuses the tools the request offered."""
        if "tools" in params and self._tools_rejected(exc):
            message = error_message(exc)
            self.refused.setdefault("tools", message)
            self.give_up_native_tools(f"refused tools ({message.strip()[:200]})")
            raise ToolsUnsupportedError(self.name, self.model, message, exc.status_code) from exc

    def _build(self, request: LLMRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        system = "\n\n".join(block.text for block in request.system)
        schema = request.response_schema
        rung = self.structured_output
        if schema is not None and rung in ("json_object", "text"):
            # Nothing else tells the model the shape; json_object mode also wants the word.
            system = "\n\n".join(part for part in (system, _schema_instruction(schema)) if part)
        if system:
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
        if self.settings.local:
            # A model on a CPU writes a few tokens a second: streamed, the read timeout
            # bounds the wait for each piece rather than the whole answer, and a call given
            # up closes the stream, which stops the server's work on it.
            params["stream"] = True
            params["stream_options"] = {"include_usage": True}
        if schema is not None and rung in ("json_schema_strict", "json_schema"):
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": schema.__name__,
                    "schema": strict_json_schema(schema),
                    "strict": rung == "json_schema_strict",
                },
            }
        elif schema is not None and rung == "json_object":
            # llama.cpp and llama-cpp-python make a grammar of a "schema" here (as Anyscale's
            # JSON mode defined it); vLLM and Ollama ignore the key.
            params["response_format"] = {
                "type": "json_object",
                "schema": bounded_json_schema(schema),
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
            if request.tool_choice:
                params["tool_choice"] = {
                    "type": "function",
                    "function": {"name": request.tool_choice},
                }
        return params

    def _tools_rejected(self, exc: openai.APIStatusError) -> bool:
        """The server refused the tools themselves (auto mode only: else the error stands)."""
        if self.settings.tool_mode != "auto":
            return False
        refusal = parse_refusal(exc)
        if refusal is not None:
            return refusal.param in ("tools", "tool_choice")
        # vLLM: 400 '"auto" tool choice requires --enable-auto-tool-choice and ...'.
        return exc.status_code == 400 and "tool" in error_message(exc).lower()

    def _ignored_tools(self, request: LLMRequest, finish_reason: str | None) -> bool:
        """A reply that called no tool means the tools were dropped: at a compatible server
        not yet seen calling tools, for a request that wants no structured answer, unless
        the reply was cut off (the call may have been on its way)."""
        return (
            self.settings.base_url is not None
            and request.response_schema is None
            and not self.native_tools_seen
            and finish_reason != "length"
        )

    def _result(
        self, request: LLMRequest, completion: ChatCompletion, *, native_tools: bool
    ) -> LLMResult:
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
        return self._reply(
            request,
            text,
            finish_reason,
            tool_calls,
            _usage(completion.usage),
            completion.model or self.model,
            native_tools=native_tools,
        )

    def _reply(
        self,
        request: LLMRequest,
        text: str,
        finish_reason: str | None,
        tool_calls: list[ToolCallRequest],
        usage: Usage,
        model: str,
        *,
        native_tools: bool,
    ) -> LLMResult:
        """The result of a reply (whole or streamed): tool-mode learning and parsing."""
        if native_tools and tool_calls and request.tool_choice is None:
            self.confirm_native_tools()  # (a forced call says nothing of the model's own)
        if request.tools and not tool_calls and self.settings.tool_mode == "auto":
            tool_calls = parse_text_tool_calls(text)
            if native_tools and (tool_calls or _names_a_tool(text, request)):
                # The model answers in a text protocol: build later requests for it.
                self.give_up_native_tools("answered tools in text")
            elif native_tools and self._ignored_tools(request, finish_reason):
                self.give_up_native_tools(
                    "ignored the tools (a reply that had to call one did not)"
                )
                raise ToolsUnsupportedError(
                    self.name, self.model, "the server ignored the tools: the reply called none"
                )
        parsed = None
        if request.response_schema is not None and text:
            parsed, _ = parse_structured(text, request.response_schema)
        return LLMResult(
            text=text,
            parsed=parsed,
            tool_calls=tool_calls,
            usage=usage,
            model=model or self.model,
            finish_reason=finish_reason,
        )


def _schema_instruction(schema: type[BaseModel]) -> str:
    """The system prompt's addition below `json_schema`: the schema, in compact JSON."""
    body = json.dumps(strict_json_schema(schema), separators=(",", ":"), ensure_ascii=False)
    return (
        "Reply with one JSON object and nothing else (no prose, no code fences). "
        f"It must match this JSON schema:\n{body}"
    )


def _names_a_tool(text: str, request: LLMRequest) -> bool:
    """The reply calls an offered tool the text protocol's way (``[SEARCH_LOG: ...]``)."""
    names = "|".join(re.escape(tool.name) for tool in request.tools)
    return bool(names) and re.search(rf"\[\s*(?:{names})\s*[:\]]", text, re.IGNORECASE) is not None


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
