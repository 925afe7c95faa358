"""The ANSI stripper: sequences, cursor replay, streaming and fuzzing."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.sources.terminal.ansi import (
    MAX_LINE_BYTES,
    StreamStripper,
    iter_lines,
    remove_sequences,
    strip,
    strip_line,
    strip_lines,
)


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        (b"plain text", "plain text"),
        (b"\x1b[31mred\x1b[0m", "red"),
        (b"\x1b[38;2;255;10;10mtrue colour\x1b[39;49m", "true colour"),
        (b"\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
        (b"\x1b[?1049h\x1b[?2026halt\x1b[?2026l", "alt"),
        (b"\x1b[12;40Hmoved", "moved"),
        (b"\x1b]0;window title\x07after", "after"),
        (b"\x1b]2;title with ST\x1b\\after", "after"),
        (b"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "link"),
        (b"before\x1b]0;unterminated title", "before"),
        (b"\x1bPtmux;\x1b\x1bP+q4d73\x1b\x1b\\\x1b\\text", "text"),
        (b"\x1b(B\x1b7saved\x1b8\x1b=", "saved"),
        (b"bell\x07 and nul\x00 and del\x7f", "bell and nul and del"),
        (b"keep\ttabs", "keep\ttabs"),
        (b"abc\rX", "Xbc"),
        (b"10%\r50%\r100%", "100%"),
        (b"done\r", "done"),
        (b"ab\x08X", "aX"),
        (b"\x08\x08start", "start"),
        (b"Generating... |\rGenerating... /\r\x1b[KDone", "Done"),
        (b"abcdef\r\x1b[3C\x1b[Kx", "abcx"),
        (b"abcdef\x1b[3D\x1b[1K!", "   !ef"),
        (b"abcdef\x1b[2K\rnew", "new"),
        (b"a\x1b[5Cb", "a     b"),
        (b"xxxxxx\x1b[3GY", "xxYxxx"),
        (b"cut\x1b[", "cut"),
        (b"\xe2\x94\x83 rail \xe2\x94\x83", "┃ rail ┃"),
        (b"bad \xff utf8", "bad \ufffd utf8"),
    ],
)
def test_strip_line(raw: bytes, plain: str) -> None:
    assert strip_line(raw) == plain


def test_strip_lines_replays_only_lines_that_need_it() -> None:
    data = b"a\rb\nplain\n\x1b[1mbold\x1b[0m\nq\rz\n\rlast"
    assert strip_lines(data) == ["b", "plain", "bold", "z", "last"]


#: Pieces of raw lines: plain text, colour, in-line editing controls, box characters.
RAW_PIECES = [b"ab", b" ", b"\xe2\x94\x83", b"\x1b[31m", b"\x1b[0m", b"\r", b"\x08", b"\x1b[K"]
RAW_PIECES += [b"\x1b[3C", b"\x1b[2D", b"\x1b]0;t\x07", b"\x07", b"\r\n", b"\xff"]


@given(st.lists(st.lists(st.sampled_from(RAW_PIECES), max_size=8).map(b"".join), max_size=12))
def test_strip_lines_equals_strip_line_on_each_line(raw_lines: list[bytes]) -> None:
    # strip_lines skips its replay search on blocks that hold no editing control; with or
    # without one, each line reads as strip_line reads it alone.
    data = b"\n".join(raw_lines)
    assert strip_lines(data) == [strip_line(line) for line in data.split(b"\n")]


def test_strip_and_remove_sequences() -> None:
    assert strip("\x1b[1mx\x1b[0m\nab\rc") == "x\ncb"
    assert strip(b"\x1b[32mok\x1b[0m\n") == "ok\n"
    assert remove_sequences(b"\x1b[31m{\x1b[0m\r\n") == b"{\n"


def test_iter_lines_numbers_raw_lines_and_crlf() -> None:
    fh = io.BytesIO(b"one\r\n\x1b[1mtwo\x1b[0m\r\n\r\nfour")
    assert list(iter_lines(fh)) == [(1, "one"), (2, "two"), (3, ""), (4, "four")]


def test_iter_lines_cuts_a_huge_line_keeping_its_number() -> None:
    fh = io.BytesIO(b"x" * (2 * MAX_LINE_BYTES + 10) + b"\nnext\n")
    got = list(iter_lines(fh))
    assert [n for n, _ in got] == [1, 1, 2]
    assert sum(len(t) for n, t in got if n == 1) == 2 * MAX_LINE_BYTES + 10


def test_stream_stripper_handles_sequences_split_across_chunks() -> None:
    data = b"\x1b[38;5;174mhello\x1b[0m\r\nwor\x1b]0;t\x07ld\nspin\r\x1b[Kdone\n"
    whole = StreamStripper()
    expected = whole.feed(data) + whole.close()
    for size in (1, 2, 3, 7):
        s = StreamStripper()
        got: list[tuple[int, str]] = []
        for i in range(0, len(data), size):
            got += s.feed(data[i : i + size])
        assert got + s.close() == expected
    assert expected == [(1, "hello"), (2, "world"), (3, "done")]


def test_stream_stripper_close_without_pending() -> None:
    s = StreamStripper()
    assert s.feed(b"a\n") == [(1, "a")]
    assert s.close() == []


@given(st.binary(max_size=400))
def test_random_bytes_never_raise_and_leave_no_controls(data: bytes) -> None:
    for line in [*strip_lines(data.replace(b"\n", b"")), strip_line(data)]:
        assert "\x1b" not in line
        assert not any(ord(c) < 32 and c not in "\t\n" for c in line)


@given(
    st.lists(st.sampled_from([b"\x1b[", b"31m", b"\r", b"\x08", b"ab", b"\x1b]0;", b"\x07", b"\n"]))
)
def test_random_sequence_soup_never_raises(parts: list[bytes]) -> None:
    s = StreamStripper()
    for p in parts:
        s.feed(p)
    s.close()
