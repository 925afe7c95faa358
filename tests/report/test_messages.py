"""The seed-004 message renderers: timestamps in the API's one format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.report.messages import iso


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
