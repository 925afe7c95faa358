"""Reading refused parameters out of real 400 bodies (as reported in public bug threads)."""

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
        (_openai(TEMPERATURE, "temperature", "unsupported_value"), 500),
        (_openai("Unsupported value: 'messages' must not be empty", "messages", None), 400),
    ],
)
def test_other_errors_are_no_refusal(body: dict[str, Any], status: int) -> None:
    assert parse_refusal(_error(body, status)) is None
