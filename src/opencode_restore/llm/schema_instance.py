"""Build a small valid instance of a JSON schema (used by fakes that must answer anything).

Covers what pydantic and OpenAI strict schemas use: `$ref`/`$defs`, `anyOf`/`oneOf`/
`allOf`, `enum`, `const`, `default`, type lists, string/array length bounds and
numeric minimums. Only required properties are filled: that is the minimal answer.
"""

from __future__ import annotations

from typing import Any

_MAX_DEPTH = 32


def minimal_instance(schema: dict[str, Any]) -> Any:
    """A minimal value that validates against `schema`."""
    return _build(schema, schema, 0)


def _resolve(ref: str, root: dict[str, Any]) -> dict[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return dict(node)


def _build(schema: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return None
    if "$ref" in schema:
        return _build(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _build(schema[key][0], root, depth + 1)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part["$ref"], root) if "$ref" in part else part)
        return _build(merged, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    return _by_type(kind, schema, root, depth)


def _by_type(kind: str, schema: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: _build(properties.get(name, {}), root, depth + 1)
            for name in schema.get("required", [])
        }
    if kind == "array":
        items = schema.get("items", {})
        return [_build(items, root, depth + 1) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        if "minimum" in schema:
            return schema["minimum"]
        if "exclusiveMinimum" in schema:
            return schema["exclusiveMinimum"] + 1
        return 0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "x" * max(1, int(schema.get("minLength", 1)))
