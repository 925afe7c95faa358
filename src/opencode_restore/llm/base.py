"""The provider protocol and the request/result types the pipeline codes against.

Nothing here imports an SDK: the pipeline builds an `LLMRequest`, a `Provider` turns
it into one API call, and `retry.call_with_retry` owns retries and usage recording.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from opencode_restore.errors import ProviderError
from opencode_restore.model import Usage

ChatRole = Literal["system", "user", "assistant", "tool"]


@dataclass(slots=True)
class ToolCallRequest:
    """A tool call the model asked for (native tool calling or the text protocol)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ToolSpec:
    """A tool offered to the model; `parameters` is a JSON schema object.

    `strict` says the schema keeps to OpenAI's strict subset (`llm.strict_schema`), so
    the OpenAI provider may ask for strict arguments.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    strict: bool = False


@dataclass(slots=True)
class ChatMessage:
    """One conversation message.

    `cache_breakpoint` marks the end of a stable prefix (Anthropic `cache_control`;
    OpenAI caches prefixes automatically, so there it only documents intent).
    An assistant message may carry `tool_calls`; a `tool` message answers the call
    named by `tool_call_id`.
    """

    role: ChatRole
    content: str
    cache_breakpoint: bool = False
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    tool_call_id: str | None = None


@dataclass(slots=True)
class SystemBlock:
    """A block of the system prompt; flagged blocks end a cacheable prefix."""

    text: str
    cache_breakpoint: bool = False


@dataclass(slots=True)
class LLMRequest:
    """Everything one LLM call needs, independent of the provider.

    `facts` carries structured data the pipeline already knows; network providers
    ignore it, the offline provider builds its answer from it. `template` and
    `stage` are recorded with the usage of the call. `output_boost` counts the earlier
    replies to this request that were cut off at the output limit: each doubles it,
    within `window_room`.
    `tool_choice` names a tool the reply must call (`check`'s probe of a server that
    calls tools only when told which); None lets the model choose.
    """

    messages: list[ChatMessage]
    system: list[SystemBlock] = field(default_factory=list)
    response_schema: type[BaseModel] | None = None
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 4096
    temperature: float | None = None
    template: str = ""
    stage: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    cache_key: str | None = None
    output_boost: int = 0
    #: The most output the model's context window leaves beside this prompt (None: no
    #: window known): a doubled limit never goes past it.
    window_room: int | None = None
    tool_choice: str | None = None


@dataclass(slots=True)
class LLMResult:
    """The outcome of one call.

    `parsed` is the validated `response_schema` instance, or None when the request
    had no schema or the reply did not validate (then `text` holds the raw reply).
    """

    text: str
    parsed: BaseModel | None = None
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    attempts: int = 1
    #: Seconds before the first piece of a streamed answer (the prompt being read).
    wait_seconds: float | None = None


@lru_cache(maxsize=64)
def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an output model, built once per class (pydantic rebuilds it on
    every call, which costs milliseconds per LLM request in a batch)."""
    return model.model_json_schema()


class Provider(Protocol):
    """What the pipeline needs from an LLM backend.

    A provider that answers from ``LLMRequest.facts`` says so with a ``reads_facts = True``
    attribute (the offline one); the others get requests without facts.
    """

    name: str
    model: str
    supports_native_tools: bool

    async def complete(self, request: LLMRequest) -> LLMResult:
        """Make exactly one API call (no retries) and map its reply."""
        ...

    def should_retry(self, exc: BaseException) -> bool:
        """True when `exc` is transient (rate limit, 5xx, timeout, connection)."""
        ...


class ToolsUnsupportedError(ProviderError):
    """The server rejected native tools; rebuild the request with the text protocol.

    Raised only in `tool_mode = "auto"`, when the server refused `tools` or answered a
    request that offered them without calling any (it ignored them); the provider has
    already switched its `supports_native_tools` to False, so the next request can be
    built correctly.
    """


def error_body(exc: BaseException) -> dict[str, Any]:
    """The error object of an SDK error's JSON body (``{"error": {...}}`` or the body
    itself), or {} when it has none."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return inner
    return {}
