"""The reader protocol, the warning sink and the streaming line helpers every reader shares."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson

from ..model import Message, ReadWarning, Session

#: How many bytes of a file ``sniff`` gets to look at.
SNIFF_BYTES = 64 * 1024


@dataclass(slots=True)
class WarningSink:
    """Collects read warnings, and optionally reports each one as it happens."""

    report: Callable[[ReadWarning], None] | None = None
    warnings: list[ReadWarning] = field(default_factory=list)
    limit: int = 1000

    def warn(self, path: str | Path, line: int, message: str) -> None:
        """Record (and report) that ``path:line`` was skipped or misread."""
        w = ReadWarning(str(path), line, message)
        if len(self.warnings) < self.limit:
            self.warnings.append(w)
        if self.report is not None:
            self.report(w)


def stderr_sink() -> WarningSink:
    """A sink that prints each warning as one line on stderr."""
    return WarningSink(report=lambda w: print(f"warning: {w}", file=sys.stderr))


class Reader(Protocol):
    """One log format. Readers only normalize; they never summarize."""

    #: Short name used by ``--agent`` (e.g. ``claude-code``).
    name: str
    #: One line for ``opencode-restore formats``.
    description: str

    def sniff(self, path: Path, head: bytes) -> float:
        """Confidence in 0..1 that ``path`` (whose first bytes are ``head``) is this format."""
        ...

    def iter_messages(self, files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
        """Stream the active conversation's messages across the chain, oldest first."""
        ...

    def read(self, files: Sequence[Path], sink: WarningSink) -> Session:
        """Read the whole session (timeline with sub-agents and branches)."""
        ...


#: Read buffer for files iterated line by line: with the default 8 KB, every line longer
#: than the buffer (tool output, file contents) is assembled from several reads, which
#: made iterating a real 200 MB log 2.5x slower.
LINE_BUFFER = 1 << 20


def iter_json_lines(path: Path, sink: WarningSink) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSON-object line of a JSONL file.

    Streams in binary (a 1 GB file is never held in memory). Blank lines are
    ignored; invalid JSON, invalid UTF-8, non-object values and a truncated last
    line are reported to ``sink`` with the file and line, then skipped.
    """
    loads = orjson.loads
    with path.open("rb", buffering=LINE_BUFFER) as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError as exc:
                truncated = not raw.endswith(b"\n")
                what = "truncated last line" if truncated else f"invalid JSON ({exc.msg})"
                sink.warn(path, lineno, f"{what}; skipped")
                continue
            if not isinstance(obj, dict):
                sink.warn(path, lineno, f"JSON {type(obj).__name__} is not an object; skipped")
                continue
            yield lineno, obj


def load_json(path: Path, sink: WarningSink) -> Any:
    """Load a whole-file JSON document, tolerating junk before the first ``{``.

    Returns ``None`` (after reporting) when the file holds no JSON object.
    """
    data = path.read_bytes()
    start = data.find(b"{")
    if start < 0:
        sink.warn(path, 1, "no JSON object found")
        return None
    if start > 0:
        sink.warn(path, 1, f"skipped {start} bytes before the first '{{'")
    try:
        return orjson.loads(data[start:])
    except orjson.JSONDecodeError as exc:
        line = data.count(b"\n", 0, start + exc.pos) + 1
        sink.warn(path, line, f"invalid JSON ({exc.msg})")
        return None


_EPOCH_MS_CUTOFF = 10_000_000_000


def parse_timestamp(value: Any) -> datetime | None:
    """Parse an ISO 8601 string or a unix time (seconds or ms) into an aware UTC datetime."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            seconds = value / 1000 if value > _EPOCH_MS_CUTOFF else value
            return datetime.fromtimestamp(seconds, UTC)
        if isinstance(value, str):
            dt = datetime.fromisoformat(value)
            if dt.tzinfo is None:
                return dt.replace(tzinfo=UTC)
            return dt.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def text_of(content: Any) -> str:
    """Flatten a string or a list of text-ish blocks into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                t = block.get("text")
                if isinstance(t, str):
                    parts.append(t)
                elif block.get("type") == "image":
                    parts.append("<image />")
        return "\n".join(parts)
    if isinstance(content, dict):
        t = content.get("text")
        return t if isinstance(t, str) else orjson.dumps(content).decode()
    return str(content)


def token_count(value: Any) -> int:
    """A token count read from a log: a non-negative int, else 0.

    Logs are untrusted: a count may be missing, a string, a bool or negative, and a
    negative one would make totals and costs lie.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return 0
    return int(value)
