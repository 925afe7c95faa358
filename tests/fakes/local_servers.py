"""Profiles of local OpenAI-compatible servers for the fake LLM server: what each refuses.

`FakeLLMServer(profile=...)` answers like one of the servers people run models on:

- `llama_cpp_python`: llama-cpp-python's FastAPI server (`python -m llama_cpp.server`),
  measured against 0.3.36 (FastAPI 0.165) serving SmolLM2-135M-Instruct, and read in
  abetlen/llama-cpp-python v0.3.35 (llama_cpp/server/{app,errors,types}.py,
  llama_cpp/llama_types.py, llama_cpp/llama_chat_format.py, llama_cpp/llama.py).
- `llama_cpp`: ggml-org/llama.cpp's `llama-server` (tools/server/server-context.cpp,
  server-common.cpp, utils.hpp's oaicompat_chat_params_parse).
- `ollama`: ollama/ollama v0.33.0-rc2 (openai/openai.go, middleware/openai.go,
  server/routes.go, server/images.go, llm/llama_server.go, api/types.go).
- `vllm`: vllm-project/vllm (vllm/entrypoints/openai/engine/protocol.py: ErrorResponse,
  ModelCard.max_model_len; the chat serving's tool-choice and length checks).

Each profile says, for one Chat Completions body, what the real server refuses (status
and error body as the server writes them), what it ignores (the request as the model
sees it), how many prompt tokens it reports, and answers the other endpoints a client
may read a context window from (`/v1/models`, `/props`, `/api/show`, `/api/ps`).
Prompt tokens are the fake's own count (chars / 3.5 of the messages, and of the tools
where the server puts them in the prompt).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NotRequired

from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from opencode_restore.llm.schema_instance import minimal_instance

if TYPE_CHECKING or __package__:
    from .tokens import text_chars, tokens
else:  # imported by fake_llm_server run as a script (tests/fakes on sys.path)
    from tokens import text_chars, tokens

#: (status, extra headers, JSON body or raw text): what `FakeLLMServer.handle` returns.
Reply = tuple[int, dict[str, str], Any]
JSON_TYPE = {"content-type": "application/json"}
TEXT_TYPE = {"content-type": "text/plain; charset=utf-8"}


class LocalServer:
    """One local server's behaviour; subclasses set what differs.

    ``context_window`` is the window the server enforces (llama.cpp's ``n_ctx``,
    vLLM's ``max_model_len``, ollama's ``num_ctx``); ``trained_context`` is the model's
    own, which some servers report instead (llama.cpp's ``n_ctx_train``, ollama's
    ``model_info``); ``model`` is the name the server lists. ``follows_prompt_schema``
    False is a model too small to follow a schema written in its prompt: without a
    grammar (json_schema, or llama-cpp-python's json_object ``schema``) it echoes the
    schema back, as SmolLM2-135M-Instruct did on llama-cpp-python 0.3.36.
    """

    name: ClassVar[str] = ""
    #: The server answers without an API key (none of them requires one by default).
    needs_key: ClassVar[bool] = False

    def __init__(
        self,
        *,
        context_window: int = 4096,
        trained_context: int = 8192,
        model: str = "smollm2",
        follows_prompt_schema: bool = True,
    ) -> None:
        self.context_window = context_window
        self.trained_context = trained_context
        self.model = model
        self.follows_prompt_schema = follows_prompt_schema

    def refusal(self, body: dict[str, Any]) -> Reply | None:
        """The error the real server answers this Chat Completions body with, or None."""
        return None

    def seen(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as the model sees it: the fields the server ignores are gone."""
        return body

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """Prompt tokens of the request the model sees (messages, and tools if kept)."""
        seen = self.seen(body)
        return tokens(text_chars([seen.get("messages"), seen.get("tools")]))

    def reported_prompt_tokens(self, prompt: int) -> int:
        """What `usage.prompt_tokens` says for a prompt of that many tokens."""
        return prompt

    def tool_call(self, body: dict[str, Any]) -> str | None:
        """The tool the server forces a call of (a grammar), or None when the model is free."""
        return None

    def route(self, method: str, path: str, body: Any) -> Reply:
        """Any endpoint other than POST /v1/chat/completions."""
        return self.not_found(method, path)

    def not_found(self, method: str, path: str) -> Reply:
        """The server's answer to a path it does not serve."""
        # FastAPI's default (llama-cpp-python, vLLM): {"detail": "Not Found"}.
        return 404, JSON_TYPE, {"detail": "Not Found"}

    def models(self) -> dict[str, Any]:
        """GET /v1/models."""
        return {"object": "list", "data": [{"id": self.model, "object": "model"}]}


class LlamaCppPython(LocalServer):
    """llama-cpp-python's server (FastAPI, pydantic request models).

    - `response_format.type` is `Literal["text", "json_object"]` (llama_types.py
      ChatCompletionRequestResponseFormat, with a non-OpenAI `schema` key for json_object).
      FastAPI raises RequestValidationError inside the route; errors.py's
      RouteErrorHandler catches every exception and answers **500** with
      `{"error": {"message": str(exc), "type": "internal_server_error", "param": null,
      "code": null}}`, str(exc) being FastAPI's "1 validation error:\\n  {error dict}\\n\\n
      File ..., in create_chat_completion\\n    POST /v1/chat/completions" (measured).
    - `tools` reach the chat template but are never parsed into tool calls unless
      `tool_choice` names a function (llama_chat_format.py
      chat_formatter_to_chat_completion_handler: a grammar from that tool's parameters);
      a named tool missing from `tools` is a ValueError: 500 "Tool choice 'x' not found
      in tools." (measured). `max_completion_tokens` is not a field: ignored (measured:
      65 tokens generated for 12 asked).
    - A prompt of `n_ctx` tokens or more: llama.py raises "Requested tokens (N) exceed
      context window of W", which errors.py rewrites to a 400 `context_length_exceeded`
      (measured body below); a shorter prompt has `max_tokens` clipped to what is left.
    - GET /v1/models lists the model path with no window (app.py get_models).
    """

    name = "llama_cpp_python"

    def __init__(self, *, context_window: int = 2048, **options: Any) -> None:
        super().__init__(context_window=context_window, **options)

    def refusal(self, body: dict[str, Any]) -> Reply | None:
        try:
            _LlamaCppPythonRequest.model_validate(body)
        except ValidationError as exc:
            # FastAPI's errors: pydantic's without the URL, the location under "body".
            errors = [
                {**error, "loc": ("body", *error["loc"])} for error in exc.errors(include_url=False)
            ]
            return _llama_cpp_python_500(_fastapi_validation_message(errors))
        named = _named_tool(body)
        if named is not None and named not in _tool_names(body):
            return _llama_cpp_python_500(f"Tool choice '{named}' not found in tools.")
        prompt = self.prompt_tokens(body)
        if prompt >= self.context_window:
            completion = body.get("max_tokens")
            message = (
                f"This model's maximum context length is {self.context_window} tokens. "
                f"However, you requested {(completion or 0) + prompt} tokens "
                f"({prompt} in the messages, {completion} in the completion). "
                "Please reduce the length of the messages or completion."
            )
            error = {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
            return 400, JSON_TYPE, {"error": error}
        return None

    def seen(self, body: dict[str, Any]) -> dict[str, Any]:
        # SmolLM2's chat template (and most GGUF templates) never render `tools`.
        seen = {k: v for k, v in body.items() if k not in ("max_completion_tokens",)}
        if _named_tool(body) is None:
            seen.pop("tools", None)
            seen.pop("tool_choice", None)
        return seen

    def tool_call(self, body: dict[str, Any]) -> str | None:
        return _named_tool(body)

    def route(self, method: str, path: str, body: Any) -> Reply:
        if path == "/v1/models":
            if method != "GET":
                return 405, JSON_TYPE, {"detail": "Method Not Allowed"}
            return 200, JSON_TYPE, self.models()
        if path == "/v1/chat/completions" and method != "POST":
            return 405, JSON_TYPE, {"detail": "Method Not Allowed"}
        return self.not_found(method, path)

    def models(self) -> dict[str, Any]:
        # app.py get_models: the alias, which defaults to the --model path.
        model = {"id": self.model, "object": "model", "owned_by": "me", "permissions": []}
        return {"object": "list", "data": [model]}


class _NamedFunction(TypedDict):
    name: str


class _NamedToolChoice(TypedDict):
    type: Literal["function"]
    function: _NamedFunction


class _ResponseFormat(TypedDict):
    type: Literal["text", "json_object"]
    schema: NotRequired[Any]


class _LlamaCppPythonRequest(BaseModel):
    """The fields of llama-cpp-python's CreateChatCompletionRequest a client may get wrong.

    Extra keys are ignored, as in the real model (pydantic's default).
    """

    response_format: _ResponseFormat | None = None
    tool_choice: Literal["none", "auto", "required"] | _NamedToolChoice | None = None
    max_tokens: int | None = None
    temperature: float = 0.8
    top_p: float = 0.95
    stream: bool = False
    seed: int | None = None


def _fastapi_validation_message(errors: list[dict[str, Any]]) -> str:
    """str(RequestValidationError) as FastAPI 0.165 writes it, with the endpoint's place."""
    plural = "s" if len(errors) != 1 else ""
    message = f"{len(errors)} validation error{plural}:\n"
    message += "".join(f"  {error}\n" for error in errors)
    # The route function's file and first line (its decorator), as measured on 0.3.36.
    message += (
        '\n  File "/usr/lib/python3/site-packages/llama_cpp/server/app.py", line 376, '
        "in create_chat_completion\n    POST /v1/chat/completions"
    )
    return message.rstrip()


def _llama_cpp_python_500(message: str) -> Reply:
    error = {"message": message, "type": "internal_server_error", "param": None, "code": None}
    return 500, JSON_TYPE, {"error": error}


class LlamaCpp(LocalServer):
    """ggml-org/llama.cpp's llama-server.

    - Errors are `{"error": {"code", "message", "type"}}` (server-common.cpp
      format_error_response); a prompt of `n_ctx` tokens or more is a 400
      `exceed_context_size_error` with `n_prompt_tokens` and `n_ctx` beside them
      (server-context.cpp: "request (%d tokens) exceeds the available context size
      (%d tokens), try increasing it"); context shift is off by default.
    - oaicompat_chat_params_parse throws (answered **500** `server_error`) for `tools`
      without `--jinja` ("tools param requires --jinja flag"), `tool_choice` without it
      ("Unsupported param: tool_choice") and a `response_format.type` other than text,
      json_object, json_schema. `tool_choice` is read as a string: an object falls back
      to "auto" (json_value's wrong-type default).
    - The window is in GET /props (`default_generation_settings.n_ctx`, the runtime
      one); GET /v1/models has only `meta.n_ctx_train`, the model's.
    """

    name = "llama_cpp"

    def __init__(self, *, jinja: bool = True, **options: Any) -> None:
        super().__init__(**options)
        self.jinja = jinja

    def _error(self, status: int, kind: str, message: str, **extra: Any) -> Reply:
        error = {"code": status, "message": message, "type": kind, **extra}
        return status, JSON_TYPE, {"error": error}

    def refusal(self, body: dict[str, Any]) -> Reply | None:
        if body.get("tools") and not self.jinja:
            return self._error(500, "server_error", "tools param requires --jinja flag")
        if body.get("tool_choice") is not None and not self.jinja:
            return self._error(500, "server_error", "Unsupported param: tool_choice")
        kind = str((body.get("response_format") or {}).get("type") or "")
        if kind not in ("", "text", "json_object", "json_schema"):
            return self._error(
                500,
                "server_error",
                'response_format type must be one of "text" or "json_object", but got: ' + kind,
            )
        prompt = self.prompt_tokens(body)
        if prompt >= self.context_window:
            return self._error(
                400,
                "exceed_context_size_error",
                f"request ({prompt} tokens) exceeds the available context size "
                f"({self.context_window} tokens), try increasing it",
                n_prompt_tokens=prompt,
                n_ctx=self.context_window,
            )
        return None

    def seen(self, body: dict[str, Any]) -> dict[str, Any]:
        seen = dict(body)
        if not isinstance(seen.get("tool_choice"), str | None):
            seen["tool_choice"] = "auto"
        return seen

    def tool_call(self, body: dict[str, Any]) -> str | None:
        names = _tool_names(body)
        return names[0] if names and body.get("tool_choice") == "required" else None

    def not_found(self, method: str, path: str) -> Reply:
        return self._error(404, "not_found_error", "File Not Found")

    def route(self, method: str, path: str, body: Any) -> Reply:
        if method == "GET" and path in ("/v1/models", "/models"):
            return 200, JSON_TYPE, self.models()
        if method == "GET" and path == "/props":
            return 200, JSON_TYPE, self.props()
        if method == "GET" and path == "/health":
            return 200, JSON_TYPE, {"status": "ok"}
        return self.not_found(method, path)

    def models(self) -> dict[str, Any]:
        meta = {
            "vocab_type": 2,
            "n_vocab": 49152,
            "n_ctx_train": self.trained_context,
            "n_embd": 576,
            "n_params": 134515008,
            "size": 98306048,
        }
        data = {
            "id": self.model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "llamacpp",
            "meta": meta,
        }
        listed = {"name": self.model, "model": self.model, "type": "model"}
        return {"models": [listed], "object": "list", "data": [data]}

    def props(self) -> dict[str, Any]:
        """GET /props: the runtime window per slot."""
        return {
            "default_generation_settings": {"n_ctx": self.context_window, "params": {}},
            "total_slots": 1,
            "model_path": f"/models/{self.model}.gguf",
            "chat_template": "{% for message in messages %}...{% endfor %}",
            "build_info": "b6000-fake",
        }


class Ollama(LocalServer):
    """Ollama's OpenAI compatibility layer.

    - Errors are `{"error": {"message", "type", "param": null, "code": null}}` with type
      `invalid_request_error` for a 400 (openai/openai.go NewError).
    - `tools` for a model without the tools capability: 400 "<full model name> does not
      support tools" (server/images.go CheckCapabilities, routes.go scheduleRunner and
      handleScheduleError; the name is registry.ollama.ai/library/NAME:TAG).
    - ChatCompletionRequest has no `tool_choice` nor `max_completion_tokens`: ignored.
      `response_format` json_object and json_schema are both taken (as `format`).
    - A prompt over `num_ctx` is cut, not refused (server/prompt.go drops old messages,
      llm/llama_server.go truncates the prompt while context shift is on); with
      `context_shift=False` it is a 400 "the prompt is longer than the context length
      currently available to the model; ...".
    - POST /api/show reports the model's trained window in
      `model_info["<arch>.context_length"]` (routes.go GetModelInfo); GET /api/ps the
      loaded one (`context_length`); GET /v1/models no window.
    """

    name = "ollama"

    def __init__(
        self,
        *,
        tools: bool = False,
        context_shift: bool = True,
        architecture: str = "llama",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.tools = tools
        self.context_shift = context_shift
        self.architecture = architecture

    @staticmethod
    def full_name(model: str) -> str:
        """A model name as Ollama's errors spell it (model.ParseName(...).String())."""
        name = model if "/" in model else f"registry.ollama.ai/library/{model}"
        return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"

    def _error(self, status: int, message: str) -> Reply:
        kind = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
        error = {"message": message, "type": kind, "param": None, "code": None}
        return status, JSON_TYPE, {"error": error}

    def refusal(self, body: dict[str, Any]) -> Reply | None:
        if body.get("tools") and not self.tools:
            model = self.full_name(str(body.get("model") or self.model))
            return self._error(400, f"{model} does not support tools")
        if not self.context_shift and self.prompt_tokens(body) >= self.context_window:
            return self._error(
                400,
                "the prompt is longer than the context length currently available to the "
                "model; shorten the prompt, adjust the context length in settings, or use a "
                "model with a longer context length",
            )
        return None

    def seen(self, body: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in body.items() if k not in ("tool_choice", "max_completion_tokens")}

    def reported_prompt_tokens(self, prompt: int) -> int:
        # The prompt was cut to fit the window, keeping room for one token.
        return min(prompt, self.context_window - 1)

    def not_found(self, method: str, path: str) -> Reply:
        # gin's default 404 (no method-not-allowed handling): plain text.
        return 404, TEXT_TYPE, "404 page not found"

    def route(self, method: str, path: str, body: Any) -> Reply:
        if method in ("GET", "HEAD") and path == "/":
            return 200, TEXT_TYPE, "Ollama is running"
        if method == "GET" and path == "/v1/models":
            return 200, JSON_TYPE, self.models()
        if method == "GET" and path == "/api/ps":
            return 200, JSON_TYPE, self.ps()
        if method == "POST" and path == "/api/show":
            return self.show(body)
        return self.not_found(method, path)

    def models(self) -> dict[str, Any]:
        model = {
            "id": self.model if ":" in self.model else f"{self.model}:latest",
            "object": "model",
            "created": int(time.time()),
            "owned_by": "library",
        }
        return {"object": "list", "data": [model]}

    def _details(self) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.architecture,
            "families": [self.architecture],
            "parameter_size": "134.52M",
            "quantization_level": "Q4_1",
        }

    def show(self, body: Any) -> Reply:
        """POST /api/show."""
        if not isinstance(body, dict):
            return 400, JSON_TYPE, {"error": "missing request body"}
        name = body.get("model") or body.get("name")
        if not name:
            return 400, JSON_TYPE, {"error": "model is required"}
        if str(name).split(":")[0] != self.model.split(":")[0]:
            return 404, JSON_TYPE, {"error": f"model '{name}' not found"}
        capabilities = ["completion", "tools"] if self.tools else ["completion"]
        info = {
            "general.architecture": self.architecture,
            f"{self.architecture}.context_length": self.trained_context,
        }
        shown = {
            "modelfile": f"FROM {self.model}\n",
            "parameters": "",
            "template": "{{ .Prompt }}",
            "details": self._details(),
            "model_info": info,
            "capabilities": capabilities,
            "modified_at": "2026-11-01T00:00:00Z",
        }
        return 200, JSON_TYPE, shown

    def ps(self) -> dict[str, Any]:
        """GET /api/ps: the loaded model with its runtime window."""
        name = self.model if ":" in self.model else f"{self.model}:latest"
        loaded = {
            "name": name,
            "model": name,
            "size": 200_000_000,
            "digest": "0" * 64,
            "details": self._details(),
            "expires_at": "2099-01-01T00:00:00Z",
            "size_vram": 0,
            "context_length": self.context_window,
        }
        return {"models": [loaded]}


class VLLM(LocalServer):
    """vLLM's OpenAI-compatible server.

    - Errors are `{"error": {"message", "type": "BadRequestError", "param", "code": 400}}`
      (engine/protocol.py ErrorInfo: `code` is the HTTP status as an int; releases
      before the v1 API answered the same fields flat, with `"object": "error"`).
    - `tools` without `tool_choice` mean "auto", which needs `--enable-auto-tool-choice`
      and `--tool-call-parser`: otherwise 400 '"auto" tool choice requires
      --enable-auto-tool-choice and --tool-call-parser to be set'. "required" and a
      named function are served through structured outputs.
    - A prompt plus the requested output over `max_model_len`: 400 "This model's maximum
      context length is W tokens. However, you requested R output tokens and your prompt
      contains at least P input tokens, for a total of at least R+P tokens. Please reduce
      the length of the input prompt or the number of requested output tokens.
      (parameter=input_tokens, value=P)", `param` "input_tokens" (VLLMValidationError).
    - GET /v1/models carries `max_model_len` (ModelCard).
    """

    name = "vllm"

    def __init__(self, *, auto_tool_choice: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self.auto_tool_choice = auto_tool_choice

    def _error(self, message: str, param: str | None = None) -> Reply:
        error = {"message": message, "type": "BadRequestError", "param": param, "code": 400}
        return 400, JSON_TYPE, {"error": error}

    def refusal(self, body: dict[str, Any]) -> Reply | None:
        choice = body.get("tool_choice", "auto" if body.get("tools") else "none")
        if choice == "auto" and body.get("tools") and not self.auto_tool_choice:
            return self._error(
                '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                "to be set"
            )
        prompt = self.prompt_tokens(body)
        # With no limit asked, vLLM fills the window: the least it needs is one token.
        requested = body.get("max_completion_tokens") or body.get("max_tokens") or 1
        if prompt + requested > self.context_window:
            return self._error(
                f"This model's maximum context length is {self.context_window} tokens. "
                f"However, you requested {requested} output tokens and your prompt contains "
                f"at least {prompt} input tokens, for a total of at least {prompt + requested} "
                "tokens. Please reduce the length of the input prompt or the number of "
                f"requested output tokens. (parameter=input_tokens, value={prompt})",
                "input_tokens",
            )
        return None

    def tool_call(self, body: dict[str, Any]) -> str | None:
        named = _named_tool(body)
        if named is not None:
            return named
        names = _tool_names(body)
        return names[0] if names and body.get("tool_choice") == "required" else None

    def route(self, method: str, path: str, body: Any) -> Reply:
        if path == "/v1/models":
            if method != "GET":
                return 405, JSON_TYPE, {"detail": "Method Not Allowed"}
            return 200, JSON_TYPE, self.models()
        if method == "GET" and path == "/health":
            return 200, JSON_TYPE, {}
        return self.not_found(method, path)

    def models(self) -> dict[str, Any]:
        card = {
            "id": self.model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "vllm",
            "root": self.model,
            "parent": None,
            "max_model_len": self.context_window,
            "permission": [],
        }
        return {"object": "list", "data": [card]}


PROFILES: dict[str, type[LocalServer]] = {
    profile.name: profile for profile in (LlamaCppPython, LlamaCpp, Ollama, VLLM)
}


def make_profile(name: str, **options: Any) -> LocalServer:
    """The profile called `name` (see PROFILES), with its options."""
    try:
        return PROFILES[name](**options)
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}") from None


def _named_tool(body: dict[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        return str(name) if name is not None else None
    return None


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [
        str((tool.get("function") or {}).get("name"))
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
    ]


def tool_parameters(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The JSON schema of the parameters of the tool called `name` in the request."""
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if function.get("name") == name:
            parameters = function.get("parameters")
            return parameters if isinstance(parameters, dict) else {"type": "object"}
    return {"type": "object"}


def schema_in_prompt(messages: Any) -> dict[str, Any] | None:
    """The largest JSON schema written into the messages (a model told to follow one).

    A server asked for `json_object` or plain text has no schema of its own: a model
    that follows its instructions answers in the one the prompt spells out.
    """
    decoder = json.JSONDecoder()
    best: dict[str, Any] | None = None
    best_size = 0
    for text in _texts(messages):
        start = text.find("{")
        while start != -1:
            try:
                value, end = decoder.raw_decode(text, start)
            except ValueError:
                start = text.find("{", start + 1)
                continue
            if isinstance(value, dict) and _is_schema(value) and end - start > best_size:
                best, best_size = value, end - start
            start = text.find("{", end)
    return best


def auto_json(body: dict[str, Any], *, follows_prompt_schema: bool = True) -> str | None:
    """The JSON text the model answers this request with, or None for prose.

    A schema the server turns into a grammar is always followed; one only written in the
    prompt is followed unless ``follows_prompt_schema`` is False (then it is echoed).
    """
    response_format = body.get("response_format") or {}
    schema: Any = None
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
    elif response_format.get("type") == "json_object":
        schema = response_format.get("schema")  # llama-cpp-python's own extension
    if isinstance(schema, dict):
        return json.dumps(minimal_instance(schema))
    schema = schema_in_prompt(body.get("messages"))
    if schema is None:
        return "{}" if response_format.get("type") == "json_object" else None
    return json.dumps(minimal_instance(schema) if follows_prompt_schema else schema)


def _is_schema(value: dict[str, Any]) -> bool:
    return isinstance(value.get("properties"), dict) and value.get("type", "object") == "object"


def _texts(messages: Any) -> list[str]:
    texts: list[str] = []
    for message in messages or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p.get("text", "") for p in content if isinstance(p, dict)]
    return texts
