"""Request bodies checked against the official SDKs' own parameter types.

`request_problems` validates a Chat Completions body against
`openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming` (or
`...Streaming` when it asks for a stream) and a
Messages body against `anthropic.types.MessageCreateParams`, through pydantic. The
TypedDicts alone would let unknown keys pass (pydantic ignores extras of a TypedDict)
and check `Iterable` fields lazily, so their core schemas are tightened first: every
TypedDict forbids extra keys and every iterable is validated as a list. Anthropic
requests also may not carry more than 4 `cache_control` blocks (the API answers 400).
The one key allowed beyond the types is the `schema` of a `json_object` response format,
which OpenAI-compatible servers (llama.cpp, llama-cpp-python, Anyscale's JSON mode) take
as a grammar; the provider sends it only below `json_schema`, to such servers.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from anthropic.types import MessageCreateParams
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsNonStreaming,
    CompletionCreateParamsStreaming,
)
from pydantic import TypeAdapter
from pydantic_core import SchemaValidator, ValidationError

MAX_CACHE_CONTROL = 4


def _tighten(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _tighten(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "typed-dict":
        node["extra_behavior"] = "forbid"
    elif node.get("type") == "generator":
        node["type"] = "list"
    for value in node.values():
        _tighten(value)


_PARAMS: dict[str, Any] = {
    "openai": CompletionCreateParamsNonStreaming,
    "openai-stream": CompletionCreateParamsStreaming,
    "anthropic": MessageCreateParams,
}


@cache
def _validator(kind: str) -> SchemaValidator:
    adapter: TypeAdapter[Any] = TypeAdapter(_PARAMS[kind])
    schema = copy.deepcopy(adapter.core_schema)
    _tighten(schema)
    return SchemaValidator(schema)


def cache_control_blocks(body: dict[str, Any]) -> int:
    """How many blocks of an Anthropic request carry `cache_control`."""
    system = body.get("system")
    blocks: list[Any] = list(body.get("tools") or [])
    blocks += system if isinstance(system, list) else []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        blocks += content if isinstance(content, list) else []
    return sum(1 for block in blocks if isinstance(block, dict) and "cache_control" in block)


def request_problems(path: str, body: Any) -> list[str]:
    """What is wrong with a request body for `path` (empty when the SDK types accept it)."""
    kind = "openai" if path.endswith("/chat/completions") else "anthropic"
    checked = body
    if kind == "openai" and isinstance(body, dict):
        checked = dict(body)
        response_format = checked.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") == "json_object":
            checked["response_format"] = {k: v for k, v in response_format.items() if k != "schema"}
    problems: list[str] = []
    try:
        stream = kind == "openai" and isinstance(body, dict) and body.get("stream") is True
        _validator("openai-stream" if stream else kind).validate_python(checked)
    except ValidationError as exc:
        problems += [
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
        ]
    if kind == "anthropic" and isinstance(body, dict):
        found = cache_control_blocks(body)
        if found > MAX_CACHE_CONTROL:
            problems.append(
                f"A maximum of {MAX_CACHE_CONTROL} blocks with cache_control may be provided. "
                f"Found {found}."
            )
    return problems
