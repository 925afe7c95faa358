"""Lenient extraction of JSON replies, the text tool protocol, and one repair round.

Servers that ignore `response_format` (or models that chat around their JSON) still
usually emit the object somewhere. Candidates are tried in order: the whole reply,
fenced ```json blocks, then each balanced `{...}` (string-aware); trailing commas
are tolerated. The first candidate that validates against the schema wins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from opencode_restore.errors import OutputValidationError
from opencode_restore.facts.turn import cap_middle
from opencode_restore.llm.base import ChatMessage, LLMRequest, LLMResult, Provider, ToolCallRequest
from opencode_restore.llm.retry import RetryPolicy, call_with_retry
from opencode_restore.llm.usage import UsageLedger

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)
_TOOL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_ERROR_QUOTE_LIMIT = 2000
# A repair request quotes the bad reply's start and end, this many characters in all: a
# model that ran on for its whole output limit would otherwise be sent it all again.
REPLY_QUOTE_LIMIT = 2000
# A reply stopped by the output limit, not by the model.
TRUNCATED = frozenset({"length", "max_tokens"})
# Doublings of the output limit after cut-off replies (x4 at most, within the ceiling).
MAX_OUTPUT_BOOSTS = 2


def balanced_objects(text: str) -> Iterator[str]:
    """Yield each top-level `{...}` span; braces inside JSON strings do not count."""
    depth = 0
    start = 0
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"' and depth > 0:
            # Quotes only matter inside an object: prose around it may be unbalanced.
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                yield text[start : index + 1]


def strip_trailing_commas(text: str) -> str:
    """Drop commas that directly precede `}` or `]`, leaving strings untouched."""
    out: list[str] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "," and text[index + 1 :].lstrip()[:1] in ("}", "]"):
            continue
        out.append(char)
    return "".join(out)


def _spans(text: str) -> Iterator[str]:
    yield text.strip()
    for match in _FENCE.finditer(text):
        yield match.group(1).strip()
    yield from balanced_objects(text)


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # NaN, Infinity and integers beyond 64 bits


def json_candidates(text: str) -> Iterator[Any]:
    """Decoded JSON values found in `text`, most likely first.

    Lazily: a reply that is plain JSON (the usual case) is decoded once and the
    character scans for fences, objects and trailing commas never run.
    """
    seen: set[str] = set()
    for candidate in _spans(text):
        if not candidate or candidate in seen:
            continue
        seen.add(candidate)
        try:
            yield _loads(candidate)
            continue
        except ValueError:
            pass
        try:
            yield _loads(strip_trailing_commas(candidate))
        except ValueError:
            continue


def parse_structured(text: str, schema: type[M]) -> tuple[M | None, str | None]:
    """Validate the best JSON candidate of `text` against `schema`.

    Returns `(instance, None)` on success, else `(None, error)` where the error is
    the first validation message (or says no JSON object was found).
    """
    first_error: str | None = None
    for value in json_candidates(text):
        try:
            return schema.model_validate(value), None
        except ValidationError as exc:
            first_error = first_error or str(exc)
    return None, first_error or "the reply contains no JSON object"


def validate_value(value: Any, schema: type[M]) -> M | None:
    """`schema.model_validate(value)`, or None when it does not fit."""
    try:
        return schema.model_validate(value)
    except ValidationError:
        return None


def parse_text_tool_calls(text: str) -> list[ToolCallRequest]:
    """Tool calls written as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`."""
    calls: list[ToolCallRequest] = []
    for number, match in enumerate(_TOOL_TAG.finditer(text), start=1):
        for value in json_candidates(match.group(1)):
            if isinstance(value, dict) and isinstance(value.get("name"), str):
                arguments = value.get("arguments")
                calls.append(
                    ToolCallRequest(
                        id=f"text_call_{number}",
                        name=value["name"],
                        arguments=arguments if isinstance(arguments, dict) else {},
                    )
                )
                break
    return calls


class StructuredOutputError(OutputValidationError):
    """The reply still did not validate after the repair rounds; `result` keeps the text."""

    def __init__(self, result: LLMResult, error: str) -> None:
        self.result = result
        self.error = error
        super().__init__(f"reply did not match the expected structure: {error}")


async def complete_structured(
    provider: Provider,
    request: LLMRequest,
    *,
    retries: int = 1,
    policy: RetryPolicy | None = None,
    ledger: UsageLedger | None = None,
) -> LLMResult:
    """Call with `request.response_schema`; on an invalid reply ask again quoting the error.

    Each repair round appends the bad reply (its start and end, at most
    `REPLY_QUOTE_LIMIT` characters) and a message quoting the pydantic error. A reply
    cut off at the output limit (`finish_reason` "length", Anthropic's "max_tokens") is
    no validation failure: the same request goes again with a doubled limit
    (`output_boost`), at most `MAX_OUTPUT_BOOSTS` times and only while the limit the
    provider sends grows (not at the ceiling, nor at a maximum the server named):
    an identical request would be cut off the same way. The returned usage and
    attempts sum over all rounds. Raises `StructuredOutputError` (with the last result)
    when no round validates.
    """
    schema = request.response_schema
    if schema is None:
        raise ValueError("complete_structured needs request.response_schema")
    current = request
    result = await call_with_retry(provider, current, policy, ledger)
    rounds = [result]
    repairs = 0
    while result.parsed is None:
        parsed, error = parse_structured(result.text, schema)
        if parsed is not None:
            result.parsed = parsed
            break
        cut = result.finish_reason in TRUNCATED
        longer = _longer(provider, current, request.template) if cut else None
        if longer is not None:
            current = longer
        elif repairs >= retries:
            raise StructuredOutputError(_combined(rounds), error or "")
        else:
            repairs += 1
            messages = [
                *current.messages,
                ChatMessage("assistant", _quoted_reply(result.text)),
                ChatMessage("user", _repair_prompt(error or "", cut=cut)),
            ]
            current = replace(current, messages=messages, template=f"{request.template}:repair")
        result = await call_with_retry(provider, current, policy, ledger)
        rounds.append(result)
    return _combined(rounds)


def _longer(provider: Provider, request: LLMRequest, template: str) -> LLMRequest | None:
    """`request` with a doubled output limit, or None when it may not or would not grow."""
    if request.output_boost >= MAX_OUTPUT_BOOSTS:
        return None
    longer = replace(request, output_boost=request.output_boost + 1, template=f"{template}:longer")
    # SDK providers say what they would send; for others (test doubles) assume it grows.
    limit = getattr(provider, "output_limit", None)
    if callable(limit) and limit(longer) <= limit(request):
        return None
    return longer


def _quoted_reply(text: str) -> str:
    """The bad reply as the repair round shows it: whole when short, else its ends."""
    if not text:
        return "(empty reply)"
    return cap_middle(text, REPLY_QUOTE_LIMIT, "the reply")


def _repair_prompt(error: str, *, cut: bool = False) -> str:
    quoted = error if len(error) <= _ERROR_QUOTE_LIMIT else error[:_ERROR_QUOTE_LIMIT] + " ..."
    # The output limit cannot grow: only a shorter answer can fit.
    shorter = "It was cut off at the output limit: keep every field short. " if cut else ""
    return (
        "Your previous reply did not match the required JSON schema. The validator said:\n\n"
        f"{quoted}\n\n{shorter}"
        "Reply again with only the corrected JSON object, no prose and no code fences."
    )


def _combined(rounds: list[LLMResult]) -> LLMResult:
    last = rounds[-1]
    if len(rounds) == 1:
        return last
    for earlier in rounds[:-1]:
        last.usage.add(earlier.usage)
        last.attempts += earlier.attempts
    return last
