"""``--since``: an ISO 8601 time or a span back from now, parsed one way for every command."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from opencode_restore.errors import UsageError
from opencode_restore.since import EXPECTED, SinceError, parse_since

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("24h", timedelta(hours=24)),
        (" 90m", timedelta(minutes=90)),
        ("1.5d", timedelta(hours=36)),
        ("2w", timedelta(days=14)),
        ("3600s", timedelta(hours=1)),
    ],
)
def test_spans_count_back_from_now(text: str, span: timedelta) -> None:
    since = parse_since(text)
    assert since.cutoff(NOW) == NOW - span
    assert since.window(NOW) == span


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("2026-02-11T10:30:00Z", datetime(2026, 2, 11, 10, 30, tzinfo=UTC)),
        ("2026-02-11T11:30:00+01:00", datetime(2026, 2, 11, 10, 30, tzinfo=UTC)),
        ("2026-02-11T10:30:00", datetime(2026, 2, 11, 10, 30, tzinfo=UTC)),  # no zone: UTC
        ("2026-02-11", datetime(2026, 2, 11, tzinfo=UTC)),
    ],
)
def test_times_are_fixed_points(text: str, at: datetime) -> None:
    since = parse_since(text)
    assert since.cutoff(NOW) == at
    assert since.cutoff(NOW + timedelta(days=9)) == at
    assert since.window(NOW) == NOW - at


@pytest.mark.parametrize("bad", ["", "24", "0h", "-1h", "1y", "yesterday", "2026-13-01"])
def test_anything_else_is_a_usage_error_naming_both_forms(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_since(bad)
    assert str(info.value).startswith(f"--since {bad!r}: ")
    if bad != "0h":
        assert "ISO 8601 time" in str(info.value)
        assert "24h" in str(info.value)


def test_a_time_to_come_has_no_window() -> None:
    with pytest.raises(UsageError, match="that time is not in the past"):
        parse_since("2026-03-02T00:00:00Z").window(NOW)


def test_the_reason_is_the_same_whatever_names_the_parameter() -> None:
    # The CLI prints it after its option, the API beside its query parameter, the MCP
    # tool after its argument: one wording for one mistake.
    with pytest.raises(SinceError) as cli:
        parse_since("24")
    with pytest.raises(SinceError) as api:
        parse_since("24", "since")
    assert cli.value.reason == api.value.reason == f"'24': expected {EXPECTED}"
    assert str(cli.value) == f"--since {cli.value.reason}"
    assert str(api.value) == f"since {api.value.reason}"
