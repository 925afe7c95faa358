"""Every schema the code can send keeps to OpenAI's strict subset; the checker names breaches."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from opencode_restore.llm.strict_schema import (
    MAX_ITEMS,
    MAX_STRING_CHARS,
    bounded_json_schema,
    strict_json_schema,
    strict_schema_errors,
)
from opencode_restore.pipeline.evidence.tools import TOOL_SPECS
from opencode_restore.pipeline.schemas import OUTPUT_SCHEMAS

SRC = Path(__file__).resolve().parents[2] / "src" / "opencode_restore"


def _walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for item in node for found in _walk(item)]
    if not isinstance(node, dict):
        return []
    return [node] + [found for value in node.values() for found in _walk(value)]


@pytest.mark.parametrize("model", OUTPUT_SCHEMAS, ids=lambda m: m.__name__)
def test_output_schemas_are_strict_closed_fully_required_and_without_defaults(
    model: type[BaseModel],
) -> None:
    schema = strict_json_schema(model)
    assert strict_schema_errors(schema, f"response_format '{model.__name__}'") == []
    nodes = _walk(schema)
    assert not [n for n in nodes if "default" in n and isinstance(n.get("type"), str)]
    for node in nodes:
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])
    # The strict schema still describes the model: a minimal full answer validates.
    model.model_validate({k: _empty(v) for k, v in schema["properties"].items()} | _scalars(model))


def _empty(prop: dict[str, Any]) -> Any:
    return [] if prop.get("type") == "array" else None


def _scalars(model: type[BaseModel]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if field.annotation is str:
            out[name] = "x"
        elif field.annotation is bool:
            out[name] = False
        elif field.annotation is int:
            out[name] = 1
        elif isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out[name] = {}
    return out


@pytest.mark.parametrize("tool", TOOL_SPECS, ids=lambda t: t.name)
def test_tool_schemas_are_strict(tool: Any) -> None:
    assert tool.strict
    assert strict_schema_errors(tool.parameters, f"function '{tool.name}'") == []


def test_every_response_schema_the_pipeline_asks_for_is_listed() -> None:
    """A stage that asks for a new model must add it to OUTPUT_SCHEMAS (walked above)."""
    listed = {model.__name__ for model in OUTPUT_SCHEMAS}
    used: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.keyword)
                and node.arg in ("response_schema", "schema")
                and isinstance(node.value, ast.Name)
                and node.value.id[:1].isupper()
            ):
                used.add(node.value.id)
    assert used
    assert used <= listed


class _Loose(BaseModel):
    name: str
    note: str = ""
    tags: list[str] = Field(default_factory=list, min_length=1)


def test_checker_names_what_strict_mode_refuses_in_the_apis_words() -> None:
    errors = strict_schema_errors(_Loose.model_json_schema(), "response_format '_Loose'")
    assert (
        "Invalid schema for response_format '_Loose': In context=(), 'additionalProperties' "
        "is required to be supplied and to be false."
    ) in errors
    assert any("Missing 'note'" in e for e in errors)
    assert any("('properties', 'note'), 'default' is not permitted" in e for e in errors)
    assert any("'minItems'" not in e and "'default'" in e for e in errors)
    fixed = strict_schema_errors(strict_json_schema(_Loose), "response_format '_Loose'")
    assert fixed == []


def test_checker_refuses_unknown_keywords_ref_siblings_and_non_object_roots() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "minLength": 2},
            "b": {"$ref": "#/$defs/B", "description": "why"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
        "$defs": {"B": {"type": "object", "properties": {}, "additionalProperties": False}},
    }
    errors = strict_schema_errors(schema, "function 'f'")
    assert any("('properties', 'a'), 'minLength' is not permitted" in e for e in errors)
    assert any("$ref cannot have keywords ['description']" in e for e in errors)
    assert strict_schema_errors({"type": "array"}, "function 'f'")


def test_the_grammar_schema_bounds_every_free_string_and_list() -> None:
    class Note(BaseModel):
        kind: Literal["fix", "note"]
        text: str
        tags: list[str] = []

    bounded = bounded_json_schema(Note)
    properties = bounded["properties"]
    assert properties["text"]["maxLength"] == MAX_STRING_CHARS
    assert properties["tags"]["maxItems"] == MAX_ITEMS
    assert properties["tags"]["items"]["maxLength"] == MAX_STRING_CHARS
    assert "maxLength" not in properties["kind"]  # an enum is bounded already
    # Only bounds are added: the strict schema is otherwise the same.
    assert {**bounded, "properties": {}} == {**strict_json_schema(Note), "properties": {}}
