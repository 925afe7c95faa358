"""What the SDK-backed providers share: settings, one client per provider, closing it.

One provider object (so one SDK client and one connection pool) serves every worker
of a batch; the subclass says which SDK client class to build.

The SDKs' own HTTP stack (httpx2 over httpcore2 and h11) costs about 2 ms of CPU per
call, more than the whole pipeline around it; both SDKs ship an aiohttp transport
(their ``aiohttp`` extra) whose C parser cuts that by about 40%, so it is the default.
Tests inject an ``httpx2`` client with a mock transport instead.

A request parameter the server refuses (a model released after this table, a gateway
with its own rules, a local server's validation error) is corrected from the error and
the request sent again, once per parameter; the correction holds for the rest of the run
(the provider object lives as long as the run) and is announced once on stderr.

Structured output is asked for the most exact way the server takes, walking down
`server_profile.RUNGS` (strict `json_schema`, non-strict, `json_object` with the schema
in the prompt, plain text with the schema in the prompt) as it refuses each, unless
`llm.structured_output` names one. Native tools give way to the text protocol when the
server refuses or ignores them. What a server with a base URL was found to take is kept
in the data directory (`server_profile`), so the next run starts there.
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
from opencode_restore.llm.server_profile import RUNGS, ServerProfile, ServerProfiles, StructuredRung
from opencode_restore.llm.settings import ProviderSettings

#: What a request at each lower rung asks for, said when the provider steps down to it.
_STEP_DOWN: dict[StructuredRung, str] = {
    "json_schema": "asking for a non-strict json_schema",
    "json_object": "asking for json_object with the schema in the prompt",
    "text": "asking for plain text with the schema in the prompt",
}


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
        profiles: ServerProfiles | None = None,
    ) -> None:
        self.model = model
        self.settings = settings
        self.supports_native_tools = settings.tool_mode != "text"
        #: How structured output is asked for now (one of `RUNGS`).
        self.structured_output: StructuredRung = _first_rung(settings)
        #: Each rung the server refused this run, with its message.
        self.structured_refusals: dict[StructuredRung, str] = {}
        #: Why native tools were given up this run ("" while they are in use).
        self.tools_given_up = ""
        #: The server answered a call with a native tool call: it does tools.
        self.native_tools_seen = False
        # Only compatible servers are remembered: api.openai.com takes everything.
        self._profiles = (
            (profiles if profiles is not None else ServerProfiles.default(settings.data_dir))
            if settings.base_url
            else None
        )
        self._start_from_profile()
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

    def _start_from_profile(self) -> None:
        """Start where earlier runs against this server ended (modes set to "auto" only)."""
        if self._profiles is None or self.settings.base_url is None:
            return
        learned = self._profiles.get(self.settings.base_url, self.model)
        if self.settings.structured_output == "auto" and learned.structured_output:
            self.structured_output = learned.structured_output
        if self.settings.tool_mode == "auto" and learned.tools:
            self.supports_native_tools = self.native_tools_seen = learned.tools == "native"

    def relearn(self) -> None:
        """Forget what earlier runs learned about the server: start from the configured
        modes and learn again (`check`), still remembering the outcome."""
        self.structured_output = _first_rung(self.settings)
        self.supports_native_tools = self.settings.tool_mode != "text"
        self.native_tools_seen = False

    def remember(self, learned: ServerProfile) -> None:
        """Keep what was learned about a compatible server for the next run."""
        if self._profiles is not None and self.settings.base_url is not None:
            self._profiles.remember(self.settings.base_url, self.model, learned)

    def give_up_native_tools(self, reason: str) -> None:
        """Send tools through the text protocol from now on; said once, and remembered."""
        if not self.supports_native_tools:
            return
        self.supports_native_tools = False
        self.tools_given_up = reason
        self.notify(
            f"note: {self.name}:{self.model} {reason}; "
            "using the text tool protocol for the rest of this run"
        )
        self.remember(ServerProfile(tools="text"))

    def confirm_native_tools(self) -> None:
        """The server answered with a native tool call: remember that it does tools."""
        if not self.native_tools_seen:
            self.native_tools_seen = True
            self.remember(ServerProfile(tools="native"))

    def params(self, request: LLMRequest) -> dict[str, Any]:
        """The request body for `request`, corrections learned this run applied."""
        params = self._build(request)
        for name in self._dropped:
            params.pop(name, None)
        for key in ("max_tokens", "max_completion_tokens"):
            if key in params:
                params[self._limit_param or key] = params.pop(key)
        return params

    def output_limit(self, request: LLMRequest) -> int:
        """The output-token limit of `request`: the answer's limit (capped by settings),
        room for reasoning, doubled per `request.output_boost`, within the ceiling, the
        room the context window leaves (`request.window_room`) and the maximum the server
        named this run."""
        answer = min(request.max_tokens, self.settings.max_tokens)
        ceiling = self.settings.max_tokens_ceiling
        if request.window_room is not None:
            # Prompt and answer share the window: a limit past it only buys an overflow.
            ceiling = min(ceiling, request.window_room)
        limit = output_limit(answer, self.rules, request.output_boost, max(ceiling, answer))
        return limit if self._limit_cap is None else min(limit, self._limit_cap)

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
        if refusal.param == "response_format":
            return self._step_down(refusal, sent.get("response_format"))
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

    def _step_down(self, refusal: Refusal, sent: object) -> bool:
        """Ask for structured output the next way down the ladder; True when it changed.

        Each step is taken once however many workers were refused at once: a request
        sent at a rung already left is simply built again. A refused response format
        *type* (llama-cpp-python knows only "text" and "json_object") skips the other
        json_schema rung, which would be refused the same way.
        """
        refused = _rung_sent(sent)
        if refused is None:
            return False
        if RUNGS.index(self.structured_output) > RUNGS.index(refused):
            return True
        if self.settings.structured_output != "auto":
            return False
        lower = RUNGS[RUNGS.index(refused) + 1 :]
        if refusal.path[1:2] == ("type",):
            lower = tuple(rung for rung in lower if not rung.startswith("json_schema"))
        if not lower:
            return False
        self.structured_output = lower[0]
        self.structured_refusals[refused] = refusal.message
        self.refused.setdefault("response_format", refusal.message)  # the first, as sent
        self.corrections["response_format"] = _STEP_DOWN[lower[0]]
        self.notify(
            f"note: {self.name}:{self.model} refused response_format {shown_rung(refused)} "
            f"({refusal.message.strip()}); {_STEP_DOWN[lower[0]]} for the rest of this run"
        )
        self.remember(ServerProfile(structured_output=lower[0]))
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
        """Timeouts, dropped connections, 408/409/429/5xx/529 (unless `x-should-retry` says no).

        A 500 that refuses a parameter (llama-cpp-python's validation errors) would be
        refused again word for word: it is not retried.
        """
        if isinstance(exc, self.connection_error):
            return True
        if isinstance(exc, self.status_error):
            return is_retryable_response(exc.response) and parse_refusal(exc) is None
        return False


def _first_rung(settings: ProviderSettings) -> StructuredRung:
    """The rung a run starts at before anything is learned."""
    mode = settings.structured_output
    return "json_schema_strict" if mode == "auto" else mode


def _rung_sent(response_format: object) -> StructuredRung | None:
    """The rung a request body's `response_format` asked at (None: it asked for none)."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_object":
        return "json_object"
    spec = response_format.get("json_schema")
    if response_format.get("type") != "json_schema" or not isinstance(spec, dict):
        return None
    return "json_schema_strict" if spec.get("strict") else "json_schema"


def shown_rung(rung: StructuredRung) -> str:
    """A rung as `check` and the notes say it: "json_schema (strict)"."""
    return "json_schema (strict)" if rung == "json_schema_strict" else rung
