"""The local server profiles of the fake LLM server refuse what the real servers refuse.

Each expected body is the real server's, with where it comes from: measured on a real
llama-cpp-python 0.3.36 server (FastAPI 0.165, SmolLM2-135M-Instruct Q4_1, --n_ctx 512),
or read in the server's source at the version named beside it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_llm_server import FakeLLMServer
from tests.fakes.local_servers import Ollama, make_profile, schema_in_prompt
from tests.fakes.process import fake_server_process

SCHEMA = {
    "type": "object",
    "properties": {"goal": {"type": "string"}},
    "required": ["goal"],
    "additionalProperties": False,
}
JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "T", "schema": SCHEMA, "strict": True},
}
TOOL = {
    "type": "function",
    "function": {
        "name": "search_log",
        "description": "search",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}
LONG = "word " * 900  # 4,500 characters: 1,286 fake tokens


def _call(
    url: str, body: dict[str, Any] | None = None, method: str = "POST"
) -> tuple[int, Any, str]:
    """(status, JSON body or text, content type) of one request to the fake."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw, kind = response.status, response.read(), response.headers["content-type"]
    except urllib.error.HTTPError as exc:
        status, raw, kind = exc.code, exc.read(), exc.headers["content-type"]
    text = raw.decode()
    return status, json.loads(text) if kind.startswith("application/json") else text, kind


def _chat(server: FakeLLMServer, **body: Any) -> tuple[int, Any]:
    request = {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], **body}
    status, reply, _ = _call(f"{server.openai_base_url}/chat/completions", request)
    return status, reply


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[FakeLLMServer] = []

    def start(profile: str, **options: Any) -> FakeLLMServer:
        server = FakeLLMServer(profile=make_profile(profile, **options)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


# -- llama-cpp-python ------------------------------------------------------------------

# Measured on llama-cpp-python 0.3.36: response_format json_schema is answered 500 with
# FastAPI's RequestValidationError text (llama_cpp/server/errors.py RouteErrorHandler
# wraps every exception; types.py: ChatCompletionRequestResponseFormat's type is
# Literal["text", "json_object"]). Only the site-packages path differs from the real one.
LLAMA_CPP_PYTHON_JSON_SCHEMA_500 = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
        "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File "
        '"/usr/lib/python3/site-packages/llama_cpp/server/app.py", line 376, in '
        "create_chat_completion\n    POST /v1/chat/completions",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


def test_llama_cpp_python_answers_json_schema_with_a_500_validation_body(serve: Any) -> None:
    server = serve("llama_cpp_python")
    status, body = _chat(server, max_tokens=5, response_format=JSON_SCHEMA)
    assert status == 500
    assert body == LLAMA_CPP_PYTHON_JSON_SCHEMA_500
    assert server.requests[-1]["status"] == 500


def test_llama_cpp_python_takes_json_object_and_its_schema_extension(serve: Any) -> None:
    server = serve("llama_cpp_python")
    # llama_chat_format.py: json_object with a "schema" builds a grammar from it.
    status, body = _chat(server, response_format={"type": "json_object", "schema": SCHEMA})
    assert status == 200
    assert json.loads(body["choices"][0]["message"]["content"]) == {"goal": "x"}
    status, body = _chat(server, response_format={"type": "text"})
    assert status == 200
    # Not an OpenAI field, but the one extension the wire check knows (wire_types).
    assert server.invalid == []


def test_llama_cpp_python_context_overflow_is_a_400_naming_the_window(serve: Any) -> None:
    server = serve("llama_cpp_python", context_window=512)
    messages = [{"role": "user", "content": LONG}]
    status, body = _chat(server, messages=messages, max_tokens=20)
    # Measured (same wording, the real tokenizer's count): errors.py
    # ErrorResponseFormatters.context_length_exceeded, llama.py "Requested tokens".
    assert status == 400
    assert body == {
        "error": {
            "message": "This model's maximum context length is 512 tokens. However, you "
            "requested 1306 tokens (1286 in the messages, 20 in the completion). Please reduce "
            "the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    # Without max_tokens the formatter prints None (measured).
    status, body = _chat(server, messages=messages, max_completion_tokens=20)
    assert "(1286 in the messages, None in the completion)" in body["error"]["message"]


def test_llama_cpp_python_ignores_tools_unless_tool_choice_names_one(serve: Any) -> None:
    server = serve("llama_cpp_python")
    # Measured: tools with tool_choice "auto" (or none) give plain text, no tool call.
    status, body = _chat(server, tools=[TOOL], tool_choice="auto")
    assert status == 200
    assert "tool_calls" not in body["choices"][0]["message"]
    assert body["choices"][0]["finish_reason"] == "stop"
    status, body = _chat(server, tools=[TOOL])
    assert "tool_calls" not in body["choices"][0]["message"]
    # Measured: a named function is forced through a grammar.
    named = {"type": "function", "function": {"name": "search_log"}}
    status, body = _chat(server, tools=[TOOL], tool_choice=named)
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "search_log"
    assert json.loads(call["function"]["arguments"]) == {"query": "x"}
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    # Measured: a name missing from tools is a ValueError, wrapped as a 500.
    missing = {"type": "function", "function": {"name": "nope"}}
    status, body = _chat(server, tools=[TOOL], tool_choice=missing)
    assert status == 500
    assert body == {
        "error": {
            "message": "Tool choice 'nope' not found in tools.",
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    }


def test_llama_cpp_python_reports_no_window(serve: Any) -> None:
    server = serve("llama_cpp_python", model="/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    # Measured: GET /v1/models lists the --model path, nothing about n_ctx (app.py).
    status, body, _ = _call(f"{server.base_url}/v1/models", method="GET")
    assert status == 200
    assert body == {
        "object": "list",
        "data": [
            {
                "id": "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                "object": "model",
                "owned_by": "me",
                "permissions": [],
            }
        ],
    }
    # Measured: FastAPI's 404 and 405.
    assert _call(f"{server.base_url}/props", method="GET")[:2] == (404, {"detail": "Not Found"})
    assert _call(f"{server.base_url}/api/show", {"model": "x"})[:2] == (
        404,
        {"detail": "Not Found"},
    )
    status, body, _ = _call(f"{server.openai_base_url}/chat/completions", method="GET")
    assert (status, body) == (405, {"detail": "Method Not Allowed"})


def test_llama_cpp_python_ignores_max_completion_tokens(serve: Any) -> None:
    server = serve("llama_cpp_python")
    # Measured: 65 tokens generated for max_completion_tokens 12 (not a request field).
    profile = server.profile
    assert profile is not None
    seen = profile.seen({"messages": [], "max_completion_tokens": 12, "max_tokens": 9})
    assert seen == {"messages": [], "max_tokens": 9}


# -- llama.cpp (llama-server) ----------------------------------------------------------


def test_llama_cpp_window_is_in_props_and_the_trained_one_in_models(serve: Any) -> None:
    server = serve("llama_cpp", context_window=2048, trained_context=8192)
    # tools/server: GET /props default_generation_settings.n_ctx (the slot's window);
    # GET /v1/models data[].meta.n_ctx_train (the model's).
    status, props, _ = _call(f"{server.base_url}/props", method="GET")
    assert status == 200
    assert props["default_generation_settings"]["n_ctx"] == 2048
    status, models, _ = _call(f"{server.base_url}/v1/models", method="GET")
    assert models["data"][0]["meta"]["n_ctx_train"] == 8192
    assert models["data"][0]["owned_by"] == "llamacpp"


def test_llama_cpp_context_overflow_body(serve: Any) -> None:
    server = serve("llama_cpp", context_window=512)
    status, body = _chat(server, messages=[{"role": "user", "content": LONG}])
    # server-context.cpp (n_tokens >= n_ctx) and server-common.cpp format_error_response.
    assert status == 400
    assert body == {
        "error": {
            "code": 400,
            "message": "request (1286 tokens) exceeds the available context size (512 tokens), "
            "try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 1286,
            "n_ctx": 512,
        }
    }


def test_llama_cpp_takes_json_schema_and_tools_with_jinja(serve: Any) -> None:
    server = serve("llama_cpp")
    status, body = _chat(server, response_format=JSON_SCHEMA, tools=[TOOL])
    assert status == 200
    assert json.loads(body["choices"][0]["message"]["content"]) == {"goal": "x"}
    # utils.hpp oaicompat_chat_params_parse: tool_choice is read as a string; "required"
    # forces a call.
    status, body = _chat(server, tools=[TOOL], tool_choice="required")
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "search_log"


def test_llama_cpp_without_jinja_refuses_tools_with_a_500(serve: Any) -> None:
    server = serve("llama_cpp", jinja=False)
    # oaicompat_chat_params_parse throws std::runtime_error: a 500 server_error.
    status, body = _chat(server, tools=[TOOL])
    assert (status, body) == (
        500,
        {
            "error": {
                "code": 500,
                "message": "tools param requires --jinja flag",
                "type": "server_error",
            }
        },
    )
    status, body = _chat(server, response_format={"type": "grammar"})
    assert status == 500
    assert body["error"]["message"] == (
        'response_format type must be one of "text" or "json_object", but got: grammar'
    )
    status, body, _ = _call(f"{server.base_url}/api/show", {"model": "x"})
    assert (status, body["error"]["type"]) == (404, "not_found_error")


# -- ollama ----------------------------------------------------------------------------


def test_ollama_refuses_tools_for_a_model_without_them(serve: Any) -> None:
    server = serve("ollama")
    # server/images.go CheckCapabilities + routes.go scheduleRunner (name first),
    # openai/openai.go NewError (v0.33.0-rc2).
    status, body = _chat(server, model="smollm2", tools=[TOOL])
    assert (status, body) == (
        400,
        {
            "error": {
                "message": "registry.ollama.ai/library/smollm2:latest does not support tools",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
    )
    with_tools = serve("ollama", tools=True)
    status, body = _chat(with_tools, tools=[TOOL], tool_choice="required")
    # No tool_choice field in ollama's ChatCompletionRequest: ignored, the model is free.
    assert status == 200
    assert "tool_calls" not in body["choices"][0]["message"]


def test_ollama_reports_windows_in_api_show_and_api_ps(serve: Any) -> None:
    server = serve("ollama", context_window=4096, trained_context=8192)
    # routes.go GetModelInfo: model_info["<arch>.context_length"] is the model's window.
    status, body, _ = _call(f"{server.base_url}/api/show", {"model": "smollm2"})
    assert status == 200
    assert body["model_info"]["llama.context_length"] == 8192
    assert body["model_info"]["general.architecture"] == "llama"
    assert body["capabilities"] == ["completion"]
    # /api/show is POST only; gin answers anything else with a plain-text 404.
    status, text, kind = _call(f"{server.base_url}/api/show", method="GET")
    assert (status, text) == (404, "404 page not found")
    assert kind.startswith("text/plain")
    assert _call(f"{server.base_url}/api/show", {})[:2] == (400, {"error": "model is required"})
    # api/types.go ProcessModelResponse.context_length: the loaded window.
    status, body, _ = _call(f"{server.base_url}/api/ps", method="GET")
    assert body["models"][0]["context_length"] == 4096
    status, body, _ = _call(f"{server.base_url}/v1/models", method="GET")
    assert body["data"][0]["id"] == "smollm2:latest"
    assert "max_model_len" not in body["data"][0]


def test_ollama_cuts_a_long_prompt_instead_of_refusing_it(serve: Any) -> None:
    server = serve("ollama", context_window=512)
    # server/prompt.go chatPrompt and llm/llama_server.go: truncated while context shift
    # is on (the default), so usage never exceeds the window.
    status, body = _chat(server, messages=[{"role": "user", "content": LONG}])
    assert status == 200
    assert body["usage"]["prompt_tokens"] == 511
    strict = serve("ollama", context_window=512, context_shift=False)
    status, body = _chat(strict, messages=[{"role": "user", "content": LONG}])
    assert status == 400
    assert body["error"]["message"].startswith(
        "the prompt is longer than the context length currently available to the model"
    )
    # ChatCompletionRequest has neither field: ignored.
    assert Ollama().seen({"tool_choice": "auto", "max_completion_tokens": 5}) == {}


# -- vLLM ------------------------------------------------------------------------------


def test_vllm_reports_max_model_len(serve: Any) -> None:
    server = serve("vllm", context_window=8192, model="HuggingFaceTB/SmolLM2-135M-Instruct")
    # vllm/entrypoints/openai/engine/protocol.py ModelCard.max_model_len.
    status, body, _ = _call(f"{server.base_url}/v1/models", method="GET")
    assert status == 200
    card = body["data"][0]
    assert (card["id"], card["max_model_len"], card["owned_by"]) == (
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        8192,
        "vllm",
    )


def test_vllm_context_overflow_body(serve: Any) -> None:
    server = serve("vllm", context_window=1024)
    status, body = _chat(server, messages=[{"role": "user", "content": "x" * 3500}], max_tokens=100)
    # engine/protocol.py ErrorInfo (code is the status, an int); the wording of
    # VLLMValidationError with parameter=input_tokens.
    assert status == 400
    assert body == {
        "error": {
            "message": "This model's maximum context length is 1024 tokens. However, you "
            "requested 100 output tokens and your prompt contains at least 1000 input tokens, "
            "for a total of at least 1100 tokens. Please reduce the length of the input prompt "
            "or the number of requested output tokens. (parameter=input_tokens, value=1000)",
            "type": "BadRequestError",
            "param": "input_tokens",
            "code": 400,
        }
    }
    status, _ = _chat(server, messages=[{"role": "user", "content": "x" * 3500}], max_tokens=24)
    assert status == 200


def test_vllm_refuses_auto_tool_choice_unless_enabled(serve: Any) -> None:
    server = serve("vllm")
    # tools without tool_choice mean "auto" (protocol.py check_tool_usage).
    status, body = _chat(server, tools=[TOOL])
    assert status == 400
    assert body["error"]["message"] == (
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    )
    named = {"type": "function", "function": {"name": "search_log"}}
    status, body = _chat(server, tools=[TOOL], tool_choice=named)
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "search_log"
    enabled = serve("vllm", auto_tool_choice=True)
    status, body = _chat(enabled, tools=[TOOL], response_format=JSON_SCHEMA)
    assert status == 200
    assert json.loads(body["choices"][0]["message"]["content"]) == {"goal": "x"}


# -- shared behaviour ------------------------------------------------------------------


def test_a_model_asked_for_json_in_the_prompt_answers_in_that_schema(serve: Any) -> None:
    server = serve("llama_cpp_python")
    prompt = f"Answer with one JSON object matching this schema:\n{json.dumps(SCHEMA)}"
    status, body = _chat(server, messages=[{"role": "user", "content": prompt}])
    assert status == 200
    assert json.loads(body["choices"][0]["message"]["content"]) == {"goal": "x"}
    status, body = _chat(
        server,
        messages=[{"role": "user", "content": prompt}],
        response_format={"type": "json_object"},
    )
    assert status == 200
    assert json.loads(body["choices"][0]["message"]["content"]) == {"goal": "x"}
    assert schema_in_prompt([{"role": "user", "content": "no {json} here"}]) is None


def test_a_small_model_echoes_a_schema_it_only_reads_in_its_prompt(serve: Any) -> None:
    server = serve("llama_cpp_python", follows_prompt_schema=False)
    prompt = f"Answer with one JSON object matching this schema:\n{json.dumps(SCHEMA)}"
    messages = [{"role": "user", "content": prompt}]
    # Measured on SmolLM2-135M-Instruct (llama-cpp-python 0.3.36): json_object with the
    # schema only in the prompt came back as the schema itself ('{"$defs": {...').
    status, body = _chat(server, messages=messages, response_format={"type": "json_object"})
    assert status == 200
    assert json.loads(body["choices"][0]["message"]["content"]) == SCHEMA
    # With the schema as a grammar (llama_chat_format.py: json_object's "schema"), the
    # reply has its shape.
    grammar = {"type": "json_object", "schema": SCHEMA}
    status, body = _chat(server, messages=messages, response_format=grammar)
    assert json.loads(body["choices"][0]["message"]["content"]) == {"goal": "x"}


def test_local_servers_need_no_api_key_and_log_every_endpoint(serve: Any) -> None:
    server = serve("vllm")
    status, _ = _chat(server)
    assert status == 200
    _call(f"{server.base_url}/v1/models", method="GET")
    assert [(r.get("method", "POST"), r["path"]) for r in server.requests] == [
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
    ]


def test_unknown_profile_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown profile 'lmstudio'"):
        make_profile("lmstudio")


@pytest.mark.slow
def test_the_cli_entry_takes_a_profile_and_a_window(tmp_path: Path) -> None:
    with fake_server_process(tmp_path, profile="vllm", context_window=3000) as (url, log, _):
        status, body, _ = _call(f"{url}/v1/models", method="GET")
        assert body["data"][0]["max_model_len"] == 3000
        status, body, _ = _call(
            f"{url}/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x" * 11000}]},
        )
        assert status == 400
        assert "maximum context length is 3000 tokens" in body["error"]["message"]
    assert len(log.read_text().splitlines()) == 1  # the chat request (GETs are not logged)
