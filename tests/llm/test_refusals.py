"""Reading refused parameters out of real error bodies (as reported in public bug threads)."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

from opencode_restore.llm.refusals import Refusal, parse_refusal


def _error(body: dict[str, Any], status: int = 400) -> openai.APIStatusError:
    request = httpx2.Request("POST", "https://api.openai.com/v1/chat/completions")
    response = httpx2.Response(status, json=body, request=request)
    client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0)
    try:
        return client._make_status_error_from_response(response)
    finally:
        client.close()


def _openai(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return {"error": error}


def _anthropic(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


TEMPERATURE = (
    "Unsupported value: 'temperature' does not support 0.0 with this model. "
    "Only the default (1) value is supported."
)
MAX_TOKENS = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead."
)


@pytest.mark.parametrize(
    ("body", "param", "kind"),
    [
        (_openai(TEMPERATURE, "temperature", "unsupported_value"), "temperature", "value"),
        (_openai(MAX_TOKENS, "max_tokens", "unsupported_parameter"), "max_tokens", "parameter"),
        # gpt-4o: the parameter is named in the message only.
        (
            _openai("Unrecognized request argument supplied: reasoning_effort", None, None),
            "reasoning_effort",
            "parameter",
        ),
        # A gateway that kept the message but lost param and code.
        (
            {"error": {"message": MAX_TOKENS, "code": "invalid_request_body"}},
            "max_tokens",
            "parameter",
        ),
        (
            _anthropic(
                "`temperature` and `top_p` cannot both be specified for this model. "
                "Please use only one."
            ),
            "top_p",
            "parameter",
        ),
        (_anthropic("top_k: Extra inputs are not permitted"), "top_k", "parameter"),
    ],
)
def test_refused_parameter_is_found(body: dict[str, Any], param: str, kind: str) -> None:
    refusal = parse_refusal(_error(body))
    assert refusal is not None
    assert (refusal.param, refusal.kind) == (param, kind)


def test_anthropic_output_limit_refusal_carries_the_maximum() -> None:
    message = (
        "max_tokens: 128001 > 64000, which is the maximum allowed number of output tokens "
        "for claude-opus-4-5-20251101"
    )
    assert parse_refusal(_error(_anthropic(message))) == Refusal(
        "max_tokens", "limit", message, 64000
    )


def test_openai_output_limit_refusal_carries_the_maximum() -> None:
    message = (
        "max_tokens is too large: 32000. This model supports at most 16384 completion tokens, "
        "whereas you provided 32000."
    )
    refusal = parse_refusal(_error(_openai(message, "max_tokens", None)))
    assert refusal == Refusal("max_tokens", "limit", message, 16384)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        # Our own bug, not a parameter to drop.
        (
            _openai(
                "Invalid schema for response_format 'TurnSummary': In context=(), "
                "'additionalProperties' is required to be supplied and to be false.",
                "response_format",
                None,
            ),
            400,
        ),
        (_openai("Rate limit reached", None, "rate_limit_exceeded"), 429),
        # A server error that names no parameter stays one (and is retried).
        (_openai("The server had an error while processing your request.", None, None), 500),
        # vLLM's 500 for a crash in its response_format handling (vllm#35438).
        (
            {"error": {"message": "", "type": "InternalServerError", "param": None, "code": 500}},
            500,
        ),
        (_openai("Unsupported value: 'messages' must not be empty", "messages", None), 400),
    ],
)
def test_other_errors_are_no_refusal(body: dict[str, Any], status: int) -> None:
    assert parse_refusal(_error(body, status)) is None


# llama-cpp-python validates the body inside its route and answers any exception with a
# 500 whose message is the exception's text: here pydantic's errors, as a Python repr.
LLAMA_CPP_ERRORS = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}]"
)


def _llama_cpp(message: str) -> dict[str, Any]:
    error = {"message": message, "type": "internal_server_error", "param": None, "code": None}
    return {"error": error}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (_llama_cpp(LLAMA_CPP_ERRORS), 500),
        # Newer FastAPI prints a count before the errors.
        (_llama_cpp("1 validation error:\n  " + LLAMA_CPP_ERRORS[1:-1]), 500),
        # FastAPI's own answer to an invalid body: 422 with the errors as JSON.
        (
            {
                "detail": [
                    {
                        "type": "literal_error",
                        "loc": ["body", "response_format", "type"],
                        "msg": "Input should be 'text' or 'json_object'",
                        "input": "json_schema",
                        "ctx": {"expected": "'text' or 'json_object'"},
                    }
                ]
            },
            422,
        ),
        # vLLM's own error shape, the pydantic errors in its message.
        (
            {
                "object": "error",
                "message": LLAMA_CPP_ERRORS,
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            400,
        ),
    ],
)
def test_a_validation_error_names_the_refused_parameter(body: dict[str, Any], status: int) -> None:
    refusal = parse_refusal(_error(body, status))
    assert refusal == Refusal(
        "response_format",
        "value",
        "response_format.type: Input should be 'text' or 'json_object'",
        path=("response_format", "type"),
    )


def test_an_unknown_field_is_a_refused_parameter() -> None:
    detail = [
        {
            "type": "extra_forbidden",
            "loc": ["body", "prompt_cache_key"],
            "msg": "Extra inputs are not permitted",
            "input": "k",
        }
    ]
    refusal = parse_refusal(_error({"detail": detail}, 422))
    assert refusal is not None
    assert (refusal.param, refusal.kind) == ("prompt_cache_key", "parameter")


@pytest.mark.parametrize(
    "message",
    [
        # Ollama, for a model without tool support (ollama#14795).
        "registry.ollama.ai/library/smollm2:360m does not support tools",
        # llama.cpp's llama-server started without --jinja, with a 500.
        "tools param requires --jinja flag",
    ],
)
@pytest.mark.parametrize("status", [400, 500])
def test_a_server_without_tools_refuses_tools(message: str, status: int) -> None:
    body = {"error": {"message": message, "type": "api_error"}}
    refusal = parse_refusal(_error(body, status))
    assert refusal is not None
    assert refusal.param == "tools"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        # vLLM (vllm#10015): the messages are what it cannot read; no parameter to drop.
        (
            {
                "object": "error",
                "message": (
                    "[{'type': 'literal_error', 'loc': ('body', 'messages', 2, 'typed-dict', "
                    "'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant'}, "
                    "{'type': 'extra_forbidden', 'loc': ('body', 'messages', 2, 'typed-dict', "
                    "'refusal'), 'msg': 'Extra inputs are not permitted', 'input': None}]"
                ),
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            400,
        ),
        # A body that is no JSON at all: the error points at the whole body.
        (
            {"detail": [{"type": "json_invalid", "loc": ["body", 0], "msg": "JSON decode error"}]},
            422,
        ),
        ({"detail": [{"type": "missing", "loc": ["query", "q"], "msg": "Field required"}]}, 422),
    ],
)
def test_validation_errors_about_the_conversation_are_no_refusal(
    body: dict[str, Any], status: int
) -> None:
    assert parse_refusal(_error(body, status)) is None
