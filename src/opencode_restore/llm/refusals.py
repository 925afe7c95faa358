"""Reading an error that refuses one request parameter, so the request can be corrected.

OpenAI names the parameter in the error body's `param` (`"temperature"`, code
`unsupported_value`; `"max_tokens"`, code `unsupported_parameter`), but not always
("Unrecognized request argument supplied: reasoning_effort" comes with `param: null`);
Anthropic only says it in the message ("max_tokens: 128001 > 64000, which is the
maximum allowed number of output tokens for ...", "`temperature` is deprecated for
this model"). Servers built on FastAPI/pydantic name it in a validation error's `loc`:
FastAPI's own 422 body (``{"detail": [{"loc": ["body", "response_format", "type"],
"msg": ...}]}``), or the same errors as a Python repr inside the message, as
llama-cpp-python answers with HTTP **500** (``'loc': ('body', 'response_format',
'type'), 'msg': "Input should be 'text' or 'json_object'"``) and vLLM with 400. Ollama
says "registry.ollama.ai/library/x does not support tools". All are read here; what to
do about it is the provider's business.

A 500 counts only when it names a parameter: any other 500 is a server error, retried.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Literal

from opencode_restore.llm.base import error_body
from opencode_restore.llm.retry import error_message, error_status

RefusalKind = Literal["parameter", "value", "limit"]

_REFUSAL_STATUS = frozenset({400, 422, 500})
_CODES: dict[str, RefusalKind] = {
    "unsupported_parameter": "parameter",
    "unsupported_value": "value",
}
_PATTERNS: tuple[tuple[re.Pattern[str], RefusalKind], ...] = (
    (re.compile(r"Unsupported parameter: '([\w.]+)'"), "parameter"),
    (re.compile(r"Unsupported value: '([\w.]+)'"), "value"),
    (re.compile(r"Unrecognized request argument supplied: ([\w.]+)"), "parameter"),
    (re.compile(r"`(\w+)` is deprecated for this model"), "parameter"),
    (re.compile(r"`\w+` and `(\w+)` cannot both be specified"), "parameter"),
    (re.compile(r"^([\w.]+): Extra inputs are not permitted"), "parameter"),
    (re.compile(r"'([\w.]+)' is not supported with this model"), "parameter"),
    # Ollama, for a model without tools: "registry.ollama.ai/library/x does not support tools".
    (re.compile(r"does not support (tools)\b"), "parameter"),
    # llama.cpp's llama-server without --jinja (a 500): "tools param requires --jinja flag",
    # "Unsupported param: tool_choice".
    (re.compile(r"^(tools) param requires"), "parameter"),
    (re.compile(r"Unsupported param: (\w+)"), "parameter"),
)
# Anthropic: "max_tokens: 128001 > 64000, which is the maximum ..."; OpenAI: "max_tokens is
# too large: 32000. This model supports at most 16384 completion tokens, ...".
_LIMITS = (
    re.compile(r"(max_\w*tokens): \d+ > (\d+), which is the maximum"),
    re.compile(r"(max_\w*tokens) is too large: \d+\. This model supports at most (\d+) "),
)
# One pydantic error as a Python repr: its `type` (pydantic 1 puts it last), its `loc`
# tuple and its `msg` (in either quote).
_REPR_ERROR = re.compile(
    r"""(?:'type':\s*'(?P<type>\w+)',\s*)?'loc':\s*\((?P<loc>[^)]*)\),\s*"""
    r"""'msg':\s*(?P<msg>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
)
# pydantic error types that say the parameter itself is unknown (else its value is wrong).
_UNKNOWN_TYPES = frozenset({"extra_forbidden"})
# Refusals of these are about the conversation itself; no parameter can be dropped.
_NOT_PARAMETERS = frozenset({"messages", "model", "input", "system"})


@dataclass(frozen=True, slots=True)
class Refusal:
    """A server refused `param` (kind "parameter" or "value"), or capped it at `limit`.

    `path` is where in the parameter a validation error points (``("response_format",
    "type")``: the server does not know the response format's type), when it says.
    """

    param: str
    kind: RefusalKind
    message: str
    limit: int | None = None
    path: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Located:
    """One validation error: the path it names (strings and list indexes) and its message."""

    path: tuple[Any, ...]
    message: str
    kind: RefusalKind


def parse_refusal(exc: BaseException) -> Refusal | None:
    """The refused parameter of a 400/422/500 answer, or None when the error is another one."""
    if error_status(exc) not in _REFUSAL_STATUS:
        return None
    message = error_message(exc)
    for pattern in _LIMITS:
        limit = pattern.search(message)
        if limit is not None:
            return Refusal(limit.group(1), "limit", message, int(limit.group(2)))
    body = error_body(exc)
    located = _validation_errors(body, message)
    if located:
        return _located_refusal(located)
    param, code = body.get("param"), body.get("code")
    if isinstance(param, str) and isinstance(code, str) and code in _CODES:
        return _refusal(param, _CODES[code], message)
    for pattern, kind in _PATTERNS:
        found = pattern.search(message)
        if found is not None:
            return _refusal(found.group(1), kind, message)
    return None


def _validation_errors(body: dict[str, Any], message: str) -> list[_Located]:
    """The body fields a pydantic validation error names: FastAPI's `detail` list, or the
    errors' repr quoted in the message (only errors about the request body count)."""
    found: list[_Located] = []
    detail = body.get("detail")
    for item in detail if isinstance(detail, list) else []:
        if isinstance(item, dict) and isinstance(item.get("loc"), list):
            loc = tuple(item["loc"])
            kind: RefusalKind = "parameter" if item.get("type") in _UNKNOWN_TYPES else "value"
            found.append(_Located(loc, str(item.get("msg", "")), kind))
    for match in _REPR_ERROR.finditer(message):
        try:
            loc = tuple(ast.literal_eval(f"({match['loc']},)"))
            msg = str(ast.literal_eval(match["msg"]))
        except (ValueError, SyntaxError):
            continue
        kind = "parameter" if match["type"] in _UNKNOWN_TYPES else "value"
        found.append(_Located(loc, msg, kind))
    return [
        _Located(tuple(str(part) for part in error.path[1:]), error.message, error.kind)
        for error in found
        # ("body", 0): the body is no JSON at all; ("query", ...): not the body.
        if len(error.path) > 1 and error.path[0] == "body" and isinstance(error.path[1], str)
    ]


def _located_refusal(errors: list[_Located]) -> Refusal | None:
    """The parameter the first error names; none when any error is about the conversation
    (dropping a parameter cannot fix a message the server cannot read)."""
    if any(error.path[0] in _NOT_PARAMETERS for error in errors):
        return None
    first = errors[0]
    text = f"{'.'.join(first.path)}: {first.message}"
    return Refusal(first.path[0], first.kind, text, path=first.path)


def _refusal(param: str, kind: RefusalKind, message: str) -> Refusal | None:
    # The Responses API spells nested parameters with dots ("reasoning.effort").
    name = param.replace(".", "_")
    return None if name in _NOT_PARAMETERS else Refusal(name, kind, message)
