"""Claude Code tail reads: the messages after checkpoints, converted by the reader's own code.

A checkpoint (``store.checkpoints``) may sit at any main-line conversation line that
shows something (``line_facts``); progress and side-chain lines never start a tail.

The full reader walks the whole conversation tree to keep only the live branch. A
tail read sees only the lines after a checkpoint, so it first checks (pass 1, ids
and links only) that the tail is one unbranched continuation (see ``_Links``). If
the check fails it returns None and the caller reads the whole chain instead.
Pass 2 converts each tail line with ``convert.Converter``, the same code the
full reader uses, so both paths produce identical messages.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec
import orjson

from ...diagnostics import WarningSink
from ...fields import parse_timestamp
from ...model import Message
from ..base import LINE_BUFFER, Checkpoint, is_complete_line, iter_lines, loads_capped
from .convert import Converter, attach_summaries
from .line import DECODER, NOISE, PROMPT, Line, classify, coerce

_CONVERSATION = frozenset({"user", "assistant", "system"})


def line_facts(raw: bytes) -> tuple[float | None, bool]:
    """(timestamp as epoch seconds, may start a tail) of one Claude Code line.

    A tail may start at any main-line conversation entry that shows something.
    """
    try:
        line = DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        # msgspec recurses, even over the fields it skips: a line nested ~1,000 deep
        # overflows it.
        return None, False
    ts = parse_timestamp(line.timestamp)
    start = (
        line.isSidechain is not True
        and line.uuid is not None
        and line.type in _CONVERSATION
        and classify(line) != NOISE
    )
    return (ts.timestamp() if ts is not None else None), start


def _lines(path: Path, start: Checkpoint, sink: WarningSink) -> Iterator[tuple[int, bytes]]:
    """Complete lines from ``start`` on, with their 1-based line numbers.

    A line over the line cap is reported to ``sink`` and skipped, never held whole.
    """
    with path.open("rb", buffering=LINE_BUFFER) as fh:
        fh.seek(start.offset)
        for lineno, raw, _ in iter_lines(fh, path, sink, lines_before=start.lines_before):
            if not raw:
                continue  # over the cap
            if not raw.endswith(b"\n") and not is_complete_line(raw):
                return  # still being written
            if raw.strip():
                yield lineno, raw


def _decode(raw: bytes) -> Line | None:
    try:
        return DECODER.decode(raw)
    except (ValueError, RecursionError):
        try:
            obj = loads_capped(raw)
        except orjson.JSONDecodeError:
            return None
        return coerce(obj) if isinstance(obj, dict) else None


class _Links:
    """Pass 1 state: the uuids the tail holds and which parents already have children.

    A Claude Code rewind always starts with a prompt written under an older entry, so
    a tail is a plain continuation unless, after its first conversation line, a prompt
    hangs under an entry outside the tail, a prompt shares its parent with another
    entry (in either order), or a conversation line starts a new root.
    """

    __slots__ = ("children", "first", "seen")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        #: parent uuid -> True when one of its children is a prompt
        self.children: dict[str, bool] = {}
        self.first = True

    def add(self, line: Line) -> bool:
        """Record one line; False when the tail is not a plain continuation."""
        uid = line.uuid
        if uid is not None and uid in self.seen:
            return True  # a repeated copy: both readers keep the first
        conversation = line.type in _CONVERSATION
        kind = classify(line) if conversation else NOISE
        boundary = line.type == "system" and line.subtype == "compact_boundary"
        parent = line.logicalParentUuid if boundary else line.parentUuid
        prompt = kind == PROMPT
        shows = conversation and kind != NOISE
        if shows and not self.first and (parent is None or (prompt and parent not in self.seen)):
            return False
        if kind != NOISE:
            self.first = False
        if parent is not None:
            had_prompt = self.children.get(parent)
            if had_prompt is not None and (prompt or had_prompt):
                return False
            self.children[parent] = bool(had_prompt) or prompt
        if uid is not None:
            self.seen.add(uid)
        return True


def _plain_continuation(
    files: Sequence[Path], starts: Sequence[Checkpoint | None], sink: WarningSink
) -> bool:
    links = _Links()
    for path, start in zip(files, starts, strict=True):
        if start is None:
            continue
        for lineno, raw in _lines(path, start, sink):
            line = _decode(raw)
            if line is None:
                sink.warn(path, lineno, "invalid JSON; skipped")
                continue
            if line.isSidechain is not True and not links.add(line):
                return False
    return True


def read_tail(
    files: Sequence[Path], starts: Sequence[Checkpoint | None], sink: WarningSink
) -> Iterator[Message] | None:
    """Messages of the tails of ``files`` (``starts[i]`` None: skip file i), or None.

    None means the tails are not a plain continuation and the chain must be read whole.
    """
    if not _plain_continuation(files, starts, sink):
        return None
    return attach_summaries(_messages(files, starts))


def _messages(files: Sequence[Path], starts: Sequence[Checkpoint | None]) -> Iterator[Message]:
    conv = Converter()
    emitted: set[str] = set()
    loads = loads_capped
    # Pass 1 reported every line skipped or refused here.
    quiet = WarningSink()
    for fi, (path, start) in enumerate(zip(files, starts, strict=True)):
        if start is None:
            continue
        for lineno, raw in _lines(path, start, quiet):
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError:
                continue  # reported by pass 1
            if type(obj) is not dict or obj.get("isSidechain") is True:
                continue
            if obj.get("type") not in _CONVERSATION:
                continue
            uid = obj.get("uuid")
            uid = uid if isinstance(uid, str) else f"{fi}:{lineno}"
            if uid in emitted:
                continue
            emitted.add(uid)
            yield from conv.convert(obj, uid, fi, lineno)
