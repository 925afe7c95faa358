"""Batch work items: one session to restore, where it lives, and what its content hashes to.

An item names the files of one session's chain and, for inputs that hold many
sessions (an opencode database or storage tree, an Inspect eval log), which of
them it is. ``key`` is the item's stable name in a batch (the output file stem and
the manifest key); ``content_hash`` changes whenever the session's input changes,
which is how a re-run tells finished work from changed work.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..diagnostics import WarningSink
from ..errors import SourceError
from ..model import Session
from ..sources import open_session

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 120
_CHUNK = 1 << 20


@dataclass(slots=True)
class BatchItem:
    """One session of a batch."""

    session_id: str
    agent: str
    files: list[Path]
    #: The session inside a container input (opencode, inspect); None for file chains.
    selector: str | None = None
    #: Extra hash input for containers, e.g. the session's own "updated" time.
    fingerprint: str = ""
    key: str = ""
    content_hash: str = ""
    #: Set when the item could not even be hashed; the batch records it as failed.
    error: str | None = None
    #: When the session was last active, as discovery saw it cheaply (None: unknown).
    updated: datetime | None = None

    def load(self, sink: WarningSink) -> Session:
        """Read the session (raises ``SourceError`` when it cannot be read).

        A session without a single message (a truncated or empty log) raises too:
        restoring nothing is no success.
        """
        session = open_session(self.files, sink, self.agent, session=self.selector)
        if not session.messages():
            why = f" ({session.warnings[0]})" if session.warnings else ""
            raise SourceError(str(self.files[-1]), f"no messages could be read{why}")
        return session


def safe_name(text: str) -> str:
    """A file-name stem made of ``[A-Za-z0-9._-]`` only (never empty, never a dot name)."""
    name = _UNSAFE.sub("_", text).strip("._-")[:_MAX_NAME]
    return name or "session"


class FileHasher:
    """SHA-256 of file contents, each file read once per run (containers are shared)."""

    def __init__(self) -> None:
        self._done: dict[Path, str] = {}

    def file(self, path: Path) -> str:
        """The hex digest of ``path`` (a directory hashes its file names, sizes and mtimes)."""
        path = path.resolve()
        if path not in self._done:
            self._done[path] = _hash_dir(path) if path.is_dir() else _hash_file(path)
        return self._done[path]

    def item(self, item: BatchItem) -> str:
        """The content hash of one item: agent, session, container fingerprint, file contents."""
        h = hashlib.sha256()
        h.update(f"{item.agent}\0{item.session_id}\0{item.fingerprint}\0".encode())
        # A container holds other sessions too: its own fingerprint (the session's
        # updated time) says whether this session changed, not the whole file's bytes.
        if not (item.selector is not None and item.fingerprint):
            for path in item.files:
                h.update(self.file(path).encode())
        return h.hexdigest()


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _hash_dir(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def finalize(items: Iterable[BatchItem], hasher: FileHasher | None = None) -> list[BatchItem]:
    """Give every item a unique ``key`` and its ``content_hash``.

    An item whose files cannot be read keeps an empty hash and gets ``error`` set, so
    the batch reports it as failed without stopping the others.
    """
    hasher = hasher or FileHasher()
    out: list[BatchItem] = []
    taken: set[str] = set()
    for item in items:
        try:
            if item.error is None:
                item.content_hash = hasher.item(item)
        except OSError as exc:
            item.error = f"{item.files[0]}: cannot read: {exc.strerror or exc}"
        base = safe_name(item.session_id)
        key = base
        if key in taken:
            # Same id from another source (a copy, another agent): keep both, named apart.
            digest = hashlib.sha256(
                "\0".join([item.agent, *map(str, item.files)]).encode()
            ).hexdigest()
            key = f"{base}-{digest[:8]}"
        taken.add(key)
        item.key = key
        out.append(item)
    return out
