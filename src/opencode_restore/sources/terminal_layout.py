"""Layout helpers of terminal captures: the opencode sidebar, indentation, tool names."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from .terminal_patterns import TerminalPatterns

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
    window: deque[tuple[int, str]] = deque()
    seen: dict[int, int] = {}
    boundary: int | None = None
    for item in lines:
        m = patterns.sidebar_marker.search(item[1])
        if m is not None and m.start("side") >= SIDEBAR_MIN_COLUMN:
            col = m.start("side")
            seen[col] = seen.get(col, 0) + 1
            if seen[col] >= 2:
                boundary = col
        window.append(item)
        if len(window) > SIDEBAR_LOOKAHEAD:
            yield _cut(window.popleft(), boundary)
    for item in window:
        yield _cut(item, boundary)


def _cut(item: tuple[int, str], boundary: int | None) -> tuple[int, str]:
    lineno, text = item
    if boundary is not None and len(text) > boundary and not text[boundary - 2 : boundary].strip():
        text = text[:boundary]
    return lineno, text.rstrip()


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
    """Join lines, removing their common leading indentation."""
    indents = [len(t) - len(t.lstrip()) for t in lines if t.strip()]
    cut = min(indents, default=0)
    return "\n".join(t[cut:] if t.strip() else "" for t in lines).strip("\n")
