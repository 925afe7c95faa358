"""Where journals live on disk, and the hashes that tell what changed.

One JSON file per session, ``<data_dir>/timelines/<safe key>.json`` with the key made of
the session id and its file (`identity.journal_key`; the directory keeps the name it had
before the saved restore state was called a journal, so saved journals still resume), plus
``<key>.journal``: the changes made since that snapshot, one line each (the suffix is kept
for the same reason). A snapshot write goes to a temporary file in the same directory, is
fsynced, renamed over the old file and the directory is fsynced, so a reader (or a run
killed with SIGKILL at any point) sees either the previous complete file or the new
complete file, never a torn one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ...atomic import SESSION_FILE_MODE, atomic_write, buffered, remove_stale_temporaries
from ...dirs import make_private_dirs
from ...model import Message, Turn

log = logging.getLogger(__name__)

#: The journals' directory under the data dir (its name predates "journal"; kept on disk).
JOURNAL_DIR = "timelines"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_CHUNK = 1 << 20


def safe_name(session_id: str) -> str:
    """A file name for ``session_id``: readable, and distinct even when characters were replaced."""
    clean = _UNSAFE.sub("_", session_id).strip("._")[:100] or "session"
    if clean == session_id:
        return clean
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:10]
    return f"{clean}-{digest}"


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A log file as it was when the journal was saved."""

    path: str
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceFile:
        return cls(str(data["path"]), int(data["size"]), str(data["sha256"]))


def _digest(path: Path, limit: int | None = None) -> tuple[int, str]:
    """(bytes read, sha256) of the file, or of its first ``limit`` bytes; streamed."""
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while limit is None or size < limit:
            want = _CHUNK if limit is None else min(_CHUNK, limit - size)
            chunk = fh.read(want)
            if not chunk:
                break
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def source_file(path: str) -> SourceFile | None:
    """The size and content hash of ``path`` (None when it cannot be read, e.g. a directory)."""
    try:
        size, digest = _digest(Path(path))
    except OSError:
        return None
    return SourceFile(path, size, digest)


def file_change(saved: SourceFile) -> str:
    """How ``saved`` changed since: ``same``, ``grew`` (old bytes kept), ``changed`` or ``gone``."""
    try:
        size, digest = _digest(Path(saved.path), saved.size)
        total = Path(saved.path).stat().st_size
    except OSError:
        return "gone"
    if size != saved.size or digest != saved.sha256:
        return "changed"
    return "same" if total == saved.size else "grew"


def _transient(value: Any) -> Any:
    """``value`` with every non-ASCII string replaced by a copy that dies with the hash.

    Encoding a non-ASCII ``str`` to UTF-8 (as orjson does) leaves the UTF-8 bytes cached
    inside the string object for its lifetime: hashing every turn up front doubled the
    memory of the whole log's text. ASCII strings are their own UTF-8 and cache nothing.
    """
    if isinstance(value, str):
        return (
            value
            if value.isascii()
            else value.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
        )
    if isinstance(value, dict):
        return {k: _transient(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_transient(v) for v in value]
    return value


def _message_key(m: Message) -> dict[str, Any]:
    return {
        "id": m.id,
        "role": m.role,
        "type": m.type,
        "text": _transient(m.text),
        # orjson writes a datetime exactly as isoformat() does, 5x faster.
        "ts": m.timestamp,
        "file": m.file_index,
        "entry": m.entry_index,
        "tool": m.tool_name,
        "call": m.tool_call_id,
        "input": _transient(m.tool_input),
        "error": m.is_error,
        "compaction": _transient(m.compaction.summary) if m.compaction else None,
    }


def turn_hash(turn: Turn) -> str:
    """A hash of everything in ``turn`` that reaches a prompt (ids, text, tool calls, times)."""
    h = hashlib.sha256()
    for m in turn.messages:
        h.update(orjson.dumps(_message_key(m), option=orjson.OPT_SORT_KEYS, default=str))
        h.update(b"\n")
    return h.hexdigest()


def chain_hash(*parts: str) -> str:
    """One hash over several strings (stage keys)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\x00")
    return h.hexdigest()


#: Seconds between two fsyncs of a session's change file (`JournalStore.append`).
SYNC_INTERVAL = 1.0


def journal_dir(data_dir: Path) -> Path:
    """The directory of the journals kept under ``data_dir``."""
    return data_dir / JOURNAL_DIR


class JournalStore:
    """The directory of saved journals (`journal_dir`)."""

    #: True when ``save`` and ``append`` only keep data in memory (no I/O to wait for).
    in_memory = False

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # Temporary files of killed runs are looked for once: the look lists the whole
        # directory, which a batch of thousands of sessions must not do per save.
        self._swept = False
        self._synced: dict[str, float] = {}  # session id -> when its change file was fsynced

    def path_for(self, session_id: str) -> Path:
        """The file that holds ``session_id``'s journal snapshot."""
        return self.directory / f"{safe_name(session_id)}.json"

    def load(self, session_id: str) -> dict[str, Any] | None:
        """The saved payload, or None when there is none or it cannot be read.

        A file that does not parse is renamed ``*.corrupt`` (kept for inspection) so the
        next save starts clean; the run then starts from the first turn.
        """
        path = self.path_for(session_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            log.warning("%s: unreadable journal (%s); starting again", path, exc)
            path.replace(path.with_suffix(".corrupt"))
            self.changes_for(session_id).unlink(missing_ok=True)
            return None
        if not isinstance(data, dict):
            return None
        _replay_changes(data, self.changes_for(session_id))
        return data

    def save(self, session_id: str, payload: dict[str, Any]) -> Path:
        """Write ``payload`` atomically and start an empty change file after it.

        Stale temporary files of killed runs are removed.
        """
        path = self.path_for(session_id)
        atomic_write(path, buffered(json_chunks(payload)), mode=SESSION_FILE_MODE)
        # A crash before this unlink leaves lines of the previous generation, which
        # load skips: the snapshot already holds them.
        self.changes_for(session_id).unlink(missing_ok=True)
        if not self._swept:
            self._swept = True
            remove_stale_temporaries(path.parent)
        return path

    def changes_for(self, session_id: str) -> Path:
        """The append-only file of changes made since ``session_id``'s last snapshot."""
        return self.directory / f"{safe_name(session_id)}.journal"

    def append(self, session_id: str, change: dict[str, Any]) -> None:
        """Add one change to the change file: one line, written (and fsynced at most
        once every `SYNC_INTERVAL` seconds).

        ``change`` holds the snapshot ``generation`` it follows, lists to ``append`` to
        the payload (dotted keys reach into nested maps) and values to ``set``. A line
        torn by a crash is ignored on load, with every line after it.
        """
        path = self.changes_for(session_id)
        make_private_dirs(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, SESSION_FILE_MODE)
        try:
            os.write(fd, orjson.dumps(change) + b"\n")
            # A killed process loses no written line (the kernel has it); fsync only
            # guards against a power loss, and one per turn cost a 1,400-turn restore
            # 10 s of waiting. At most one a second: a power cut loses a second of turns,
            # which the next run summarizes again.
            now = time.monotonic()
            if now - self._synced.get(session_id, -SYNC_INTERVAL) >= SYNC_INTERVAL:
                os.fsync(fd)
                self._synced[session_id] = now
        finally:
            os.close(fd)


#: Levels of a snapshot written item by item (the payload, its maps, their lists: the
#: turns, the labels, the state's summaries); deeper values are dumped whole.
_CHUNKED_LEVELS = 3


class Streamed:
    """A list that a snapshot makes item by item while it writes it (``json_chunks``):
    the labels of a long restore are tens of thousands of small dicts, made only for the
    file (bench/scale.py's peak was their last snapshot)."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: Callable[[], Iterator[Any]], length: int) -> None:
        self._items = items
        self._length = length

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Any]:
        return self._items()


def _listed(value: Any) -> list[Any]:
    if isinstance(value, Streamed):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def json_chunks(value: Any, level: int = 0, levels: int = _CHUNKED_LEVELS) -> Iterator[bytes]:
    """``orjson.dumps(value, option=OPT_INDENT_2)`` in pieces, byte for byte.

    A snapshot of a long restore is tens of megabytes of JSON (bench/scale.py: 23 MB at
    a 200 MB log); dumped whole, its bytes sat in memory beside the payload at every
    stage. Here the containers of the first ``levels`` levels are written item by item
    and each item is dumped alone, re-indented to its depth (a raw line break never
    occurs inside a JSON string, so indenting after every one is safe). A ``Streamed``
    list is written as the list it yields.
    """
    if levels == 0 or not isinstance(value, dict | list | tuple | Streamed) or not value:
        data = orjson.dumps(value, default=_listed, option=orjson.OPT_INDENT_2)
        yield data.replace(b"\n", b"\n" + b"  " * level) if level else data
        return
    pad = b"\n" + b"  " * (level + 1)
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    yield b"{" if isinstance(value, dict) else b"["
    for index, (key, item) in enumerate(items):
        yield (b"," if index else b"") + pad
        if key is not None:
            yield orjson.dumps(key) + b": "
        yield from json_chunks(item, level + 1, levels - 1)
    yield b"\n" + b"  " * level + (b"}" if isinstance(value, dict) else b"]")


def _replay_changes(data: dict[str, Any], path: Path) -> None:
    """Apply the changes of the snapshot's generation to ``data``, in order."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return
    generation = data.get("generation")
    for line in raw.splitlines():
        try:
            change = orjson.loads(line)
            if change.get("generation") == generation:
                apply_change(data, change)
        except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
            log.warning("%s: torn or unreadable change; the changes after it are ignored", path)
            return


def apply_change(data: dict[str, Any], change: dict[str, Any]) -> None:
    """Apply one change (see `JournalStore.append`) to a payload in place."""
    for key, items in change.get("append", {}).items():
        *parents, last = key.split(".")
        target = data
        for part in parents:
            target = target[part]
        target[last].extend(items)
    data.update(change.get("set", {}))
