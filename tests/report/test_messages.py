"""The seed-004 message renderers: timestamps in the API's one format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import orjson
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.model import Message
from opencode_restore.report.messages import iso, iter_markdown


def reference(ts: datetime) -> str:
    """The format as ``isoformat`` spells it: milliseconds when there are any, Z for UTC."""
    text = ts.isoformat(timespec="milliseconds" if ts.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def test_iso_examples() -> None:
    assert iso(None) is None
    assert iso(datetime(2026, 2, 11, 10, 30, tzinfo=UTC)) == "2026-02-11T10:30:00Z"
    assert iso(datetime(2026, 2, 11, 10, 30, 0, 123999, tzinfo=UTC)) == "2026-02-11T10:30:00.123Z"
    assert iso(datetime(2026, 2, 11, 10, 30, 0, 500, tzinfo=UTC)) == "2026-02-11T10:30:00.000Z"
    two = timezone(timedelta(hours=2))
    assert iso(datetime(2026, 2, 11, 12, 30, tzinfo=two)) == "2026-02-11T12:30:00+02:00"


@given(
    st.datetimes(),
    st.sampled_from([UTC, None, timezone(timedelta(hours=-5)), timezone(timedelta(0))]),
)
def test_iso_matches_isoformat(naive: datetime, tz: timezone | None) -> None:
    ts = naive.replace(tzinfo=tz)
    assert iso(ts) == reference(ts)


def test_a_tool_calls_input_is_shown_once_and_other_text_is_kept() -> None:
    # Seen on a real Claude Code log: a Bash call's JSON printed twice, block then text.
    call = {"command": "git commit -m 'x'"}
    same = Message("a", "assistant", "tool_use", orjson.dumps(call).decode(), tool_input=call)
    other = Message("b", "assistant", "tool_use", "ran it", tool_input=call)
    md = "".join(iter_markdown([same, other]))
    assert md.count(orjson.dumps(call).decode()) == 2  # once for each call
    assert "ran it" in md
