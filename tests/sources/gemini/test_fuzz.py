"""Fuzzing the Gemini reader: any input is read or reported, never raised."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.gemini.reader import READER

IDS = st.sampled_from(["m0", "m1", "m2", "m3", "m4", "m5"])
TEXT = st.text(max_size=20)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
PART = st.one_of(
    st.fixed_dictionaries({"text": TEXT}),
    st.fixed_dictionaries({"inlineData": st.fixed_dictionaries({"mimeType": TEXT})}),
    st.fixed_dictionaries(
        {"functionCall": st.fixed_dictionaries({"id": TEXT, "name": TEXT, "args": JSON})}
    ),
    st.fixed_dictionaries(
        {"functionResponse": st.fixed_dictionaries({"id": TEXT, "response": JSON})}
    ),
    JSON,
)
TOOL_CALL = st.fixed_dictionaries(
    {"id": TEXT, "name": TEXT, "args": JSON},
    optional={
        "status": st.sampled_from(["success", "error", "cancelled", "executing"]),
        "result": st.lists(PART, max_size=2) | JSON,
        "resultDisplay": TEXT | JSON,
    },
)
RECORD = st.fixed_dictionaries(
    {
        "id": IDS,
        "type": st.sampled_from(["user", "gemini", "info", "error", "warning", "other"]),
    },
    optional={
        "content": TEXT | st.lists(PART, max_size=3) | JSON,
        "displayContent": TEXT | st.lists(PART, max_size=2),
        "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "bad", 1767225600000]) | JSON,
        "thoughts": st.lists(
            st.fixed_dictionaries({}, optional={"subject": TEXT, "description": TEXT}) | JSON,
            max_size=2,
        ),
        "toolCalls": st.lists(TOOL_CALL | JSON, max_size=2) | JSON,
        "tokens": st.none()
        | st.dictionaries(
            st.sampled_from(["input", "output", "cached", "thoughts", "tool", "total"]),
            st.integers(-5, 10_000) | JSON,
        ),
        "model": TEXT | JSON,
    },
)
LINE = st.one_of(
    RECORD,
    st.fixed_dictionaries({"$rewindTo": IDS | JSON}),
    st.fixed_dictionaries(
        {
            "$set": st.fixed_dictionaries(
                {}, optional={"messages": st.lists(RECORD | JSON, max_size=5), "summary": TEXT}
            )
            | JSON
        }
    ),
    st.fixed_dictionaries({"sessionId": TEXT, "projectHash": TEXT}, optional={"directories": JSON}),
    JSON,
)


def _dump(value: Any) -> bytes:
    return orjson.dumps(value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(LINE.map(_dump) | st.binary(max_size=12), max_size=25),
    tail=st.booleans(),
)
def test_jsonl_never_raises(lines: list[bytes], tail: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        path.write_bytes(b"\n".join(lines) + (b"\n" if tail else b""))
        sink = WarningSink()
        session = READER.read([path], sink)
        msgs = session.messages()
        assert len({m.id for m in msgs}) == len(msgs)
        n_lines = len(path.read_bytes().splitlines())
        assert all(1 <= m.entry_index <= n_lines for m in msgs)
        assert all(w.path == str(path) and 1 <= w.line <= n_lines for w in sink.warnings)
        assert list(READER.iter_messages([path], WarningSink())) == msgs
        assert 0 <= READER.sniff(path, path.read_bytes()[:65536]) <= 1


@settings(max_examples=150, deadline=None)
@given(
    doc=JSON
    | st.fixed_dictionaries({"sessionId": TEXT, "messages": st.lists(RECORD | JSON, max_size=6)})
)
def test_legacy_json_never_raises(doc: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.json"
        path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        sink = WarningSink()
        msgs = READER.read([path], sink).messages()
        assert len({m.id for m in msgs}) == len(msgs)
        assert all(w.path == str(path) for w in sink.warnings)
