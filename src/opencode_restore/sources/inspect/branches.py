"""Branch points of the timeline builder: explicit anchors and re-rolled model calls.

An explicit branch (a ``type="branch"`` span) names its fork point in its ``branch``
event's ``from_anchor`` (a message id). Without one, and for re-rolls, the fork point
is the id of the last input message the branch shares with the surviving path.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import orjson

from ...model import TimelineEvent, TimelineSpan
from .utility import RawEvents


def branch_anchor(children: list[Any], content: list[TimelineEvent | TimelineSpan]) -> str | None:
    """The fork point of an explicit branch span from its children (raw events or spans).

    Uses the first ``branch`` event's ``from_anchor``; falls back to the id of the last
    input message of the branch's first model call.
    """
    for child in children:
        if isinstance(child, dict) and child.get("event") == "branch":
            anchor = child.get("from_anchor")
            if isinstance(anchor, str) and anchor:
                return anchor
    for item in content:
        if isinstance(item, TimelineEvent) and item.model is not None and item.model.input:
            return item.model.input[-1].group
    return None


def _fingerprint(raw_input: list[Any]) -> bytes | None:
    """Role and content of each input message: ids and metadata never count."""
    shape = [(m.get("role"), m.get("content")) if isinstance(m, dict) else m for m in raw_input]
    try:
        return orjson.dumps(shape, option=orjson.OPT_SORT_KEYS, default=str)
    except orjson.JSONEncodeError:  # e.g. an integer wider than 64 bits
        return None


def _last_input_id(raw_input: list[Any]) -> str | None:
    last = raw_input[-1]
    mid = last.get("id") if isinstance(last, dict) else None
    return mid if isinstance(mid, str) and mid else None


def detect_rerolls(span: TimelineSpan, raw: RawEvents) -> None:
    """Turn re-rolled model calls (identical input) into branches, recursively.

    For each group of model calls with the same input, every call but the last
    starts a branch that runs up to the next re-roll; the last one stays. Compaction
    events are hard boundaries: calls are never matched across one.
    """
    ranges: list[tuple[int, int]] = []
    groups: dict[bytes, list[int]] = {}
    for i, item in enumerate(span.content):
        if isinstance(item, TimelineEvent) and item.kind == "compaction":
            ranges.extend(_group_ranges(groups))
            groups = {}
        elif isinstance(item, TimelineEvent) and item.kind == "model":
            raw_input = raw.get(id(item), {}).get("input")
            key = _fingerprint(raw_input) if isinstance(raw_input, list) and raw_input else None
            if key is not None:
                groups.setdefault(key, []).append(i)
    ranges.extend(_group_ranges(groups))
    found: list[TimelineSpan] = []
    for start, end in reversed(_disjoint(ranges)):
        first = span.content[start]
        assert isinstance(first, TimelineEvent)  # ranges start at a model event
        raw_input = raw[id(first)]["input"]
        found.append(
            TimelineSpan(
                id=f"reroll-{first.uuid}",
                name="reroll",
                span_type="branch",
                content=span.content[start:end],
                branched_from=_last_input_id(raw_input),
                meta={"source": "reroll"},
            )
        )
        del span.content[start:end]
    span.branches.extend(reversed(found))
    for child in [*span.spans(), *span.branches]:
        if child.meta.get("source") != "reroll":
            detect_rerolls(child, raw)


def _group_ranges(groups: dict[bytes, list[int]]) -> list[tuple[int, int]]:
    """Consecutive calls of each same-input group as (branch start, next re-roll)."""
    out: list[tuple[int, int]] = []
    for indices in groups.values():
        out.extend(pairwise(indices))
    return out


def _disjoint(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ranges in order, dropping any that overlaps an earlier one."""
    kept: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept
