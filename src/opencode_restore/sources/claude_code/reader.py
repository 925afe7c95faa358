"""Claude Code JSONL transcripts (``~/.claude/projects/<encoded-cwd>/<sessionId>.jsonl``),
and the headless ``stream-json`` output (``stream``).

Reading takes two passes. The first (``scan``) keeps only ids, links and line
numbers; ``tree`` turns them into the live path, the abandoned rewind
branches and the side chains. The second pass re-reads just the wanted lines and
turns each content block into a ``Message`` (``convert``). Sub-agent runs
(``agents``) become child spans right after the Task call that started them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson

from ...diagnostics import WarningSink
from ...model import Message, Session
from ..base import SNIFF_BYTES, Checkpoint, Found
from ..chain import ChainLink
from ..discover import Discovery
from . import discover, tail
from .chain import chain_link
from .scan import scan
from .session import read_session, stream_entries
from .split import split_transcripts
from .stream import is_stream_head, is_stream_line, iter_stream, read_stream
from .tree import build_tree
from .web import is_web_head, iter_web, read_web

__all__ = ["READER", "ClaudeCodeReader", "read_session", "split_transcripts"]

_LINE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "attachment",
        "custom-title",
    }
)
_CHAIN_TYPES = frozenset({"user", "assistant", "system", "progress", "attachment"})


def log_form(path: Path) -> str:
    """What ``path`` holds: ``stream`` (``claude -p`` stream-json), ``web`` (a web export)
    or ``transcript``, from its head, read once for both tests (every read of a session
    asks)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return "transcript"  # the transcript reader reports the file
    if is_stream_head(head):
        return "stream"
    return "web" if is_web_head(head) else "transcript"


class ClaudeCodeReader(Discovery):
    """Reader for Claude Code session transcripts."""

    name = "claude-code"
    description = (
        "Claude Code JSONL transcripts (~/.claude/projects/*/*.jsonl), with sub-agents;"
        ' `claude -p --output-format stream-json` output; web exports ({"loglines": [...]})'
    )

    file_patterns = discover.PATTERNS

    def sniff(self, path: Path, head: bytes) -> float:
        """Sure for JSONL lines with Claude Code's envelope; unsure for bookkeeping-only heads."""
        if is_web_head(head):
            return 0.9  # Claude Code on the web's session export
        lines = head.split(b"\n")
        if len(head) >= 64 * 1024:
            lines = lines[:-1]  # the last line may be cut off by the head limit
        score = 0.0
        for raw in lines[:50]:
            if not raw.lstrip().startswith(b"{"):
                continue  # blank or no object (a pretty-printed JSON document)
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if is_stream_line(obj):
                return 0.9  # `claude -p --output-format stream-json`
            if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
                continue
            if obj["type"] not in _LINE_TYPES:
                continue
            typ = obj["type"]
            if typ in _CHAIN_TYPES and "parentUuid" in obj and "sessionId" in obj:
                return 0.95
            if typ in _CHAIN_TYPES and "uuid" in obj and "sessionId" in obj:
                score = max(score, 0.8)
            elif (
                (typ == "summary" and "leafUuid" in obj)
                or (typ == "file-history-snapshot" and "snapshot" in obj)
                or (typ == "queue-operation" and "operation" in obj and "sessionId" in obj)
            ):
                score = max(score, 0.6)
        if score == 0.0 and b'"parentUuid":' in head and b'"sessionId":' in head:
            score = 0.5  # a first line longer than the head
        return score

    def iter_messages(self, files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
        """Stream the live conversation; memory holds ids, never the log's text."""
        form = log_form(files[0]) if files else "transcript"
        if form == "stream":
            return iter_stream(files, sink)
        if form == "web":
            return iter_web(files, sink)
        s = scan(files, sink, agents=False)
        tree = build_tree(s, files, sink, with_side_runs=False)
        return stream_entries(files, s, tree.main.active, sink)

    def chain_link(self, path: Path) -> ChainLink:
        """What ``path`` records about its session, to check a chain of files."""
        return chain_link(path)

    def read(self, files: Sequence[Path], sink: WarningSink) -> Session:
        """Read the whole session: live path, rewind branches and sub-agents."""
        form = log_form(files[0]) if files else "transcript"
        if form == "stream":
            return read_stream(files, sink)
        if form == "web":
            return read_web(files, sink)
        return read_session(files, sink, with_agents=True)

    def read_hollow(self, files: Sequence[Path], sink: WarningSink) -> Session | None:
        """``read`` with the live path's bodies left in the files (``HollowReader``)."""
        if not files or log_form(files[0]) != "transcript":
            return None
        return read_session(files, sink, with_agents=True, hollow=True)

    def default_roots(self, home: Path) -> list[Path]:
        """Where the agent writes sessions under ``home`` (see ``discover``)."""
        return discover.default_roots(home)

    def describe(self, path: Path) -> Found | None:
        """What the file's first lines say of its session (see ``discover``)."""
        return discover.describe(path)

    def line_facts(self, raw: bytes) -> tuple[float | None, bool]:
        """``(timestamp, a tail may start here)`` of one transcript line (see ``tail``)."""
        return tail.line_facts(raw)

    def read_tail(
        self, files: Sequence[Path], starts: Sequence[Checkpoint | None], sink: WarningSink
    ) -> Iterator[Message] | None:
        """The messages after each file's checkpoint, or None (see ``tail``)."""
        return tail.read_tail(files, starts, sink)


READER = ClaudeCodeReader()
