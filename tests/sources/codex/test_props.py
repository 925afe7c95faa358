"""Property tests: damaged Codex rollouts never raise, and every bad line is reported."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.codex import READER

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "codex"
SAMPLES = [
    FIXTURES
    / "claude-code-log"
    / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
    FIXTURES
    / "recorded"
    / "tui-compact"
    / "rollout-2026-11-21T11-38-37-01a1fde6-b303-7f63-b067-d32dfaddcad9.jsonl",
]
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(data: bytes) -> WarningSink:
    """Read ``data`` as a rollout file through both entry points; return the sink."""
    sink = WarningSink()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rollout-prop.jsonl"
        path.write_bytes(data)
        list(READER.iter_messages([path], sink))
        READER.read([path], sink)
        READER.sniff(path, data[:65536])
    return sink


@PROPS
@given(sample=st.sampled_from(SAMPLES), cut=st.floats(min_value=0.0, max_value=1.0))
def test_random_truncation(sample: Path, cut: float) -> None:
    data = sample.read_bytes()
    data = data[: int(len(data) * cut)]
    sink = _read(data)
    tail = data.rsplit(b"\n", 1)[-1]
    if tail.strip() and not _parses(tail):
        assert data.count(b"\n") + 1 in {w.line for w in sink.warnings}


def _parses(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


def _with_line(data: bytes, index: int, line: bytes) -> tuple[bytes, int]:
    lines = data.split(b"\n")
    index = index % len(lines)
    lines.insert(index, line)
    return b"\n".join(lines), index + 1


@PROPS
@given(
    sample=st.sampled_from(SAMPLES),
    index=st.integers(min_value=0, max_value=500),
    junk=st.binary(max_size=80).map(lambda b: b"#" + b.replace(b"\n", b"")),
)
def test_garbage_bytes_line(sample: Path, index: int, junk: bytes) -> None:
    data, lineno = _with_line(sample.read_bytes(), index, junk)
    sink = _read(data)
    assert lineno in {w.line for w in sink.warnings}


@PROPS
@given(
    sample=st.sampled_from(SAMPLES),
    index=st.integers(min_value=0, max_value=500),
    prefix=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
)
def test_invalid_utf8_line(sample: Path, index: int, prefix: bytes) -> None:
    line = b'{"type":"event_msg","payload":{"message":"' + prefix + b'\xff\xfe\xfd"}}'
    data, lineno = _with_line(sample.read_bytes(), index, line)
    sink = _read(data)
    assert lineno in {w.line for w in sink.warnings}


json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@PROPS
@given(
    sample=st.sampled_from(SAMPLES),
    index=st.integers(min_value=0, max_value=500),
    value=json_values.filter(lambda v: not isinstance(v, dict)),
)
def test_non_object_line(sample: Path, index: int, value: Any) -> None:
    data, lineno = _with_line(sample.read_bytes(), index, orjson.dumps(value))
    sink = _read(data)
    assert lineno in {w.line for w in sink.warnings}


keys = st.sampled_from(
    [
        "type",
        "role",
        "content",
        "text",
        "message",
        "summary",
        "arguments",
        "call_id",
        "output",
        "action",
        "info",
        "item",
        "replacement_history",
        "id",
        "source",
        "model",
        "cwd",
        "timestamp",
    ]
)
kinds = st.sampled_from(
    [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "user_message",
        "agent_message",
        "agent_reasoning",
        "token_count",
        "context_compacted",
        "item_completed",
        "UserMessage",
        "AgentMessage",
        "Reasoning",
    ]
)
payloads = st.dictionaries(keys, json_values | kinds, max_size=6).map(
    lambda d: d if "type" in d else {**d, "type": "message"}
)
envelopes = st.builds(
    lambda kind, payload, ts: {"timestamp": ts, "type": kind, "payload": payload},
    st.sampled_from(["session_meta", "response_item", "event_msg", "turn_context", "compacted"]),
    payloads | json_values,
    st.none() | st.text(max_size=30) | st.just("2026-01-01T00:00:00Z"),
)


@PROPS
@given(lines=st.lists(envelopes | payloads, max_size=25))
def test_random_well_formed_lines_never_raise(lines: list[dict[str, Any]]) -> None:
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    sink = _read(data)
    # Odd value types are handled, not caught by the reader's last-resort guard.
    assert [w for w in sink.warnings if "unreadable" in w.message] == []
