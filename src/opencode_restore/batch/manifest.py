"""The batch manifest: one JSON line per finished session, append-only and fsynced.

Each line is written with a single ``write`` on an ``O_APPEND`` descriptor and
fsynced before the next session is reported finished, so a batch killed at any
point leaves whole lines plus at most one torn last line, which the next run
ignores (with a warning) after starting a fresh line. The last line of a key wins:
a session that failed and later succeeded reads as done.

Output files are replaced atomically (temporary file, fsync, rename, fsync of the
directory), and always before the session's manifest line: a line never names
output that is not there, and a session killed before its line is simply redone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..atomic import fsync_directory
from ..diagnostics import WarningSink
from ..dirs import make_private_dirs

#: The manifest's file name in a run's output folder.
MANIFEST_NAME = "manifest.jsonl"


def read_lines(path: Path, sink: WarningSink) -> Iterator[dict[str, Any]]:
    """The manifest's records in file order; a bad or torn line is reported and skipped."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    with fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                sink.warn(
                    path, number, "unreadable manifest line (a run killed mid-write?); ignored"
                )
                continue
            if isinstance(record, dict) and isinstance(record.get("key"), str):
                yield record
            else:
                sink.warn(path, number, "manifest line without a key; ignored")


class Manifest:
    """``manifest.jsonl`` of one output directory."""

    def __init__(self, path: Path, sink: WarningSink | None = None) -> None:
        self.path = path
        self.latest: dict[str, dict[str, Any]] = {}
        for record in read_lines(path, sink or WarningSink()):
            self.latest[record["key"]] = record
        self._fd: int | None = None
        self._lock = threading.Lock()

    def is_done(self, key: str, content_hash: str, provider: str) -> bool:
        """True when ``key`` finished successfully with this content and provider."""
        last = self.latest.get(key)
        return (
            last is not None
            and last.get("status") == "done"
            and last.get("hash") == content_hash
            and last.get("provider") == provider
        )

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line and fsync it before returning (thread-safe)."""
        line = orjson.dumps(record) + b"\n"
        with self._lock:
            if self._fd is None:
                self._fd = self._open()
            try:
                # One write on an O_APPEND descriptor: other writers' lines never interleave.
                written = os.write(self._fd, line)
                if written != len(line):  # pragma: no cover - regular files write whole
                    raise OSError(f"{self.path}: short write ({written} of {len(line)} bytes)")
                os.fsync(self._fd)
            except OSError as exc:
                if exc.filename is None and exc.errno is not None:
                    # os.write names no file: say which one (a full disk).
                    raise OSError(exc.errno, exc.strerror, str(self.path)) from exc
                raise
            self.latest[record["key"]] = record

    def _open(self) -> int:
        make_private_dirs(self.path.parent)
        created = not self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        size = os.fstat(fd).st_size
        # A torn last line (killed mid-write) must not swallow the next record.
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.write(fd, b"\n")
        if created:
            fsync_directory(self.path.parent)
        return fd

    def close(self) -> None:
        """Close the file (appending again reopens it)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
