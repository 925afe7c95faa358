"""What the real APIs refuse, with their exact error bodies, for the fake server's strict mode.

Every body below was copied from public bug reports of other clients hitting the real
services (OpenAI, Azure OpenAI, Anthropic), e.g. OpenHands#4131 and cline#7224 (the
temperature refusal), griptape ComfyUI#312 and vscode-copilot-release#9954 (max_tokens),
mellea#270 (reasoning_effort on a chat model), instructor#1074 and outlines#844 (strict
schema keywords), anthropics/claude-code#24451 (an output limit above the model's),
litellm#15097 (temperature with top_p), Anthropic.SDK#50 (five cache_control blocks).

The fake decides which models reason from its own table (the o-series and gpt-5 family,
plus `reasoning_models` globs for models the client's table cannot know), never from
the client's.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING, Any

from opencode_restore.llm.strict_schema import strict_schema_errors

if TYPE_CHECKING or __package__:
    from .wire_types import MAX_CACHE_CONTROL, cache_control_blocks
else:  # imported from tests/fakes on sys.path (the server run as a script, bench/)
    from wire_types import MAX_CACHE_CONTROL, cache_control_blocks

Refusal = tuple[int, dict[str, Any]]

_OPENAI_REASONING = re.compile(r"(o\d|gpt-5)")
# Output-token maxima the Messages API enforces (its docs' model table).
ANTHROPIC_MAX_OUTPUT = {"claude-3-5-haiku": 8192, "claude-3-haiku": 4096, "claude-3-opus": 4096}
ANTHROPIC_DEFAULT_MAX_OUTPUT = 64000


def openai_error(message: str, param: str | None, code: str | None) -> Refusal:
    """A 400 in OpenAI's shape."""
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return 400, {"error": error}


def anthropic_error(message: str) -> Refusal:
    """A 400 in Anthropic's shape."""
    return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def is_reasoning(model: str, extra: list[str]) -> bool:
    """Whether the fake treats `model` as an OpenAI reasoning model."""
    name = model.rsplit("/", 1)[-1].lower()
    return bool(_OPENAI_REASONING.match(name)) or any(fnmatch.fnmatch(name, p) for p in extra)


def _number(value: Any) -> str:
    # The API prints the value the client sent: 0 for 0, 0.0 for 0.0.
    return repr(value) if isinstance(value, float) else str(value)


def openai_refusal(body: dict[str, Any], reasoning_models: list[str]) -> Refusal | None:
    """The first thing api.openai.com would refuse in a Chat Completions body."""
    if is_reasoning(str(body.get("model", "")), reasoning_models):
        for name in ("temperature", "top_p"):
            if name in body and body[name] != 1:
                return openai_error(
                    f"Unsupported value: '{name}' does not support {_number(body[name])} with "
                    "this model. Only the default (1) value is supported.",
                    name,
                    "unsupported_value",
                )
        if "max_tokens" in body:
            return openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "max_tokens",
                "unsupported_parameter",
            )
    elif "reasoning_effort" in body:
        return openai_error("Unrecognized request argument supplied: reasoning_effort", None, None)
    response_format = body.get("response_format") or {}
    spec = response_format.get("json_schema") or {}
    if response_format.get("type") == "json_schema" and spec.get("strict"):
        errors = strict_schema_errors(spec.get("schema") or {}, f"response_format '{spec['name']}'")
        if errors:
            return openai_error(errors[0], "response_format", None)
    for index, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") or {}
        if function.get("strict"):
            where = f"function '{function.get('name')}'"
            errors = strict_schema_errors(function.get("parameters") or {}, where)
            if errors:
                param = f"tools[{index}].function.parameters"
                return openai_error(errors[0], param, "invalid_function_parameters")
    return None


def anthropic_refusal(body: dict[str, Any]) -> Refusal | None:
    """The first thing api.anthropic.com would refuse in a Messages body."""
    found = cache_control_blocks(body)
    if found > MAX_CACHE_CONTROL:
        return anthropic_error(
            f"A maximum of {MAX_CACHE_CONTROL} blocks with cache_control may be provided. "
            f"Found {found}."
        )
    if "temperature" in body and "top_p" in body:
        return anthropic_error(
            "`temperature` and `top_p` cannot both be specified for this model. "
            "Please use only one."
        )
    model = str(body.get("model", ""))
    maximum = next(
        (v for k, v in ANTHROPIC_MAX_OUTPUT.items() if model.startswith(k)),
        ANTHROPIC_DEFAULT_MAX_OUTPUT,
    )
    if int(body.get("max_tokens") or 0) > maximum:
        return anthropic_error(
            f"max_tokens: {body['max_tokens']} > {maximum}, which is the maximum allowed "
            f"number of output tokens for {model}"
        )
    return None
