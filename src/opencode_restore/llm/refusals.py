"""Reading a 400 that refuses one request parameter, so the request can be corrected.

OpenAI names the parameter in the error body's `param` (`"temperature"`, code
`unsupported_value`; `"max_tokens"`, code `unsupported_parameter`), but not always
("Unrecognized request argument supplied: reasoning_effort" comes with `param: null`);
Anthropic only says it in the message ("max_tokens: 128001 > 64000, which is the
maximum allowed number of output tokens for ...", "`temperature` is deprecated for
this model"). Both are read here; what to do about it is the provider's business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from opencode_restore.llm.retry import error_message, error_status

RefusalKind = Literal["parameter", "value", "limit"]

_REFUSAL_STATUS = frozenset({400, 422})
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
)
# Anthropic: "max_tokens: 128001 > 64000, which is the maximum ..."; OpenAI: "max_tokens is
# too large: 32000. This model supports at most 16384 completion tokens, ...".
_LIMITS = (
    re.compile(r"(max_\w*tokens): \d+ > (\d+), which is the maximum"),
    re.compile(r"(max_\w*tokens) is too large: \d+\. This model supports at most (\d+) "),
)
# Refusals of these are about the conversation itself; no parameter can be dropped.
_NOT_PARAMETERS = frozenset({"messages", "model", "input", "system"})


@dataclass(frozen=True, slots=True)
class Refusal:
    """A server refused `param` (kind "parameter" or "value"), or capped it at `limit`."""

    param: str
    kind: RefusalKind
    message: str
    limit: int | None = None


def _body(exc: BaseException) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return inner
    return {}


def parse_refusal(exc: BaseException) -> Refusal | None:
    """The refused parameter of a 400/422 answer, or None when the error is another one."""
    if error_status(exc) not in _REFUSAL_STATUS:
        return None
    message = error_message(exc)
    for pattern in _LIMITS:
        limit = pattern.search(message)
        if limit is not None:
            return Refusal(limit.group(1), "limit", message, int(limit.group(2)))
    body = _body(exc)
    param, code = body.get("param"), body.get("code")
    if isinstance(param, str) and isinstance(code, str) and code in _CODES:
        return _refusal(param, _CODES[code], message)
    for pattern, kind in _PATTERNS:
        found = pattern.search(message)
        if found is not None:
            return _refusal(found.group(1), kind, message)
    return None


def _refusal(param: str, kind: RefusalKind, message: str) -> Refusal | None:
    # The Responses API spells nested parameters with dots ("reasoning.effort").
    name = param.replace(".", "_")
    return None if name in _NOT_PARAMETERS else Refusal(name, kind, message)
