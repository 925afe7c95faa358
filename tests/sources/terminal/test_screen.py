"""Full-screen replay: the rows kept up to date from pyte's dirty set are its display.

Rows are compared without their trailing blanks, which the replay never renders (every
row is right-stripped before use) and which cost a wide screen's width per row.
"""

from __future__ import annotations

from pathlib import Path

import pyte
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore.sources.terminal.screen import (
    MAX_COLUMNS,
    MAX_LINES,
    ScreenRows,
    screen_size,
)

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "terminal" / "real"
STREAMS = sorted(REAL.glob("*/tui.typescript"))


def stripped(rows: list[str]) -> list[str]:
    """The rows without their trailing blanks."""
    return [r.rstrip() for r in rows]


def replay(data: bytes, cuts: list[int], size: tuple[int, int] | None = None) -> None:
    """Feed ``data`` cut at ``cuts``; after every piece the rows equal the display."""
    cols, lines = size or screen_size(data[:65536])
    screen = pyte.Screen(cols, lines)
    stream = pyte.ByteStream(screen)
    rows = ScreenRows(screen)
    start = 0
    for end in [*sorted(cuts), len(data)]:
        stream.feed(data[start:end])
        start = end
        assert stripped(rows()) == stripped(screen.display)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.parent.name)
def test_rows_follow_the_display_through_real_recordings(path: Path) -> None:
    data = path.read_bytes()
    replay(data, list(range(0, len(data), 2048)))


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(STREAMS),
    st.lists(st.integers(0, 300_000), max_size=40),
    st.sampled_from([None, (40, 10), (200, 60)]),
)
def test_rows_follow_the_display_at_any_cut_and_size(
    path: Path, cuts: list[int], size: tuple[int, int] | None
) -> None:
    data = path.read_bytes()
    replay(data, [c % len(data) for c in cuts], size)


def test_wide_characters_and_resizes() -> None:
    screen = pyte.Screen(12, 3)
    stream = pyte.ByteStream(screen)
    rows = ScreenRows(screen)
    stream.feed("漢字 ok\r\n😀x\x1b[1;2Hz".encode())
    assert stripped(rows()) == stripped(screen.display)
    screen.resize(4, 20)
    stream.feed(b"\x1b[2J\x1b[Hnew")
    assert stripped(rows()) == stripped(screen.display)


def test_a_row_costs_what_was_written_to_it_not_the_screen_width() -> None:
    screen = pyte.Screen(1000, 3)
    rows = ScreenRows(screen)
    pyte.ByteStream(screen).feed(b"ab\x1b[3;1000H")
    assert rows() == ["ab", "", ""]


def test_an_announced_or_addressed_screen_size_is_capped() -> None:
    header = b'Script started [COLUMNS="20000" LINES="20000"]\n'
    assert screen_size(header) == (MAX_COLUMNS, MAX_LINES)
    assert screen_size(b"\x1b[30000;30000H") == (MAX_COLUMNS, MAX_LINES)
    assert screen_size(b'COLUMNS="0" LINES="0"') == (1, 1)
