"""What the SDK-backed providers share: settings, one client per provider, closing it.

One provider object (so one SDK client and one connection pool) serves every worker
of a batch; the subclass says which SDK client class to build.

The SDKs' own HTTP stack (httpx2 over httpcore2 and h11) costs about 2 ms of CPU per
call, more than the whole pipeline around it; both SDKs ship an aiohttp transport
(their ``aiohttp`` extra) whose C parser cuts that by about 40%, so it is the default.
Tests inject an ``httpx2`` client with a mock transport instead.

A request parameter the server refuses with a 400 (a model released after this table,
a gateway with its own rules) is corrected from the error and the request sent again,
once per parameter; the correction holds for the rest of the run (the provider object
lives as long as the run) and is announced once on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, ClassVar

import httpx2

from opencode_restore.llm.base import LLMRequest, LLMResult
from opencode_restore.llm.model_rules import ModelParams, model_params, output_limit
from opencode_restore.llm.refusals import Refusal, parse_refusal
from opencode_restore.llm.retry import is_retryable_response
from opencode_restore.llm.settings import ProviderSettings


def stderr_line(text: str) -> None:
    """Write one line to stderr (the default way a provider tells what it corrected)."""
    print(text, file=sys.stderr, flush=True)


class SDKProvider:
    """Base of `OpenAIProvider` and `AnthropicProvider`; retries belong to `call_with_retry`."""

    name: str
    #: The SDK's async client class (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``).
    client_class: ClassVar[Any]
    #: The SDK's "no answer" and "error status" exception classes.
    connection_error: ClassVar[type[Exception]]
    #: Its instances carry the ``httpx2.Response`` as ``response``.
    status_error: ClassVar[type[Any]]
    #: The SDK's ``DefaultAioHttpClient`` (an ``httpx2.AsyncClient`` on aiohttp).
    aiohttp_client_class: ClassVar[type[httpx2.AsyncClient]]

    def __init__(
        self,
        model: str,
        settings: ProviderSettings,
        api_key: str,
        http_client: httpx2.AsyncClient | None = None,
        notify: Callable[[str], None] = stderr_line,
    ) -> None:
        self.model = model
        self.settings = settings
        self.supports_native_tools = settings.tool_mode != "text"
        self.rules: ModelParams = model_params(
            self.name, model, table=settings.models, reasoning_effort=settings.reasoning_effort
        )
        #: Parameters the server refused this run: name -> the server's message.
        self.refused: dict[str, str] = {}
        #: What was done about each refused parameter ("leaving it out", ...).
        self.corrections: dict[str, str] = {}
        self._dropped: set[str] = set()
        self._limit_param: str | None = None
        self._limit_cap: int | None = None
        #: Where the one line per correction goes (stderr; `check` collects them).
        self.notify = notify
        # max_retries=0: the SDK's own retries would multiply ours (call_with_retry).
        self._client = self.client_class(
            api_key=api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
            http_client=http_client or self.aiohttp_client_class(),
        )

    def params(self, request: LLMRequest) -> dict[str, Any]:
        """The request body for `request`, corrections learned this run applied."""
        params = self._build(request)
        for name in self._dropped:
            params.pop(name, None)
        for key in ("max_tokens", "max_completion_tokens"):
            if key in params:
                value = params.pop(key)
                if self._limit_cap is not None:
                    value = min(value, self._limit_cap)
                params[self._limit_param or key] = value
        return params

    def output_limit(self, request: LLMRequest) -> int:
        """The output-token limit of `request`: the answer's limit (capped by settings),
        room for reasoning, doubled per `request.output_boost`, within the ceiling."""
        answer = min(request.max_tokens, self.settings.max_tokens)
        ceiling = max(self.settings.max_tokens_ceiling, answer)
        return output_limit(answer, self.rules, request.output_boost, ceiling)

    async def complete(self, request: LLMRequest) -> LLMResult:
        """One API call; a refused parameter is corrected and the call made again.

        At most one corrected call per refused parameter: every correction is new
        (a parameter refused again after its correction fails the call).
        """
        while True:
            params = self.params(request)
            try:
                return await self._send(request, params)
            except self.status_error as exc:
                refusal = parse_refusal(exc)
                if refusal is None or not self._correct(refusal, params, request):
                    raise

    def _correct(self, refusal: Refusal, sent: dict[str, Any], request: LLMRequest) -> bool:
        """Learn from `refusal`; True when the request is now built differently."""
        if refusal.param in self.refused:
            # Another worker learned it while this request was in flight.
            return self.params(request) != sent
        action = self._learn(refusal, sent)
        if action is None:
            return False
        self.refused[refusal.param] = refusal.message
        self.corrections[refusal.param] = action
        self.notify(
            f"note: {self.name}:{self.model} refused {refusal.param!r} "
            f"({refusal.message.strip()}); {action} for the rest of this run"
        )
        return True

    def _learn(self, refusal: Refusal, sent: dict[str, Any]) -> str | None:
        """Change what later requests carry; a description of the change, or None."""
        name = refusal.param
        limits = ("max_tokens", "max_completion_tokens")
        if refusal.kind == "limit" and refusal.limit:
            self._limit_cap = refusal.limit
            return f"output limit capped at {refusal.limit}"
        if name not in sent or name in ("tools", "tool_choice"):
            # Tools have their own fallback (the text protocol, `ToolsUnsupportedError`).
            return None
        if name in limits and refusal.kind == "parameter":
            other = limits[1 - limits.index(name)]
            self._limit_param = other
            return f"sending {other} instead"
        if name in limits:
            return None
        self._dropped.add(name)
        return "leaving it out"

    def _build(self, request: LLMRequest) -> dict[str, Any]:
        """The request body before corrections."""
        raise NotImplementedError

    async def _send(self, request: LLMRequest, params: dict[str, Any]) -> LLMResult:
        """Send `params` once and map the reply."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the SDK client's connection pool (call before the event loop ends)."""
        await self._client.close()

    def should_retry(self, exc: BaseException) -> bool:
        """Timeouts, dropped connections, 408/409/429/5xx/529 (unless `x-should-retry` says no)."""
        if isinstance(exc, self.connection_error):
            return True
        if isinstance(exc, self.status_error):
            return is_retryable_response(exc.response)
        return False
