"""Fuzz: no eval log, however odd or damaged, makes the reader or the builder raise."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.model import TimelineSpan
from opencode_restore.sources.inspect.builder import build_timeline, total_tokens
from opencode_restore.sources.inspect.reader import READER, iter_samples

LOG = (
    Path(__file__).resolve().parents[3]
    / "fixtures"
    / "inspect"
    / "eval-logs"
    / "2025-05-12T20-27-36-04-00_browser.json"
)
_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
_ids = st.sampled_from(["a", "b", "c", "solvers", "init", "scorers", "agent-c1"])
_kinds = st.sampled_from(
    ["span_begin", "span_end", "model", "tool", "compaction", "info", "branch", "score", "x"]
)
_roles = st.sampled_from(["system", "user", "assistant", "tool", "other"])
_score = st.fixed_dictionaries(
    {}, optional={"value": json_values, "answer": json_values, "explanation": json_values}
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": _roles},
        optional={
            "id": st.text(max_size=4) | json_values,
            "content": json_values
            | st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["text", "reasoning", "image", "tool_use", "data"])},
                    optional={
                        "text": json_values,
                        "reasoning": json_values,
                        "redacted": json_values,
                    },
                ),
                max_size=3,
            ),
            "tool_calls": st.lists(
                st.fixed_dictionaries({}, optional={"id": json_values, "arguments": json_values}),
                max_size=2,
            )
            | json_values,
            "tool_call_id": st.sampled_from(["c1", "c2"]) | json_values,
            "error": json_values,
            "timestamp": st.text(max_size=25) | json_values,
        },
    ),
    max_size=4,
)
events = st.lists(
    st.fixed_dictionaries(
        {"event": _kinds},
        optional={
            "uuid": st.text(max_size=3) | json_values,
            "id": _ids | json_values,
            "span_id": _ids,
            "parent_id": _ids | st.none(),
            "type": st.sampled_from(
                ["agent", "tool", "solver", "branch", "summary", "trim", "scorer"]
            )
            | json_values,
            "name": _ids | json_values,
            "input": messages | json_values,
            "output": st.fixed_dictionaries(
                {},
                optional={
                    "choices": st.lists(
                        st.fixed_dictionaries(
                            {}, optional={"message": messages.map(lambda m: m[:1])}
                        ),
                        max_size=2,
                    )
                    | json_values,
                    "usage": st.dictionaries(
                        st.sampled_from(["input_tokens", "output_tokens"]), json_values
                    )
                    | json_values,
                },
            )
            | json_values,
            "config": st.fixed_dictionaries({"max_tokens": st.sampled_from([1, 2])}) | json_values,
            "agent": _ids | json_values,
            "events": st.lists(st.fixed_dictionaries({"event": _kinds}), max_size=2) | json_values,
            "result": json_values,
            "from_anchor": json_values,
            "timestamp": st.sampled_from(["2024-01-01T00:00:00Z", "bad", 17]) | json_values,
            "score": _score | json_values,
            "intermediate": json_values,
            "error": st.fixed_dictionaries({"message": json_values}) | json_values,
        },
    ),
    max_size=12,
)


def _check_span(span: TimelineSpan) -> None:
    assert total_tokens(span) >= 0
    for child in [*span.spans(), *span.branches]:
        _check_span(child)


@_SETTINGS
@given(events, st.booleans())
def test_builder_never_raises(evs: list[dict[str, Any]], rerolls: bool) -> None:
    timeline = build_timeline(evs, detect_reroll_branches=rerolls)
    _check_span(timeline.root)


@_SETTINGS
@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "id": json_values,
                "epoch": json_values,
                "messages": messages | json_values,
                "events": events | json_values,
                "attachments": st.dictionaries(st.sampled_from(["h1", "h2"]), json_values)
                | json_values,
                "scores": st.dictionaries(_ids, _score | json_values, max_size=3) | json_values,
                "error": st.fixed_dictionaries({"message": json_values}) | json_values,
                "completed_at": st.sampled_from(["2024-01-01T00:00:09Z", "bad"]) | json_values,
            },
        )
        | json_values,
        max_size=3,
    ),
    json_values,
)
def test_reader_never_raises_on_odd_samples(samples: list[Any], spec: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.json"
        path.write_text(json.dumps({"version": 2, "eval": spec, "samples": samples}))
        sink = WarningSink()
        sessions = list(iter_samples(path, sink))
        assert len(sessions) <= len(samples)
        # The reader's last-resort guard must never be what kept it from raising.
        assert not [w for w in sink.warnings if "could not be converted" in w.message]
        if len(sessions) > 1:
            # Several samples and none named: an error that lists them, never a silent pick.
            with pytest.raises(SourceError, match="choose one with --session"):
                READER.read([path], WarningSink())
            return
        session = READER.read([path], WarningSink())
        assert session.agent == "inspect"


@_SETTINGS
@given(st.integers(0, LOG.stat().st_size), st.integers(0, 255), st.integers(0, 2000))
def test_reader_never_raises_on_damaged_bytes(cut: int, byte: int, where: int) -> None:
    data = bytearray(LOG.read_bytes()[:cut])
    if data:
        data[where % len(data)] = byte
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.json"
        path.write_bytes(bytes(data))
        sink = WarningSink()
        session = READER.read([path], sink)
        assert session.id
        assert session.warnings or session.messages()
        assert not [w for w in sink.warnings if "could not be converted" in w.message]


def test_negative_or_odd_token_counts_count_as_nothing() -> None:
    # Found by a random search: a damaged log's negative count made the total negative.
    usage = {"input_tokens": -5, "output_tokens": 3, "input_tokens_cache_read": True}
    event = {"event": "model", "model": "m", "input": [], "output": {"usage": usage}}
    assert total_tokens(build_timeline([event]).root) == 3


def test_token_count_accepts_only_non_negative_numbers() -> None:
    from opencode_restore.sources.base import token_count

    assert [token_count(v) for v in (12, 7.9, 0, -3, True, "5", None)] == [12, 7, 0, 0, 0, 0, 0]
