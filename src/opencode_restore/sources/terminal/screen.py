"""Replay a full-screen terminal stream and stitch its frames into one transcript.

Full-screen TUIs (opencode 1.x, Codex) draw on the alternate screen with cursor
addressing and partial redraws, so the raw bytes hold no usable lines. The stream is
fed to a terminal emulator (pyte); at every frame end (``ESC[?2026l``, the end of a
synchronized update, or every :data:`FRAME_BYTES` without one) the visible rows are
taken, the composer and status rows below the conversation and the right sidebar are
cut off, and the remaining viewport is aligned on the transcript built so far: the
longest run of rows that matches an earlier position decides where it goes, and the
new rows replace what was there (so streamed text ends in its final form). Rows that
fall far enough above the viewport are final and are yielded.

Each row is tagged with the raw line (1-based newline count) at which it first
appeared. Best effort by nature: a screen the user scrolled back through, or a
dialog drawn over the conversation, can add stray or repeated rows.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from .layout import cut_sidebar
from .patterns import TerminalPatterns

#: Without synchronized-update markers, take a frame every this many bytes.
FRAME_BYTES = 16 * 1024
_CHUNK = 64 * 1024
_FRAME_END = b"\x1b[?2026l"
# A frame ends with a synchronized update; only alternate-screen frames are taken.
_EVENT = re.compile(rb"\x1b\[\?(?:2026l|1049[hl])")
_ALT_ON = b"\x1b[?1049h"
_ALT_OFF = b"\x1b[?1049l"
_SIZE_HEADER = re.compile(rb'COLUMNS="(\d+)" LINES="(\d+)"')
_CUP = re.compile(rb"\x1b\[(\d+);(\d+)H")
_CHA = re.compile(rb"\x1b\[(\d+)G")
_CUU = re.compile(rb"\x1b\[(\d+)A")
#: How many screens of rows stay open to re-alignment before they are final.
_KEEP_SCREENS = 3
_MIN_MATCH = 3
#: Bytes fed between scrollback checks of an inline stream (line-number precision).
_INLINE_STEP = 4096
_CURSOR_UP = re.compile(rb"\x1b\[\d*A")
#: Largest screen replayed: the size comes from the log (a ``script`` header, cursor
#: moves), and a 2 KB capture announcing 30,000 x 30,000 cost minutes of CPU. Real
#: terminals, even on a wide monitor with a small font, stay well inside.
MAX_COLUMNS = 1000
MAX_LINES = 500
#: Frame work (cells rendered, rows compared) allowed per byte fed, beyond a first
#: allowance: real frames cost far less, but a few bytes (erase, end of frame) can make a
#: big screen render again, so frames that come faster than their bytes pay for them are
#: merged into the next one (the rows' final text is the same).
WORK_PER_BYTE = 256
#: The bytes of a capture an emulator replays: its last ones. pyte reads about 1 MB/s,
#: so a bigger capture (hours of a TUI) would take minutes; the end holds the session's
#: last screens and turns, and the reader says what was left out.
MAX_REPLAY_BYTES = 16 * 1024 * 1024
_FIRST_ALLOWANCE = 4_000_000


def is_inline_redraw(head: bytes) -> bool:
    """True when a main-screen stream redraws in place (many cursor-up moves)."""
    return len(_CURSOR_UP.findall(head)) >= 8


def available() -> bool:
    """True when the pyte terminal emulator is installed."""
    return importlib.util.find_spec("pyte") is not None


def screen_size(head: bytes) -> tuple[int, int]:
    """``(columns, lines)`` from a ``script`` header, else from the cursor moves seen."""
    m = _SIZE_HEADER.search(head)
    if m is not None:
        return _capped(int(m.group(1)), int(m.group(2)))
    rows, cols = 24, 80
    for cup in _CUP.finditer(head):
        rows = max(rows, int(cup.group(1)))
        # A row is often painted from its start, so the last column is never addressed;
        # one column too many is harmless (full-screen UIs do not rely on autowrap).
        cols = max(cols, int(cup.group(2)) + 1)
    # Inline UIs move by column (CHA) and by rows up (CUU) instead.
    for cha in _CHA.finditer(head):
        cols = max(cols, int(cha.group(1)) + 1)
    for cuu in _CUU.finditer(head):
        rows = max(rows, int(cuu.group(1)) + 1)
    return _capped(cols, rows)


def _capped(cols: int, lines: int) -> tuple[int, int]:
    return max(1, min(cols, MAX_COLUMNS)), max(1, min(lines, MAX_LINES))


def viewport(rows: list[str], patterns: TerminalPatterns) -> list[str]:
    """The conversation rows of one frame: composer, status and sidebar cut off."""
    p = patterns
    end = len(rows)
    edge = next((i for i in range(len(rows) - 1, -1, -1) if p.composer_edge.match(rows[i])), None)
    if edge is not None:
        end = edge
        while end > 0 and p.user_message.match(rows[end - 1]):
            end -= 1
    else:
        for i in range(len(rows) - 1, -1, -1):
            if p.prompt.match(rows[i]):
                if i > 0 and p.rule.match(rows[i - 1]):
                    end = i - 1
                elif all(not r.strip() or p.is_noise(r) for r in rows[i + 1 :]):
                    end = i
                break
    kept = [text for _, text in cut_sidebar(enumerate(rows[:end]), p)]
    while kept and not kept[-1]:
        kept.pop()
    start = 0
    while start < len(kept) and not kept[start]:
        start += 1
    return kept[start:]


class Stitcher:
    """Aligns successive viewports into one transcript of ``(text, raw_line)`` rows."""

    def __init__(self, keep: int) -> None:
        self.rows: list[tuple[str, int]] = []
        self._keep = keep
        self._last: list[str] = []

    def add(self, view: list[str], raw_line: int) -> list[tuple[str, int]]:
        """Place ``view``; return the rows that became final (oldest first)."""
        if not view or view == self._last:
            return []
        self._last = view
        rows = self.rows
        # A pinned header row (Codex keeps the session's first prompt on top) is
        # skipped when the rest of the view aligns better without it.
        best_i, best_m, skip = _align(rows, view)
        if len(view) > 1:
            i1, m1, _ = _align(rows, view[1:])
            if m1 > best_m + 1:
                best_i, best_m, skip = i1, m1, 1
        view = view[skip:]
        if best_i >= 0 and best_m >= min(_MIN_MATCH, len(view), len(rows) - best_i):
            old = rows[best_i:]
            placed = [
                (v, old[j][1] if j < len(old) and old[j][0] == v else raw_line)
                for j, v in enumerate(view)
            ]
            self.rows = rows[:best_i] + placed
        else:
            self.rows = rows + [(v, raw_line) for v in view]
        excess = len(self.rows) - self._keep
        if excess <= 0:
            return []
        done, self.rows = self.rows[:excess], self.rows[excess:]
        return done

    def finish(self) -> list[tuple[str, int]]:
        """Every row still open."""
        done, self.rows = self.rows, []
        return done


def _align(rows: list[tuple[str, int]], view: list[str]) -> tuple[int, int, int]:
    """``(position, matched rows, 0)``: where ``view`` best continues ``rows`` (-1: nowhere)."""
    best_i, best_m = -1, 0
    for i in range(len(rows) - 1, -1, -1):
        if rows[i][0] != view[0]:
            continue
        m = 0
        limit = min(len(view), len(rows) - i)
        while m < limit and rows[i + m][0] == view[m]:
            m += 1
        if m > best_m:
            best_i, best_m = i, m
    return best_i, best_m, 0


class ScreenRows:
    """The screen's rows as text, rendered again only where pyte marked them dirty.

    ``pyte.Screen.display`` renders every cell of every row (with a ``wcwidth`` call
    and an assertion per cell) each time: taken at every frame it was half the time
    of reading a full-screen log, when a frame changes a few rows.
    """

    def __init__(self, screen: Any) -> None:
        from wcwidth import wcwidth  # pyte's own dependency

        self.screen = screen
        self.rows: list[str] = []
        self._wcwidth = wcwidth

    def __call__(self) -> list[str]:
        """The rows as ``screen.display`` has them."""
        screen = self.screen
        if len(self.rows) != screen.lines:
            self.rows = [""] * screen.lines
            screen.dirty.update(range(screen.lines))
        for y in screen.dirty:
            if y < screen.lines:
                self.rows[y] = self._render(screen.buffer[y], screen.columns)
        screen.dirty.clear()
        return self.rows

    def _render(self, line: Any, columns: int) -> str:
        """One row as ``pyte.Screen.display`` renders it, less its trailing blanks: the
        stub after a wide character is skipped."""
        wcwidth = self._wcwidth
        out: list[str] = []
        wide = False
        for x in range(_width(line, columns)):
            if wide:
                wide = False
                continue
            data = line[x].data
            wide = not data.isascii() and wcwidth(data[0]) == 2
            out.append(data)
        return "".join(out)


def _width(line: Any, columns: int) -> int:
    """The cells of a pyte row worth rendering: up to the last one ever written.

    A row keeps only the cells written to it (the others are blank), so a row the cursor
    merely crossed costs nothing, however wide the screen.
    """
    return min(columns, max(line) + 1) if line else 0


def replay_skip(size: int) -> int:
    """The bytes at the start of a capture of ``size`` bytes that are not replayed."""
    return max(0, size - MAX_REPLAY_BYTES)


def _skip(fh: BinaryIO, skip: int) -> tuple[int, bool]:
    """Read past the first ``skip`` bytes: their line breaks, and whether the alternate
    screen is on where the replay starts."""
    fh.seek(0)
    newlines = 0
    alt = False
    done = 0
    while done < skip:
        data = fh.read(min(16 * _CHUNK, skip - done))
        if not data:
            break
        newlines += data.count(b"\n")
        on, off = data.rfind(_ALT_ON), data.rfind(_ALT_OFF)
        if on != off:  # both -1 when the chunk switches neither way
            alt = on > off
        done += len(data)
    return newlines, alt


def iter_screen_lines(
    fh: BinaryIO, patterns: TerminalPatterns, skip: int = 0
) -> Iterator[tuple[int, str]]:
    """Yield ``(raw_line, text)`` transcript rows of a full-screen stream, replayed from
    byte ``skip`` on (`replay_skip`; the geometry still comes from the header)."""
    import pyte  # an optional dependency: checked by available()

    head = fh.read(_CHUNK)
    cols, lines = screen_size(head)
    screen: Any = pyte.Screen(cols, lines)
    stream: Any = pyte.ByteStream(screen)
    display = ScreenRows(screen)
    stitcher = Stitcher(keep=_KEEP_SCREENS * lines)
    newlines = 0
    since_frame = 0
    alt = False
    allowance = _FIRST_ALLOWANCE
    chunk = head
    if skip:
        newlines, alt = _skip(fh, skip)
        chunk = fh.read(_CHUNK)
    while chunk:
        pos = 0
        while pos < len(chunk):
            m = _EVENT.search(chunk, pos)
            start, end = (len(chunk), len(chunk)) if m is None else m.span()
            piece = chunk[pos:start]
            stream.feed(piece)
            newlines += piece.count(b"\n")
            since_frame += len(piece)
            allowance += (end - pos) * WORK_PER_BYTE
            pos = end
            event = b"" if m is None else m.group()
            due = event in (_FRAME_END, _ALT_OFF) or since_frame >= FRAME_BYTES
            # Leaving the alternate screen always takes its last frame.
            if alt and due and (allowance > 0 or event == _ALT_OFF):
                # A frame ends; leaving the alternate screen makes its last frame final
                # (the main screen drawn afterwards, exit banners, is not the session).
                since_frame = 0
                allowance -= len(screen.dirty) * cols + len(stitcher.rows) * lines
                yield from _frame(display(), stitcher, patterns, newlines + 1)
            if event:
                stream.feed(event)
                if event != _FRAME_END:
                    alt = event == _ALT_ON
        chunk = fh.read(_CHUNK)
    if alt:
        yield from _frame(display(), stitcher, patterns, newlines + 1)
    for text, line in stitcher.finish():
        yield line, text


def _frame(
    rows: list[str], stitcher: Stitcher, patterns: TerminalPatterns, raw_line: int
) -> Iterator[tuple[int, str]]:
    view = viewport([row.rstrip() for row in rows], patterns)
    for text, line in stitcher.add(view, raw_line):
        yield line, text


def iter_inline_lines(fh: BinaryIO, skip: int = 0) -> Iterator[tuple[int, str]]:
    """Yield ``(raw_line, text)`` rows of an inline (main-screen) TUI stream.

    Inline UIs (Claude Code's Ink renderer) redraw their live area with cursor-up and
    erase-line, and let finished output scroll into the terminal's scrollback. The
    stream is replayed with scrollback kept: each row that scrolls off the top is
    final and yielded at once (so memory stays bounded), the last screen at the end.
    """
    import pyte

    head = fh.read(_CHUNK)
    cols, lines = screen_size(head)
    screen: Any = pyte.HistoryScreen(cols, lines, history=lines * 4, ratio=0.5)
    stream: Any = pyte.ByteStream(screen)
    newlines = 0
    chunk = head
    if skip:
        newlines, _ = _skip(fh, skip)
        chunk = fh.read(_CHUNK)
    while chunk:
        for start in range(0, len(chunk), _INLINE_STEP):
            piece = chunk[start : start + _INLINE_STEP]
            stream.feed(piece)
            newlines += piece.count(b"\n")
            top = screen.history.top
            while top:
                row = top.popleft()
                width = _width(row, cols)
                yield newlines + 1, "".join(row[x].data for x in range(width)).rstrip()
        chunk = fh.read(_CHUNK)
    for row in screen.display:
        yield newlines + 1, row.rstrip()
