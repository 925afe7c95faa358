"""A pydantic model's indented JSON in pieces, character for character.

A long session's restoration is megabytes of JSON (bench/scale.py: 10 MB at a 200 MB
log, half of it the references). ``model_dump_json`` builds it whole, and as bytes
before the string, so the end of a restore held it twice. Here each top-level field,
and each item of a list field, is dumped alone with its field's own type and
re-indented to its depth (a raw line break never occurs inside a JSON string, so
indenting after every one is safe). ``tests/report/test_json_pieces.py`` pins the
joined pieces to ``model_dump_json(indent=2)``.

The store keeps ``json.dumps(model.model_dump(mode="json"))``; ``model_python_json``
writes that text the same way, a field or list item at a time, so the end of a restore
never holds the whole restoration as Python dicts (``tests/report/test_json_pieces.py``
pins it to the whole dump).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any, get_args, get_origin

from pydantic import BaseModel, TypeAdapter


@functools.cache
def _adapter(model: type[BaseModel], name: str, item: bool) -> TypeAdapter[Any]:
    annotation: Any = model.model_fields[name].annotation
    if item:
        (annotation,) = get_args(annotation)
    return TypeAdapter(annotation)


def _dump(model: type[BaseModel], name: str, value: Any, item: bool, pad: str) -> str:
    text = _adapter(model, name, item).dump_json(value, indent=2).decode()
    return text.replace("\n", "\n" + pad)


def model_json_pieces(model: BaseModel, include: set[str] | None = None) -> Iterator[str]:
    """``model.model_dump_json(indent=2, include=include)``, a field or list item at a time."""
    kind = type(model)
    names = [n for n in kind.model_fields if include is None or n in include]
    if not names:
        yield "{}"
        return
    yield "{"
    for index, name in enumerate(names):
        value = getattr(model, name)
        yield ("," if index else "") + "\n  " + json.dumps(name) + ": "
        if get_origin(kind.model_fields[name].annotation) is list and value:
            yield "["
            for number, item in enumerate(value):
                yield ("," if number else "") + "\n    " + _dump(kind, name, item, True, "    ")
            yield "\n  ]"
        else:
            yield _dump(kind, name, value, False, "  ")
    yield "\n}"


def model_python_json(model: BaseModel) -> str:
    """``json.dumps(model.model_dump(mode="json"), default=str)``, without ever holding
    the whole dump: each field, and each item of a list field, is dumped alone."""
    kind = type(model)
    # One flat list joined once: nested joins would hold the text two or three times.
    parts: list[str] = ["{"]
    for index, name in enumerate(kind.model_fields):
        value = getattr(model, name)
        parts.append((", " if index else "") + json.dumps(name) + ": ")
        if get_origin(kind.model_fields[name].annotation) is list and value:
            adapter = _adapter(kind, name, True)
            parts.append("[")
            for number, item in enumerate(value):
                parts.append((", " if number else "") + _python_json(adapter, item))
            parts.append("]")
        else:
            parts.append(_python_json(_adapter(kind, name, False), value))
    parts.append("}")
    return "".join(parts)


def _python_json(adapter: TypeAdapter[Any], value: Any) -> str:
    return json.dumps(adapter.dump_python(value, mode="json"), default=str)
