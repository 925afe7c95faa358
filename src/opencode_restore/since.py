"""``--since``: one meaning for every command, API query and MCP tool that takes it.

A value is either a point in time (ISO 8601, ``2026-02-11T10:30:00Z``; a time without a
zone is UTC) or a span back from now (``90m``, ``24h``, ``7d``, ``2w``, ``3600s``). A bad
value gets the same reason everywhere (`SinceError.reason`); each entry point names its
own parameter (the CLI's option, the API's query parameter, the MCP tool's argument).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .errors import UsageError
from .fields import parse_timestamp

_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
#: The longest span: older than any log, far from where ``now - span`` would overflow.
MAX_SPAN_SECONDS = 1000 * 366 * 86400
EXPECTED = "an ISO 8601 time (e.g. 2026-02-11T10:30:00Z) or a span back from now (90m, 24h, 7d, 2w)"


class SinceError(UsageError):
    """A value that is neither form; ``reason`` says why without naming the parameter."""

    def __init__(self, text: str, why: str, name: str = "--since") -> None:
        self.reason = f"{text!r}: {why}"
        super().__init__(f"{name} {self.reason}")


@dataclass(frozen=True, slots=True)
class Since:
    """A parsed ``--since``: a fixed time (``at``) or a span back from now (``span``)."""

    text: str
    at: datetime | None = None
    span: timedelta | None = None

    def cutoff(self, now: datetime | None = None) -> datetime:
        """The earliest time included, as an aware UTC datetime."""
        if self.at is not None:
            return self.at
        assert self.span is not None
        return (now if now is not None else datetime.now(UTC)) - self.span

    def window(self, now: datetime) -> timedelta:
        """The span from the cutoff to ``now`` (a usage error when the time is not past)."""
        window = now - self.cutoff(now)
        if window <= timedelta(0):
            raise UsageError(f"--since {self.text!r}: that time is not in the past")
        return window


def parse_since(text: str, name: str = "--since") -> Since:
    """Parse a ``--since`` value, or raise a `SinceError` naming both accepted forms
    (its message starts with ``name``, the parameter as the user wrote it)."""
    match = _SPAN.match(text)
    if match is not None:
        if float(match.group(1)) <= 0:
            raise SinceError(text, "a span must be positive (e.g. 24h)", name)
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
        if seconds > MAX_SPAN_SECONDS:  # `9999999999999d` overflowed the date arithmetic
            raise SinceError(text, "a span must be under 1000 years", name)
        return Since(text, span=timedelta(seconds=seconds))
    at = parse_timestamp(text) if text.strip() else None
    if at is None:
        raise SinceError(text, f"expected {EXPECTED}", name)
    return Since(text, at=at)
