"""Streaming a whole-file JSON document one item at a time (ijson).

A log written as one JSON document (an Inspect ``.json`` log, a legacy Gemini CLI
session) can be hundreds of megabytes: read whole, its bytes and every value built at
once took gigabytes. Here only the item being built is in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ijson  # type: ignore[import-untyped, unused-ignore]

from ..diagnostics import WarningSink
from .base import MAX_JSON_DEPTH


def line_at(path: Path, offset: int) -> int:
    """The 1-based line holding byte ``offset`` (counted in chunks, never all at once)."""
    line, seen = 1, 0
    with path.open("rb") as fh:
        while seen < offset and (chunk := fh.read(min(1 << 20, offset - seen))):
            line += chunk.count(b"\n")
            seen += len(chunk)
    return line


class _TooDeep(ValueError):
    """A JSON value nested deeper than `MAX_JSON_DEPTH`."""


def _deeper(event: str, depth: int) -> int:
    """``depth`` (open containers) after ``event``; past `MAX_JSON_DEPTH` raises."""
    if event in ("start_map", "start_array"):
        depth += 1
        if depth > MAX_JSON_DEPTH:
            raise _TooDeep(f"nested more than {MAX_JSON_DEPTH} deep")
    elif event in ("end_map", "end_array"):
        depth -= 1
    return depth


def stream_items(
    path: Path, prefix: str, sink: WarningSink, rest: str = "the rest skipped", start: int = 0
) -> Iterator[Any]:
    """ijson items at ``prefix`` (map keys and ``item`` for array elements, joined by
    dots); a parse error is reported (near its line, saying ``rest``) and ends them.

    Built from ``basic_parse`` events rather than ``ijson.items``: items' event prefixes
    grow with the nesting depth, so a value nested 100,000 deep took gigabytes; here the
    depth is counted and a value deeper than `MAX_JSON_DEPTH` ends the stream with a warning.
    """
    keys = prefix.split(".")
    with path.open("rb") as fh:
        fh.seek(start)
        try:
            yield from _items(ijson.basic_parse(fh, use_float=True), keys)
        except (ijson.JSONError, ValueError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            truncated = "premature eof" in reason.lower() or "incomplete" in reason.lower()
            what = "truncated log" if truncated else "invalid JSON"
            if isinstance(exc, _TooDeep):
                what = "hostile JSON"
            line = line_at(path, fh.tell())
            sink.warn(path, line, f"{what} ({reason}); {rest}")


def _items(events: Iterator[tuple[str, Any]], keys: list[str]) -> Iterator[Any]:
    """The values at ``keys`` (map keys, ``item`` for array elements) of an event stream."""
    path: list[str] = []  # the keys of the open containers down to the current value
    builder: Any = None
    depth = 0  # open containers in the value being built
    for event, value in events:
        if builder is not None:
            builder.event(event, value)
            depth = _deeper(event, depth)
            if depth == 0:
                yield builder.value
                builder = None
            continue
        if event == "map_key":
            path[-1] = value
            continue
        if event in ("end_map", "end_array"):
            path.pop()
            continue
        if path == keys:
            builder = ijson.common.ObjectBuilder()
            builder.event(event, value)
            if event in ("start_map", "start_array"):
                depth = 1
                continue
            yield builder.value
            builder = None
            continue
        if event == "start_map":
            path.append("")
        elif event == "start_array":
            path.append("item")


def json_start(path: Path, sink: WarningSink) -> int | None:
    """The offset of the first ``{`` (junk before it reported); None, reported: none."""
    seen = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            at = chunk.find(b"{")
            if at >= 0:
                if seen + at:
                    sink.warn(path, 1, f"skipped {seen + at} bytes before the first '{{'")
                return seen + at
            seen += len(chunk)
    sink.warn(path, 1, "no JSON object found")
    return None


def top_level(path: Path, skip: str, sink: WarningSink, start: int = 0) -> dict[str, Any] | None:
    """The members of the document's top-level object; ``skip``'s value is never built
    (it comes as ``[]`` when it is an array, else as None).

    None, reported, when the document is no object or cannot be parsed up to its end.
    """
    out: dict[str, Any] = {}
    with path.open("rb") as fh:
        fh.seek(start)
        events = ijson.basic_parse(fh, use_float=True)
        try:
            first = next(events, None)
            if first is None or first[0] != "start_map":
                sink.warn(path, 1, "no JSON object found")
                return None
            for event, value in events:
                if event == "end_map":
                    break
                # A member: its key, then its value's events (skipped or built).
                key = value
                builder = None if key == skip else ijson.common.ObjectBuilder()
                depth = 0
                for event, value in events:
                    if builder is not None:
                        builder.event(event, value)
                    elif not depth:
                        out[key] = [] if event == "start_array" else None
                    depth = _deeper(event, depth)
                    if depth == 0:
                        break
                if builder is not None:
                    out[key] = builder.value
        except (ijson.JSONError, ValueError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            sink.warn(path, line_at(path, fh.tell()), f"invalid JSON ({reason})")
            return None
    return out
