"""Minimal valid instances of JSON schemas (pydantic and OpenAI strict shapes)."""

from __future__ import annotations

from typing import Literal

from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel, Field

from opencode_restore.llm.schema_instance import minimal_instance


class Artifact(BaseModel):
    path: str
    action: Literal["read", "edited"]


class Summary(BaseModel):
    turn: int = Field(ge=1)
    score: float = Field(gt=0.5)
    title: str = Field(min_length=3)
    ok: bool
    artifacts: list[Artifact] = Field(min_length=1)
    note: str | None
    child: Artifact | None = None
    tags: list[str] = []
    kind: Literal["turn"] = "turn"


def test_pydantic_schema_instance_validates() -> None:
    value = minimal_instance(Summary.model_json_schema())
    parsed = Summary.model_validate(value)
    assert (parsed.turn, parsed.score, parsed.title, parsed.ok) == (1, 1.5, "xxx", False)
    assert parsed.artifacts == [Artifact(path="x", action="read")]
    assert parsed.note == "x"


def test_openai_strict_schema_instance_validates() -> None:
    value = minimal_instance(to_strict_json_schema(Summary))
    assert Summary.model_validate(value).tags == []


def test_small_cases() -> None:
    assert minimal_instance({"const": 3}) == 3
    assert minimal_instance({"type": ["null", "integer"]}) == 0
    assert minimal_instance({"type": ["null"]}) is None
    assert minimal_instance({"type": "number"}) == 0
    assert minimal_instance({"properties": {"a": {"type": "string"}}, "required": ["a"]}) == {
        "a": "x"
    }
    assert minimal_instance({"allOf": [{"type": "object", "required": []}]}) == {}
    schema = {"$defs": {"A": {"type": "integer"}}, "allOf": [{"$ref": "#/$defs/A"}]}
    assert minimal_instance(schema) == 0


def test_recursive_schemas_terminate() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/Node"}},
                "required": ["next"],
            }
        },
        "$ref": "#/$defs/Node",
    }
    value = minimal_instance(schema)
    depth = 0
    while isinstance(value, dict):
        value = value["next"]
        depth += 1
    assert value is None
    assert depth > 5
