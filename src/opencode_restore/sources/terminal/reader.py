"""Raw terminal captures of coding-agent TUIs (opencode, Claude Code, Codex).

Two kinds of input are read:

* line-oriented text: ``capture-pane`` snapshots (with or without escapes), logs of
  line-mode UIs, and the old opencode TUI as sketched in the seed. Each raw line,
  ANSI-stripped (:mod:`.ansi`), is one screen line; the right-hand sidebar of wide
  opencode screens is cut off; :class:`.lines.LineScanner` finds the turns.
* redrawn streams (``script`` typescripts, ``tmux pipe-pane``): when the alternate
  screen (``ESC[?1049h``) shows up in the head, the stream is replayed on a terminal
  emulator (pyte) and its frames are stitched into one transcript; when the head
  redraws in place (cursor-up moves, as Claude Code's inline UI does), it is replayed
  with scrollback and the rows that scroll off are read (:mod:`.screen`).
  Without pyte both are read line by line, best effort, with a warning.

Message ids are ``"{file_index}:{line}"`` with ``line`` the 1-based raw line the
message starts on, so a log search can cite ``file:line``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from ...diagnostics import WarningSink
from ...model import Message, Session, Timeline, TimelineEvent, TimelineSpan
from ..base import Found
from ..discover import Discovery, last_activity
from . import screen
from .ansi import Block, iter_blocks, remove_sequences
from .layout import cut_sidebar_blocks
from .lines import LineScanner
from .patterns import TerminalPatterns, default_patterns, load_terminal_patterns

__all__ = ["READER", "TerminalPatterns", "TerminalReader", "load_terminal_patterns"]

_ALT_SCREEN = b"\x1b[?1049h"
_STRONG_MARKERS = ("▣  ", "→ Read", "← Edit", "← Write", "⎿", "● ", "❯ ", "Claude Code v", "• Ran")


class TerminalReader(Discovery):
    """Reader for raw terminal captures; see the module docstring."""

    name = "terminal"
    description = "raw terminal captures (opencode TUI, Claude Code TUI)"

    def __init__(self, patterns: TerminalPatterns | None = None) -> None:
        self._patterns = patterns

    def describe(self, path: Path) -> Found | None:
        """A capture names its session by its content (`capture_id`), not its file."""
        return Found(self.name, capture_id(path), path, updated=last_activity(path))

    @property
    def patterns(self) -> TerminalPatterns:
        """The compiled ``[terminal]`` patterns (the packaged ones unless given)."""
        if self._patterns is None:
            self._patterns = default_patterns()
        return self._patterns

    def sniff(self, path: Path, head: bytes) -> float:
        """Escapes plus TUI markers score high, markers alone medium; no marker, nothing."""
        stripped = head.lstrip()
        if not stripped or stripped[:1] in (b"{", b"["):
            return 0.0
        if b"\x00" in head[:4096]:
            return 0.0
        text = remove_sequences(head).decode("utf-8", "replace")
        markers = sum(1 for m in _STRONG_MARKERS if m in text)
        rail = text.count("┃")
        has_esc = b"\x1b[" in head
        if not markers and not rail:
            # Plain text or colour escapes alone are any program's output (a README, a
            # hostname, `ls --color`), not an agent's transcript; `--agent terminal` forces it.
            return 0.0
        if has_esc:
            return 0.9
        if markers >= 2 or rail >= 2:
            return 0.7
        return 0.3

    def iter_messages(self, files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
        """Stream the messages of every file in the chain, oldest first."""
        for index, path in enumerate(files):
            yield from self._iter_file(index, path, sink)

    def _iter_file(self, index: int, path: Path, sink: WarningSink) -> Iterator[Message]:
        scanner = LineScanner(self.patterns, index)
        try:
            with path.open("rb") as fh:
                for numbers, lines in cut_sidebar_blocks(
                    self._blocks(path, fh, sink), self.patterns
                ):
                    scanner.feed_block(numbers, lines)
                    yield from scanner.drain()
        except OSError as exc:
            sink.warn(path, 0, f"cannot read: {exc.strerror}")
        yield from scanner.finish()

    def _blocks(self, path: Path, stream: BinaryIO, sink: WarningSink) -> Iterator[Block]:
        head = stream.read(64 * 1024)
        stream.seek(0)
        full_screen = _ALT_SCREEN in head
        if full_screen or screen.is_inline_redraw(head):
            if screen.available():
                skip = screen.replay_skip(os.fstat(stream.fileno()).st_size)
                if skip:
                    sink.warn(
                        path,
                        1,
                        f"a {_mb(skip + screen.MAX_REPLAY_BYTES)} screen capture: only its last "
                        f"{_mb(screen.MAX_REPLAY_BYTES)} are replayed (the {_mb(skip)} before "
                        "are left out of the transcript)",
                    )
                if full_screen:
                    return _batched(screen.iter_screen_lines(stream, self.patterns, skip))
                return _batched(screen.iter_inline_lines(stream, skip))
            sink.warn(
                path,
                1,
                "terminal stream with cursor redraws read line by line "
                "(install pyte for a faithful replay); turns may be garbled",
            )
        return iter_blocks(stream)

    def read(self, files: Sequence[Path], sink: WarningSink) -> Session:
        """The whole capture as a session with one root span (no sub-agents in a TUI)."""
        messages = list(self.iter_messages(files, sink))
        root = TimelineSpan(id="root", name="main", span_type="agent")
        root.content.extend(
            TimelineEvent(
                uuid=m.id,
                kind="compaction" if m.compaction else "message",
                message=m,
                compaction=m.compaction,
            )
            for m in messages
        )
        model = next((m.model for m in reversed(messages) if m.model), None)
        first = files[0] if files else Path("terminal")
        return Session(
            id=capture_id(first) if files else first.stem,
            agent=self.name,
            files=[str(f) for f in files],
            timeline=Timeline(root=root, name=first.name),
            model=model,
            warnings=list(sink.warnings),
        )


#: Bytes of a capture its id is made from: the ``script`` header (start time, command,
#: terminal) and the first screen, written once and never again while the capture grows.
#: A TUI writes that much drawing its first screen; a shorter capture gets another id
#: once it reaches this size.
ID_BYTES = 4096


def capture_id(path: Path) -> str:
    """A capture's session id: its file name and a digest of its first bytes. Named by
    the file alone, three agents' ``tui.typescript`` were one session in a batch, each
    restore replacing the others' journal."""
    try:
        with path.open("rb") as fh:
            head = fh.read(ID_BYTES)
    except OSError:
        return path.stem
    return f"{path.stem}-{hashlib.sha256(head).hexdigest()[:10]}"


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def _batched(lines: Iterator[tuple[int, str]], size: int = 4096) -> Iterator[Block]:
    """Group replayed screen lines (whose numbers repeat and jump) into blocks."""
    numbers: list[int] = []
    texts: list[str] = []
    for lineno, text in lines:
        numbers.append(lineno)
        texts.append(text)
        if len(texts) >= size:
            yield numbers, texts
            numbers, texts = [], []
    if texts:
        yield numbers, texts


READER = TerminalReader()
