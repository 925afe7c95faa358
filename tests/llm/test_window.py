"""The model's context window: asked of the server (vLLM, llama.cpp, ollama shapes), and
read from the overflow errors of llama-cpp-python, vLLM, llama.cpp and OpenAI."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx2
import openai
import pytest

from opencode_restore.llm.window import (
    OLLAMA_DEFAULT_WINDOW,
    Overflow,
    discover_window,
    parse_overflow,
    server_root,
)

pytestmark = pytest.mark.anyio

Routes = dict[tuple[str, str], httpx2.Response]


def server(routes: Routes, seen: list[str] | None = None) -> httpx2.AsyncClient:
    """A client whose server answers ``routes`` ((method, path) -> response), else 404."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        if seen is not None:
            seen.append(f"{request.method} {request.url.path}")
        return routes.get((request.method, request.url.path), httpx2.Response(404))

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handle))


async def discover(
    routes: Routes, model: str = "smollm2", seen: list[str] | None = None
) -> int | None:
    async with server(routes, seen) as client:
        return await discover_window("http://127.0.0.1:8080/v1", model, client)


async def test_vllm_models_listing_says_max_model_len() -> None:
    listing = {
        "object": "list",
        "data": [
            {"id": "other", "object": "model", "max_model_len": 32768},
            {"id": "smollm2", "object": "model", "owned_by": "vllm", "max_model_len": 8192},
        ],
    }
    seen: list[str] = []
    found = await discover({("GET", "/v1/models"): httpx2.Response(200, json=listing)}, seen=seen)
    assert found == 8192
    assert seen == ["GET /v1/models"]  # one request when the first answer says it


async def test_llama_cpp_props_n_ctx_wins_over_the_trained_window() -> None:
    listing = {"data": [{"id": "model.gguf", "meta": {"n_ctx_train": 8192, "n_vocab": 49152}}]}
    props = {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1}
    routes = {
        ("GET", "/v1/models"): httpx2.Response(200, json=listing),
        ("GET", "/props"): httpx2.Response(200, json=props),
    }
    assert await discover(routes) == 2048


async def test_llama_cpp_without_props_falls_back_to_the_trained_window() -> None:
    listing = {"data": [{"id": "model.gguf", "meta": {"n_ctx_train": 8192}}]}
    seen: list[str] = []
    found = await discover({("GET", "/v1/models"): httpx2.Response(200, json=listing)}, seen=seen)
    assert found == 8192
    assert "POST /api/show" not in seen


#: ollama's OpenAI-compatible listing (no window in it).
OLLAMA_MODELS = {
    "object": "list",
    "data": [{"id": "smollm2:135m", "object": "model", "created": 1, "owned_by": "library"}],
}


async def test_ollama_loaded_model_says_its_context_length() -> None:
    running = {
        "models": [{"name": "smollm2:135m", "model": "smollm2:135m", "context_length": 6144}]
    }
    routes = {
        ("GET", "/v1/models"): httpx2.Response(200, json=OLLAMA_MODELS),
        ("GET", "/api/ps"): httpx2.Response(200, json=running),
    }
    assert await discover(routes, model="smollm2:135m") == 6144


@pytest.mark.parametrize(
    ("shown", "expected"),
    [
        (
            {
                "parameters": "stop <|im_end|>\nnum_ctx 8192",
                "model_info": {"llama.context_length": 131072},
            },
            8192,
        ),
        ({"parameters": "", "model_info": {"llama.context_length": 131072}}, OLLAMA_DEFAULT_WINDOW),
        ({"model_info": {"gemma3.context_length": 2048}}, 2048),
        ({"modelfile": "FROM x"}, None),
    ],
)
async def test_ollama_show_num_ctx_else_its_default_window(
    shown: dict[str, object], expected: int | None
) -> None:
    seen: list[str] = []
    routes = {
        ("GET", "/v1/models"): httpx2.Response(200, json=OLLAMA_MODELS),
        ("POST", "/api/show"): httpx2.Response(200, json=shown),
    }
    assert await discover(routes, model="smollm2:135m", seen=seen) == expected
    assert seen[-1] == "POST /api/show"


async def test_ollama_show_is_asked_for_the_model() -> None:
    bodies: list[dict[str, object]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/api/show":
            bodies.append(json.loads(request.content))
            return httpx2.Response(200, json={"parameters": "num_ctx 3000"})
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json=OLLAMA_MODELS)
        return httpx2.Response(404)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handle)) as client:
        found = await discover_window("http://127.0.0.1:11434/v1/", "qwen", client, api_key="k")
    assert (found, bodies) == (3000, [{"model": "qwen"}])


async def test_llama_cpp_python_says_nothing_and_failures_are_ignored() -> None:
    # llama-cpp-python's /v1/models has no window; the other routes are missing or broken.
    listing = {"object": "list", "data": [{"id": "smollm2", "object": "model", "owned_by": "me"}]}
    routes = {
        ("GET", "/v1/models"): httpx2.Response(200, json=listing),
        ("GET", "/props"): httpx2.Response(200, text="<html>not json</html>"),
        ("GET", "/api/ps"): httpx2.Response(500),
        ("POST", "/api/show"): httpx2.Response(405),
    }
    assert await discover(routes) is None


async def test_a_server_without_a_model_listing_is_asked_nothing_more() -> None:
    seen: list[str] = []
    routes = {("POST", "/api/show"): httpx2.Response(200, json={"parameters": "num_ctx 3000"})}
    assert await discover(routes, seen=seen) is None
    assert seen == ["GET /v1/models"]


async def test_a_server_that_does_not_answer_is_no_window() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(refuse)) as client:
        assert await discover_window("http://127.0.0.1:9/v1", "m", client) is None


async def test_tiny_numbers_are_no_window() -> None:
    listing = {"data": [{"id": "smollm2", "max_model_len": 0}]}
    assert await discover({("GET", "/v1/models"): httpx2.Response(200, json=listing)}) is None


def test_server_root_drops_the_openai_prefix() -> None:
    assert server_root("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert server_root("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080"
    assert server_root("http://h:1234/api") == "http://h:1234/api"


def bad_request(body: object, status: int = 400) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")
    response = httpx2.Response(status, json=body, request=request)
    client = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:8080/v1", max_retries=0)
    return client._make_status_error_from_response(response)


LLAMA_CPP_PYTHON = {
    "error": {
        "message": "Requested tokens (3117) exceed context window of 2048",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
VLLM = {
    "object": "error",
    "message": "This model's maximum context length is 8192 tokens. However, you requested "
    "10240 tokens (8192 in the messages, 2048 in the completion). Please reduce the length "
    "of the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
LLAMA_CPP = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 4711,
        "n_ctx": 4096,
    }
}
OPENAI = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 130512 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize(
    ("body", "window", "requested"),
    [
        (LLAMA_CPP_PYTHON, 2048, 3117),
        (VLLM, 8192, 8192),
        (LLAMA_CPP, 4096, 4711),
        (OPENAI, 128000, 130512),
        ({"error": {"message": "too long", "code": "context_length_exceeded"}}, None, None),
    ],
)
def test_overflow_errors_name_the_window(
    body: object, window: int | None, requested: int | None
) -> None:
    found = parse_overflow(bad_request(body))
    assert found is not None
    assert (found.window, found.requested) == (window, requested)


@pytest.mark.parametrize(
    "make",
    [
        lambda: bad_request({"error": {"message": "Unsupported parameter: 'temperature'"}}),
        lambda: bad_request({"error": {"message": "Input should be 'text'"}}, 500),
        lambda: TimeoutError("timed out"),
    ],
)
def test_other_errors_are_no_overflow(make: Callable[[], BaseException]) -> None:
    assert parse_overflow(make()) is None


def test_a_plain_message_still_reads_as_an_overflow() -> None:
    found = parse_overflow(RuntimeError("Requested tokens (5000) exceed context window of 4096"))
    assert found == Overflow("Requested tokens (5000) exceed context window of 4096", 4096, 5000)
