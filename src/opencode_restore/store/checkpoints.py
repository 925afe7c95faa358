"""Per-file checkpoint index (byte offset -> newest timestamp before it) for ``since`` reads.

A ``since`` request wants only messages newer than a time. Reading a 100,000-line
transcript to drop all but the last ten is wasted work, so each transcript gets an
index of checkpoints: a byte offset where a line starts, its line number, and the
newest timestamp of any line before it. Every line before a checkpoint whose
``max_ts_before <= since`` is at most ``since`` old, so the reader can seek there and
read only the tail. The index itself grows incrementally: a grown file is indexed
from where the last update stopped (only the new bytes are read); a file that
shrank or was replaced (other inode) is indexed again from the start.

Tail reads apply to append-only JSONL formats whose lines convert one at a time, the
readers that are a ``sources.base.TailReader``:

* ``claude-code``: supported (see ``sources.claude_code.tail``). Checkpoints sit at conversation
  lines (never progress or side-chain lines); a tail that shows a rewind or a new
  root falls back to the full read.
* ``codex``: full read. A rollout line is read by a de-duplicating state machine that
  pairs event copies with response items and carries the header and compaction
  replacement history forward; starting it mid-file would change its output.
* ``gemini``: full read. JSONL records are upserts by id with ``$set`` / ``$rewindTo``
  operations that can rewrite earlier messages; legacy files are one JSON document.
* ``pi``: full read. The live branch comes from the ``parentId`` tree of the whole file.
* ``opencode``, ``inspect``, ``terminal``: full read (SQLite / JSON trees, whole-document
  JSON, screen replay): there is no byte offset to resume from.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..sources.base import Checkpoint, TailReader, is_complete_line
from .db import write

#: At least this many bytes between two checkpoints.
CHECKPOINT_EVERY = 32 * 1024


@dataclass(slots=True)
class FileState:
    """What the index knows about a file: how much is indexed and its newest timestamp."""

    indexed_bytes: int
    indexed_lines: int
    max_ts: float | None


def _stored(conn: sqlite3.Connection, path: str) -> tuple[int, int, int, int, float | None, int]:
    row = conn.execute(
        "SELECT device, inode, indexed_bytes, indexed_lines, max_ts, last_checkpoint"
        " FROM file_index WHERE path = ?",
        (path,),
    ).fetchone()
    return row if row is not None else (-1, -1, 0, 0, None, -1)


def update_index(conn: sqlite3.Connection, path: Path, reader: TailReader) -> FileState | None:
    """Bring the index of ``path`` up to date, reading only bytes not yet indexed.

    ``reader`` tells each line's timestamp and whether a tail may start there. Returns
    None when the file cannot be read. Only complete lines are indexed: a line still
    being written is indexed by a later update.
    """
    key = str(path)
    try:
        st = os.stat(path)
    except OSError:
        return None
    device, inode, done, lines, max_ts, last_cp = _stored(conn, key)
    if (device, inode) != (st.st_dev, st.st_ino) or st.st_size < done:
        done, lines, max_ts, last_cp = 0, 0, None, -1
        fresh = True
    else:
        fresh = False
        if st.st_size == done:
            return FileState(done, lines, max_ts)
    start = done
    found: list[tuple[int, int, float | None]] = []
    try:
        with path.open("rb") as fh:
            fh.seek(done)
            for raw in fh:
                if not raw.endswith(b"\n") and not is_complete_line(raw):
                    break  # still being written: a later update indexes it
                lines += 1
                ts, can_start = reader.line_facts(raw)
                if (last_cp < 0 and done == 0) or (
                    can_start and done - last_cp >= CHECKPOINT_EVERY
                ):
                    found.append((done, lines, max_ts))
                    last_cp = done
                if ts is not None and (max_ts is None or ts > max_ts):
                    max_ts = ts
                done += len(raw)
    except OSError:
        return None

    if done == start and not fresh:
        return FileState(done, lines, max_ts)

    def tx(c: sqlite3.Connection) -> None:
        if not fresh and _stored(c, key)[2] != start:
            return  # another request indexed this file meanwhile; its rows are as good
        if fresh:
            c.execute("DELETE FROM checkpoints WHERE path = ?", (key,))
        # An upsert, not INSERT OR REPLACE: a replaced row would cascade to its checkpoints.
        c.execute(
            "INSERT INTO file_index (path, device, inode, indexed_bytes, indexed_lines, max_ts,"
            " last_checkpoint) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET"
            " device = excluded.device, inode = excluded.inode,"
            " indexed_bytes = excluded.indexed_bytes, indexed_lines = excluded.indexed_lines,"
            " max_ts = excluded.max_ts, last_checkpoint = excluded.last_checkpoint",
            (key, st.st_dev, st.st_ino, done, lines, max_ts, last_cp),
        )
        c.executemany(
            "INSERT OR REPLACE INTO checkpoints (path, offset, line, max_ts_before)"
            " VALUES (?, ?, ?, ?)",
            [(key, off, line, before) for off, line, before in found],
        )

    write(conn, tx)
    return FileState(done, lines, max_ts)


def tail_start(conn: sqlite3.Connection, path: Path, since: float) -> Checkpoint | None:
    """The last checkpoint of ``path`` with nothing newer than ``since`` before it.

    Returns None when the index has no checkpoint for the file (read it whole).
    """
    row = conn.execute(
        "SELECT offset, line FROM checkpoints WHERE path = ?"
        " AND (max_ts_before IS NULL OR max_ts_before <= ?) ORDER BY offset DESC LIMIT 1",
        (str(path), since),
    ).fetchone()
    return None if row is None else Checkpoint(row[0], row[1] - 1)
