"""Layout helpers of terminal captures: the opencode sidebar, indentation, tool names."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
from operator import not_, sub
from typing import Any

from .ansi import Block
from .patterns import TerminalPatterns

#: Lines kept back to find the sidebar column before the first of them is cut.
SIDEBAR_LOOKAHEAD = 64
#: The sidebar never starts left of this column (conversation text can hold its words).
SIDEBAR_MIN_COLUMN = 40
_PATH_TOOLS = {"Read": "Read", "Edit": "Edit", "Update": "Edit", "Write": "Write"}
_NAMED_TOOLS = {"Web Search": "WebSearch", "Fetch": "WebFetch", "Bash": "Bash"}


def cut_sidebar(
    lines: Iterable[tuple[int, str]], patterns: TerminalPatterns
) -> Iterator[tuple[int, str]]:
    """Cut the right-hand sidebar off two-column screens; strip trailing blanks.

    The sidebar column is where at least two ``sidebar_marker`` rows start their
    right part; a small lookahead finds it before the rows above it are emitted.
    """
    for numbers, cut in cut_sidebar_blocks((((n,), [t]) for n, t in lines), patterns):
        yield from zip(numbers, cut, strict=True)


def cut_sidebar_blocks(blocks: Iterable[Block], patterns: TerminalPatterns) -> Iterator[Block]:
    """:func:`cut_sidebar` over blocks of lines: the same lines, cut the same way."""
    cutter = _SidebarCutter(patterns)
    for numbers, lines in blocks:
        yield from cutter.feed(numbers, lines)
    yield from cutter.flush()


class _SidebarCutter:
    """Line ``j`` is cut at the column known after line ``j + SIDEBAR_LOOKAHEAD``.

    Lines are counted by their order (``ordinal``), not by their raw number; the
    column changes seldom, so it is kept as a list of ``(ordinal, column)`` changes.
    """

    def __init__(self, patterns: TerminalPatterns) -> None:
        self._marker = patterns.sidebar_marker
        self._gate = patterns.sidebar_gate
        self._seen: dict[int, int] = {}
        self._boundary: int | None = None
        self._changes: list[tuple[int, int]] = []
        self._count = 0
        #: Blocks not emitted yet, each with the ordinal of its first line.
        self._held: deque[tuple[int, Sequence[int], list[str]]] = deque()

    def feed(self, numbers: Sequence[int], lines: list[str]) -> list[Block]:
        first = self._count
        if self._gate is None:
            candidates: Iterable[int] = range(len(lines))
        else:
            candidates = (i for i, _ in self._gate.maybe(lines))
        for i in candidates:
            m = self._marker.search(lines[i])
            if m is not None and m.start("side") >= SIDEBAR_MIN_COLUMN:
                col = m.start("side")
                self._seen[col] = self._seen.get(col, 0) + 1
                if self._seen[col] >= 2 and col != self._boundary:
                    self._boundary = col
                    self._changes.append((first + i, col))
        self._count += len(lines)
        self._held.append((first, numbers, lines))
        return self._emit(self._count - SIDEBAR_LOOKAHEAD)

    def flush(self) -> list[Block]:
        return self._emit(self._count)

    def _emit(self, limit: int) -> list[Block]:
        """The held lines of ordinal below ``limit``, cut."""
        out: list[Block] = []
        while self._held and self._held[0][0] < limit:
            first, numbers, lines = self._held.popleft()
            take = min(len(lines), limit - first)
            if take < len(lines):
                self._held.appendleft((first + take, numbers[take:], lines[take:]))
            out.append((numbers[:take], self._cut(first, lines[:take])))
        return out

    def _cut(self, first: int, lines: list[str]) -> list[str]:
        if not self._changes:
            return list(map(str.rstrip, lines))
        out: list[str] = []
        pos = 0
        while pos < len(lines):
            # The column for ordinal o is the last change at or before o + LOOKAHEAD.
            seen_to = first + pos + SIDEBAR_LOOKAHEAD
            boundary: int | None = None
            end = len(lines)
            for at, col in self._changes:
                if at <= seen_to:
                    boundary = col
                else:
                    end = min(end, at - SIDEBAR_LOOKAHEAD - first)
                    break
            out += [_cut_line(t, boundary) for t in lines[pos:end]]
            pos = end
        return out


def _cut_line(text: str, boundary: int | None) -> str:
    if boundary is not None and len(text) > boundary and not text[boundary - 2 : boundary].strip():
        text = text[:boundary]
    return text.rstrip()


def tool_call(name: str, args: str, collapsed: bool = False) -> tuple[str, dict[str, Any]]:
    """The unified tool name and input of a tool line (``Update`` → ``Edit``, ...).

    File tools get ``{"file_path"}``, shells ``{"command"}``; a collapsed group
    ("Read 1 file") names no file, so its input is empty.
    """
    tool = _PATH_TOOLS.get(name) or _NAMED_TOOLS.get(name) or name.replace(" ", "")
    if collapsed:
        return tool, {}
    if tool in ("Read", "Edit", "Write", "Delete"):
        return tool, {"file_path": args}
    if tool == "Bash":
        return tool, {"command": args}
    if tool == "WebSearch":
        return tool, {"query": args.strip('"')}
    if tool == "WebFetch":
        return tool, {"url": args}
    return tool, {"args": args} if args else {}


def dedent(lines: list[str]) -> str:
    """Join lines, removing their common leading indentation (blank lines become empty)."""
    if len(lines) == 1:
        return lines[0].lstrip().strip("\n")
    # Loops run in C (map, compress): this joins every message's text.
    widths = list(map(len, lines))
    texts = list(map(len, map(str.lstrip, lines)))
    cut = min(compress(map(sub, widths, texts), texts), default=0)
    if any(compress(widths, map(not_, texts))):  # blank lines that hold spaces
        return "\n".join([t[cut:] if n else "" for t, n in zip(lines, texts, strict=True)]).strip(
            "\n"
        )
    if cut:
        return "\n".join([t[cut:] for t in lines]).strip("\n")
    return "\n".join(lines).strip("\n")
