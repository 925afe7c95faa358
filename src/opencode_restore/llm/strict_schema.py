"""JSON schemas that OpenAI's strict mode (and Anthropic's tool `input_schema`) accept.

Strict structured outputs accept a subset of JSON Schema: every object must say
`additionalProperties: false` and list every property in `required`; keywords outside
the subset (`default` above all, which pydantic writes for every field with a plain
default; Azure OpenAI refuses it: "'default' is not permitted") are refused with a 400.
`strict_json_schema` derives such a schema from an output model; `strict_schema_errors`
names what a schema breaks, in the API's own words, for tests and the strict fake
server.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel

# The keywords OpenAI documents for strict mode (structured outputs and strict tools).
ALLOWED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
# Keywords whose value is a name-to-schema map, not a schema.
_MAPS = ("properties", "$defs")


@lru_cache(maxsize=64)
def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict schema of an output model, built once per class.

    Defaults are dropped and every object closed and fully required: the model must then
    write every field, and the pydantic model (with its defaults) still reads lenient
    replies from servers that ignore the schema.
    """
    schema: dict[str, Any] = _strict(model.model_json_schema())
    return schema


# Bounds of `bounded_json_schema`: far above what a turn's summary needs.
MAX_STRING_CHARS = 600
MAX_ITEMS = 12


@lru_cache(maxsize=64)
def bounded_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict schema with every free string and list bounded, for servers that turn
    a schema into a grammar (llama.cpp's `{"type": "json_object", "schema": ...}`).

    A grammar makes even a tiny model write valid JSON, but not end it: unbounded, it
    can fill its whole output limit with one string. Bounded, every reply the grammar
    allows validates, and a too-long value is cut where the grammar stops it.
    """
    schema: dict[str, Any] = _bounded(strict_json_schema(model))
    return schema


def _bounded(node: Any) -> Any:
    if isinstance(node, list):
        return [_bounded(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _bounded(value) for key, value in node.items()}
    if out.get("type") == "string" and "enum" not in out and "const" not in out:
        out.setdefault("maxLength", MAX_STRING_CHARS)
    elif out.get("type") == "array":
        out.setdefault("maxItems", MAX_ITEMS)
    return out


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "default":
            continue
        if key in _MAPS and isinstance(value, dict):
            out[key] = {name: _strict(sub) for name, sub in value.items()}
        else:
            out[key] = _strict(value)
    if out.get("type") == "object" or "properties" in out:
        out.setdefault("properties", {})
        out["additionalProperties"] = False
        out["required"] = list(out["properties"])
    return out


def strict_schema_errors(schema: dict[str, Any], where: str) -> list[str]:
    """Why strict mode would refuse `schema`, one message per problem (empty: accepted).

    `where` names the schema as the API does: "response_format 'TurnSummary'" or
    "function 'SEARCH_LOG'".
    """
    errors: list[str] = []
    if schema.get("type") != "object":
        errors.append(
            f"Invalid schema for {where}: schema must be a JSON Schema of 'type: \"object\"'"
        )
    _check(schema, (), where, errors)
    return errors


def _check(node: Any, context: tuple[str, ...], where: str, errors: list[str]) -> None:
    if not isinstance(node, dict):
        return
    prefix = f"Invalid schema for {where}: In context={context!r}, "
    for key in node:
        if key not in ALLOWED_KEYWORDS:
            errors.append(f"{prefix}'{key}' is not permitted.")
    if "$ref" in node and len(node) > 1:
        siblings = sorted(k for k in node if k != "$ref")
        errors.append(f"{prefix}$ref cannot have keywords {siblings}.")
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties") is not False:
            errors.append(
                f"{prefix}'additionalProperties' is required to be supplied and to be false."
            )
        properties = node.get("properties") or {}
        required = node.get("required")
        missing = [p for p in properties if not isinstance(required, list) or p not in required]
        if missing:
            errors.append(
                f"{prefix}'required' is required to be supplied and to be an array including "
                f"every key in properties. Missing '{missing[0]}'."
            )
    for key, value in node.items():
        if key in _MAPS and isinstance(value, dict):
            for name, sub in value.items():
                _check(sub, (*context, key, name), where, errors)
        elif key == "items":
            _check(value, (*context, "items"), where, errors)
        elif key == "anyOf" and isinstance(value, list):
            for index, sub in enumerate(value):
                _check(sub, (*context, "anyOf", str(index)), where, errors)
