"""A stored session's messages: its transcript chain, stitched oldest first, filtered.

Only files registered in the session's chain are ever opened, and a file a hook
registered only while it still resolves to a place a transcript may be
(`transcript_paths.read_refusal`: a symlink re-pointed since is refused). A ``since`` request
on a format with tail reads (a ``sources.base.TailReader``) seeks each file to its
last checkpoint older than ``since``; every other request streams the reader's
messages over the whole chain (of a container, the session named by the row's id).
A request for labels (``labeler``) counts every labelled message before the tail's start
(a message's ``[M#]`` counts them all): once per start checkpoint, by a full read, kept in
the store's `LABEL_MARKS` cache; a poll from the same checkpoint reads only the tail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ..diagnostics import WarningSink
from ..errors import SourceError
from ..model import Labelled, Message
from ..redact import Redactor, redact_message
from ..sources import (
    is_container,
    is_container_reader,
    iter_messages,
    message_filter,
    readers,
)
from ..sources.base import Checkpoint, Reader, TailReader
from ..sources.ids import unique_ids
from .checkpoints import tail_start, update_index
from .store import SessionRow, Store
from .transcript_paths import read_refusal

#: Labels issued before a tail's start checkpoint, by (session, chain up to the file, the
#: file's device and inode, the checkpoint's offset and line). Process-wide and bounded:
#: a miss costs one full read, never a wrong label.
LABEL_MARKS: dict[tuple[str, tuple[str, ...], int, int, int, int], int] = {}
_MAX_MARKS = 4096


class LabelCounter(Protocol):
    """What labels a stream (``timeline.numbering.Labeler``: the store sits below the
    timeline): ``issued`` labels so far, and ``label`` issuing the next one, if any."""

    issued: int

    def label(self, message: Message) -> str | None:
        """The next label for ``message``, or None when it gets none."""
        ...


@dataclass(slots=True)
class Fetch:
    """How a request was served: ``mode`` is ``tail``, ``full`` or ``empty``."""

    labelled: Iterator[Labelled]
    mode: str
    missing: list[str]

    @property
    def messages(self) -> Iterator[Message]:
        """The messages without their labels."""
        return (m for m, _ in self.labelled)


def existing_files(row: SessionRow) -> tuple[list[Path], list[int], list[str]]:
    """The chain files that exist and may be read, their positions in the chain, and the
    others (missing, or hook-registered and refused now: see `refusals`)."""
    present: list[Path] = []
    positions: list[int] = []
    missing: list[str] = []
    for f in row.files:
        p = Path(f.path)
        if read_refusal(f.path, row.agent, f.source) is not None:
            missing.append(f.path)
        elif p.is_file() or (p.is_dir() and is_container(row.agent)):
            present.append(p)
            positions.append(f.position)
        else:
            missing.append(f.path)
    return present, positions, missing


def refusals(row: SessionRow) -> list[str]:
    """``path: reason`` for each chain file that may not be read now."""
    found = []
    for f in row.files:
        why = read_refusal(f.path, row.agent, f.source)
        if why is not None:
            found.append(f"{f.path}: {why}")
    return found


def no_readable_file(row: SessionRow) -> SourceError:
    """The error for a session none of whose chain files can be read."""
    refused = refusals(row)
    if refused:
        return SourceError(row.id, f"no transcript file of this session may be read ({refused[0]})")
    return SourceError(row.id, "no transcript file of this session exists")


def _reader(agent: str) -> Reader | None:
    return next((r for r in readers() if r.name == agent), None)


def _renumber(messages: Iterator[Message], positions: list[int]) -> Iterator[Message]:
    """Give each message the chain position of its file (missing files leave gaps)."""
    if positions == list(range(len(positions))):
        yield from messages
        return
    for m in messages:
        m.file_index = positions[m.file_index]
        yield m


def _starts(
    store: Store, reader: TailReader, files: list[Path], since: datetime
) -> list[Checkpoint | None] | None:
    """Where each file's tail starts (None: skip the file), or None: read the chain whole."""
    cutoff = since.timestamp()
    starts: list[Checkpoint | None] = []
    for path in files:
        state = update_index(store.conn, path, reader)
        if state is None:
            return None
        if state.max_ts is not None and state.max_ts <= cutoff:
            starts.append(None)  # nothing newer in this file (a line being written waits)
        else:
            starts.append(tail_start(store.conn, path, cutoff) or Checkpoint(0, 0))
    if all(s is not None and s.offset == 0 for s in starts):
        return None  # the tail is the whole chain
    return starts


def _labels_before(
    row: SessionRow, files: list[Path], starts: list[Checkpoint | None], labeler: LabelCounter
) -> bool:
    """Set ``labeler.issued`` to the labels the full read issues before the tail; False
    when the tail is not one stretch to the chain's end (then read the chain whole)."""
    first = next((i for i, s in enumerate(starts) if s is not None), None)
    if first is None:
        return True  # no file has anything newer: the tail is empty, nothing to count
    start = starts[first]
    if start is None or any(s is None for s in starts[first:]):
        return False
    try:
        st = os.stat(files[first])
    except OSError:
        return False
    chain = tuple(map(str, files[: first + 1]))
    key = (row.id, chain, st.st_dev, st.st_ino, start.offset, start.lines_before)
    known = LABEL_MARKS.get(key)
    if known is None:
        # Messages keep their file's place in ``files`` and their line (``entry_index``)
        # until _renumber: the tail starts at the first one at or after the checkpoint.
        at = (first, start.lines_before + 1)
        labeler.issued = 0
        # Quiet: the read that follows reports what this one would.
        for m in iter_messages(files, WarningSink(), row.agent):
            if (m.file_index, m.entry_index) >= at:
                break
            labeler.label(m)
        if len(LABEL_MARKS) >= _MAX_MARKS:
            LABEL_MARKS.clear()
        LABEL_MARKS[key] = known = labeler.issued
    labeler.issued = known
    return True


def session_messages(
    store: Store,
    row: SessionRow,
    sink: WarningSink,
    *,
    since: datetime | None = None,
    include_tools: bool = False,
    include_thinking: bool = False,
    raw: bool = False,
    labeler: LabelCounter | None = None,
) -> Fetch:
    """Plan and start reading ``row``'s messages (raises ``SourceError`` when none is readable).

    Planning (and the checkpoint index update) happens now; messages are read lazily.
    Every string of every message is redacted on the way out unless ``raw`` is asked for.
    ``labeler`` labels every message of the chain in order, before the filters, so each
    message carries the label a restoration cites (a tail read starts it at the count of
    labels before the tail).
    """
    files, positions, missing = existing_files(row)
    if not files:
        raise no_readable_file(row)
    stream: Iterator[Message] | None = None
    mode = "full"
    reader = _reader(row.agent)
    if since is not None and isinstance(reader, TailReader):
        starts = _starts(store, reader, files, since)
        if starts is not None and (labeler is None or _labels_before(row, files, starts, labeler)):
            stream = reader.read_tail(files, starts, sink)
        mode = "tail" if stream is not None else "full"
    if stream is None:
        if labeler is not None:
            labeler.issued = 0
        if reader is not None and is_container_reader(reader):
            # One database holds many sessions: ask for this one by id.
            stream = iter(unique_ids(reader.read(files, sink, session=row.id)).messages())
        else:
            stream = iter_messages(files, sink, row.agent if reader is not None else None)
    keep = message_filter(since, include_tools, include_thinking)
    renumbered = _renumber(stream, positions)
    pairs: Iterator[Labelled] = (
        ((m, labeler.label(m)) for m in renumbered)
        if labeler is not None
        else ((m, None) for m in renumbered)
    )
    filtered = (pair for pair in pairs if keep(pair[0]))
    return Fetch(filtered if raw else _redacted(filtered), mode, missing)


def _redacted(pairs: Iterator[Labelled]) -> Iterator[Labelled]:
    redactor = Redactor()
    for m, lab in pairs:
        yield redact_message(m, redactor.redact), lab
