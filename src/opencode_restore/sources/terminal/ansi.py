"""A fast, streaming ANSI/VT stripper for raw terminal logs.

Raw logs (``script``, ``tmux pipe-pane``, ``capture-pane -e``) carry colour codes,
cursor moves, window titles and spinner redraws. This module turns them into plain
screen lines, one raw line at a time, in binary:

* CSI (``ESC [`` ... final byte, private modes and SGR included), OSC (ended by BEL or
  ST, or by the end of the line), DCS/APC/PM/SOS strings (ST ended, tmux passthrough
  with doubled ESCs included) and two-byte ESC sequences are removed;
* C0 controls other than ``\\n`` and ``\\t`` are removed;
* ``\\r`` and backspace move the cursor, so ``abc\\rX`` reads ``Xbc`` and a progress
  line redrawn with ``\\r`` keeps its last version; ``ESC[K`` (erase line) and cursor
  moves within the line (``ESC[nC``, ``ESC[nD``, ``ESC[nG``) are honoured.

Three tiers keep it fast: a line without any control byte is only decoded; a line
without in-line editing is cleaned by one compiled ``bytes`` substitution; only lines
with ``\\r``, backspace or in-line cursor moves go through the small line emulator.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import BinaryIO

#: A raw line longer than this is cut into pieces (memory stays bounded on streams
#: that never emit a newline); every piece keeps the raw line's number.
MAX_LINE_BYTES = 1 << 20

_CHUNK_BYTES = 1 << 20

_CSI = r"\x1b\[[0-?]*[ -/]*[@-~]"
_STRINGS = (
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)"  # OSC, BEL/ST ended (or cut by the line end)
    r"|\x1b[P^_X](?:\x1b\x1b|[^\x1b])*?\x1b\\"  # DCS/PM/APC/SOS (tmux passthrough doubles ESC)
)
# Other escape sequences (charset, keypad, save/restore cursor) and a lone ESC.
_OTHER_SEQ = _STRINGS + r"|\x1b[ -/]*[0-~]|\x1b"
_C0 = r"[\x00-\x08\x0b-\x1f\x7f]"
_SEQ_BYTES = re.compile(f"{_CSI}|{_OTHER_SEQ}|{_C0}".encode(), re.DOTALL)
# Everything but the in-line editing controls (\r, backspace, CSI C/D/G/K), which a
# second pass replays on the few lines that still hold one. Every branch starts with
# ESC so the scan runs on a literal prefix; ``ESC [`` is never eaten as a two-byte
# sequence, so an editing CSI survives intact. Stray C0 bytes go by ``bytes.translate``.
_NON_EDITING = re.compile(
    (
        rb"\x1b(?:\[[0-?]*[ -/]*[@-BE-FH-JL-~]"
        rb"|\][^\x07\x1b]*(?:\x07|\x1b\\|$)"
        rb"|[P^_X](?:\x1b\x1b|[^\x1b])*?\x1b\\"
        rb"|[ -/]*[0-Z\\-~]|(?!\[))"
    ),
    re.DOTALL | re.MULTILINE,
)
_STRAY_C0 = bytes([*range(0x08), 0x0B, 0x0C, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_NEEDS_REPLAY = re.compile(r"[\r\x08\x1b]")
# A carriage return then an erase of the whole line: the row is blank again.
_RESET = re.compile(r"\r\x1b\[[02]?K")
_FORWARD = re.compile(r"\x1b\[([0-?]*)[ -/]*C")
_TOKEN = re.compile(
    r"(?P<csi>\x1b\[(?P<params>[0-?]*)[ -/]*(?P<final>[@-~]))"
    f"|(?P<seq>{_OTHER_SEQ})"
    r"|(?P<ctl>[\r\x08])"
    f"|(?P<junk>{_C0})"
    r"|(?P<text>[^\x00-\x08\x0b-\x1f\x7f]+)",
    re.DOTALL,
)


def _count(params: str, default: int = 1) -> int:
    head = params.split(";", 1)[0]
    return int(head) if head.isdigit() and int(head) > 0 else default


def _replay(line: str) -> str:
    """Replay one line's text and in-line cursor controls on a one-row buffer."""
    buf: list[str] = []
    cur = 0
    for m in _TOKEN.finditer(line):
        kind = m.lastgroup
        if kind == "text":
            run = m.group()
            if cur > len(buf):
                buf.extend(" " * (cur - len(buf)))
            buf[cur : cur + len(run)] = run
            cur += len(run)
        elif kind == "ctl":
            cur = 0 if m.group() == "\r" else max(0, cur - 1)
        elif kind == "csi":
            params, final = m.group("params"), m.group("final")
            if final == "C":
                cur += _count(params)
            elif final == "D":
                cur = max(0, cur - _count(params))
            elif final == "G":
                cur = _count(params) - 1
            elif final == "K":
                mode = _count(params, 0)
                if mode == 0:
                    del buf[cur:]
                elif mode == 1:
                    buf[: min(cur + 1, len(buf))] = " " * min(cur + 1, len(buf))
                else:
                    buf.clear()
    return "".join(buf)


def _emulate(line: str) -> str:
    """:func:`_replay`, with shortcuts for the common shapes of redrawn lines.

    A spinner redraws with ``\\r`` then ``ESC[K`` (the buffer is empty again, so only
    the text after the last such reset counts); a line with ``\\r`` as its only control
    overlays its segments; a box row padded with ``ESC[nC`` only moves forward, so
    each move is blanks before the next text.
    """
    if "\r\x1b[" in line:
        line = _RESET.split(line)[-1]
    if "\x1b" not in line:
        if "\x08" in line:
            return _replay(line)
        parts = line.split("\r")
        buf = parts[0]
        for part in parts[1:]:
            buf = part + buf[len(part) :]
        return buf
    if "\r" in line or "\x08" in line:
        return _replay(line)
    parts = _FORWARD.split(line)
    if any("\x1b" in t for t in parts[::2]):
        return _replay(line)
    pieces, pad = [parts[0]], 0
    for i in range(1, len(parts), 2):
        pad += _count(parts[i])
        if text := parts[i + 1]:
            pieces += (" " * pad, text)
            pad = 0
    return "".join(pieces)


def _clean(data: bytes) -> str:
    """Drop every sequence but the in-line editing ones, decode; ``\\r`` before ``\\n`` goes.

    A carriage return that only precedes a newline (``\\r\\n`` endings) moves the cursor
    and writes nothing, so dropping it spares the line its replay.
    """
    if b"\x1b" in data:
        data = _NON_EDITING.sub(b"", data)
    text = data.translate(None, _STRAY_C0).decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").rstrip("\r")
    return text


def strip_line(raw: bytes) -> str:
    """One raw line (without its newline) as the plain text a terminal would show."""
    text = _clean(raw)
    return _emulate(text) if _NEEDS_REPLAY.search(text) else text


def strip_lines(data: bytes) -> list[str]:
    """Strip a buffer of complete lines (no trailing newline) into plain lines.

    One C-level substitution and one decode cover the whole buffer; only the lines
    that still hold an editing control are found (by a scan, not a Python loop over
    every line) and replayed.
    """
    text = _clean(data)
    lines = text.split("\n")
    if "\x1b" not in text and "\r" not in text and "\x08" not in text:
        # Three ``in`` tests run at memory speed; the class search below does not, and
        # most blocks of a capture hold no editing control at all.
        return lines
    search, count = _NEEDS_REPLAY.search, text.count
    index, scanned = 0, 0
    m = search(text)
    while m is not None:
        index += count("\n", scanned, m.start())
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.start())
        end = len(text) if end < 0 else end
        lines[index] = _emulate(text[start:end])
        scanned = end
        m = search(text, end)
    return lines


def strip(text: str | bytes) -> str:
    """Strip a whole (small) text: each line as :func:`strip_line`, newlines kept."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return "\n".join(strip_line(line) for line in data.split(b"\n"))


def remove_sequences(data: bytes) -> bytes:
    """Delete every escape sequence and control byte but ``\\n``/``\\t``; no cursor replay.

    Useful on a head of bytes to test what text a file holds (format sniffing).
    """
    return _SEQ_BYTES.sub(b"", data)


#: Lines of a block with their raw line numbers (consecutive, except where a huge
#: line was cut into pieces that share one number).
Block = tuple[Sequence[int], list[str]]


def iter_blocks(fh: BinaryIO) -> Iterator[Block]:
    """Yield the stripped lines of a binary stream a block (about 1 MB) at a time.

    The same lines and numbers as :func:`iter_lines`, without a tuple per line.
    """
    stripper = StreamStripper()
    while chunk := fh.read(_CHUNK_BYTES):
        yield from stripper.feed_blocks(chunk)
    yield from stripper.close_blocks()


def iter_lines(fh: BinaryIO) -> Iterator[tuple[int, str]]:
    """Yield ``(raw_line_number, plain_text)`` for each line of a binary stream.

    Line numbers are 1-based and count raw newlines, so they cite the raw file. The
    stream is read in 1 MB blocks; a line longer than :data:`MAX_LINE_BYTES` is cut
    into pieces that share its number. ``\r\n`` endings need no special case: a
    trailing ``\r`` moves the cursor and erases nothing.
    """
    for numbers, lines in iter_blocks(fh):
        yield from zip(numbers, lines, strict=True)


class StreamStripper:
    """Feed arbitrary byte chunks; get back complete stripped lines.

    Sequences split across chunk boundaries are handled because only complete
    lines are stripped; :meth:`close` flushes the last, unterminated line.
    """

    def __init__(self) -> None:
        self._pending = bytearray()
        self._lineno = 1

    def feed(self, chunk: bytes) -> list[tuple[int, str]]:
        """Add ``chunk``; return the ``(line_number, text)`` of each line it completed."""
        return [
            pair
            for nums, lines in self.feed_blocks(chunk)
            for pair in zip(nums, lines, strict=True)
        ]

    def feed_blocks(self, chunk: bytes) -> list[Block]:
        """Add ``chunk``; return the lines it completed as blocks."""
        self._pending += chunk
        cut = self._pending.rfind(b"\n")
        out: list[Block] = []
        if cut >= 0:
            lines = strip_lines(bytes(self._pending[:cut]))
            out.append((range(self._lineno, self._lineno + len(lines)), lines))
            self._lineno += len(lines)
            del self._pending[: cut + 1]
        if len(self._pending) > MAX_LINE_BYTES:
            out.append(((self._lineno,), [strip_line(bytes(self._pending))]))
            self._pending.clear()
        return out

    def close(self) -> list[tuple[int, str]]:
        """Flush the unterminated last line, if any."""
        return [
            pair for nums, lines in self.close_blocks() for pair in zip(nums, lines, strict=True)
        ]

    def close_blocks(self) -> list[Block]:
        """Flush the unterminated last line, if any, as a block."""
        if not self._pending:
            return []
        last: list[Block] = [((self._lineno,), [strip_line(bytes(self._pending))])]
        self._pending.clear()
        return last
