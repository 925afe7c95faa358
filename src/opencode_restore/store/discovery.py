"""``sessions scan``: find sessions where each agent writes them and register them.

Each format's reader knows its agent's places and file patterns (``sources/<format>/
discover.py``); this module only walks them, caches what it saw, and registers.
Default locations (``--root DIR`` replaces them; the same patterns are then searched
recursively under DIR):

==============  ===============================================================
claude-code     ``~/.claude/projects/<encoded-cwd>/<session>.jsonl`` (sub-agent
                files skipped: under ``<session>/subagents/``, ``agent-*.jsonl``
                or a first entry marked ``isSidechain``)
codex           ``$CODEX_HOME`` or ``~/.codex``: ``sessions/**/rollout-*.jsonl`` and
                ``archived_sessions/**/rollout-*.jsonl``
gemini          ``~/.gemini/tmp/<project>/chats/session-*.json`` / ``.jsonl``
opencode        ``~/.local/share/opencode``: ``opencode.db`` and the ``storage/`` tree
                (one entry per top-level session; sub-agent sessions stay inside)
pi              ``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``
==============  ===============================================================

A file is registered only when format detection agrees it belongs to the agent; a
candidate that is no log of any format (binary, empty, truncated to nothing) is
reported once and skipped. Session ids are the ones inside the files (a Claude Code
``sessionId``, a Codex ``session_meta`` id), the file name only when there is none.

Files of one session (a Codex thread resumed into a new rollout, a Gemini legacy
``.json`` continued as ``.jsonl``) join one chain, oldest first. So do Claude Code
files of one folder that share a ``slug``: ``/clear`` (or "clear context and run the
plan") starts a new ``sessionId`` that keeps the slug, and the chain takes the id of
its oldest file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..diagnostics import WarningSink
from ..errors import SourceError
from ..sources import detect, get_reader, is_container
from ..sources.base import ContainerReader, Found, Reader, found_order, merge_slugs
from .db import iso_utc, write
from .store import Store

#: The agents a scan looks for by default (the formats with places of their own).
AGENTS = ("claude-code", "codex", "gemini", "opencode", "pi")


_CACHE_COLUMNS = (
    "path, size, mtime_ns, agent, session_id, registered_id, cwd, title, started, updated, slug"
)


def _iso(ts: datetime | None) -> str | None:
    return iso_utc(ts) if ts is not None else None


def _from_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


class ScanCache:
    """What earlier scans saw of each candidate file, so unchanged files are not read again.

    A file is unchanged when its size and mtime (nanoseconds) are those seen last time.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._known: dict[str, tuple[Any, ...]] = {
            row[0]: row for row in store.conn.execute(f"SELECT {_CACHE_COLUMNS} FROM scanned_files")
        }
        self._fresh: dict[str, tuple[Any, ...]] = {}

    def lookup(self, path: Path) -> tuple[bool, Found | None, os.stat_result | None]:
        """``(hit, found, stat)``: on a hit ``found`` is the cached session (None: no session)."""
        try:
            st = path.stat()
        except OSError:
            return False, None, None
        row = self._known.get(str(path))
        if row is None or row[1] != st.st_size or row[2] != st.st_mtime_ns:
            return False, None, st
        if row[3] is None:
            return True, None, st
        found = Found(
            row[3], row[4], path, row[6], row[7], _from_iso(row[8]), _from_iso(row[9]), row[10]
        )
        found.registered_id = row[5]
        return True, found, st

    def note(self, path: Path, st: os.stat_result, found: Found | None) -> None:
        """Remember what ``path`` is (``found`` None: no session file) as of ``st``."""
        self._fresh[str(path)] = (
            str(path),
            st.st_size,
            st.st_mtime_ns,
            found.agent if found else None,
            found.session_id if found else None,
            None,
            found.cwd if found else None,
            found.title if found else None,
            _iso(found.started) if found else None,
            _iso(found.updated) if found else None,
            found.slug if found else None,
        )

    def save(self, registered: dict[str, str]) -> None:
        """Write the fresh entries; ``registered`` maps a path to the id it was stored under."""
        rows = []
        for key, row in self._fresh.items():
            rows.append((*row[:5], registered.get(key, row[4]), *row[6:]))
        for key, sid in registered.items():
            if key not in self._fresh and key in self._known:
                rows.append((*self._known[key][:5], sid, *self._known[key][6:]))
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            write(
                self.store.conn,
                lambda c: c.executemany(
                    f"INSERT OR REPLACE INTO scanned_files ({_CACHE_COLUMNS}) VALUES ({marks})",
                    rows,
                ),
            )


@dataclass(slots=True)
class ScanResult:
    """What a scan registered: sessions seen and chain files newly appended."""

    found: list[Found]
    appended: int


def default_roots(agent: str, home: Path | None = None) -> list[Path]:
    """Where ``agent`` writes sessions by default."""
    if agent not in AGENTS:
        raise SourceError(agent, f"unknown agent; choose one of: {', '.join(AGENTS)}")
    return get_reader(agent).default_roots(home or Path(os.path.expanduser("~")))


class _Detector:
    """Format detection of candidate files, once per file; reports each non-log once."""

    def __init__(self, sink: WarningSink) -> None:
        self.sink = sink
        self._seen: dict[Path, str | None] = {}

    def agent_of(self, path: Path) -> str | None:
        if path not in self._seen:
            try:
                self._seen[path] = detect(path).name
            except SourceError as exc:
                self._seen[path] = None
                # The --agent hint of `restore` means nothing to a scan.
                reason = exc.reason.partition("; force one with")[0]
                self.sink.warn(path, 0, f"found by a scan, but {reason}; skipped")
        return self._seen[path]


def _containers(reader: Reader, root: Path, sink: WarningSink) -> list[Found]:
    """The sessions of every container input under ``root`` (opencode databases)."""
    found: list[Found] = []
    for src in reader.session_files(root):
        try:
            found.extend(reader.list_sessions(src, sink))
        except (SourceError, OSError) as exc:
            sink.warn(src, 0, f"cannot list {reader.name} sessions: {exc}")
    return found


def find_sessions(
    agents: Sequence[str],
    roots: Sequence[Path] | None,
    sink: WarningSink,
    cache: ScanCache | None = None,
) -> list[Found]:
    """Session files of ``agents`` under ``roots`` (default: each agent's own locations).

    Sub-agent files are left out, Claude Code files continued under one slug take the
    id of the oldest of them. With ``cache``, files unchanged since an earlier scan are
    not read (their ``registered_id`` is set).
    """
    found: list[Found] = []
    detector = _Detector(sink)
    for agent in agents:
        reader = get_reader(agent)
        for root in roots if roots is not None else default_roots(agent):
            if not root.is_dir():
                continue
            if isinstance(reader, ContainerReader):
                found.extend(_containers(reader, root, sink))
                continue
            for path in reader.session_files(root.resolve()):
                hit, item, st = cache.lookup(path) if cache is not None else (False, None, None)
                if not hit:
                    item = reader.describe(path) if detector.agent_of(path) == agent else None
                    if item is not None and item.sidechain:
                        item = None
                    if cache is not None and st is not None:
                        cache.note(path, st, item)
                if item is not None:
                    found.append(item)
    return merge_slugs(found)


def scan(
    store: Store,
    *,
    agent: str | None = None,
    root: Path | None = None,
    sink: WarningSink | None = None,
) -> ScanResult:
    """Find sessions (one agent or all) and register them with their chains."""
    sink = sink or WarningSink()
    agents = [agent] if agent else list(AGENTS)
    for name in agents:
        if name not in AGENTS:
            raise SourceError(name, f"unknown agent; choose one of: {', '.join(AGENTS)}")
    cache = ScanCache(store)
    found = find_sessions(agents, [root] if root is not None else None, sink, cache)
    appended = 0
    registered: dict[str, str] = {}
    for item in sorted(found, key=found_order):
        if item.registered_id == item.session_id:
            continue  # unchanged since the scan that registered it
        if not is_container(item.agent):
            registered[str(item.path)] = item.session_id
        appended += store.register(
            item.session_id,
            item.agent,
            str(item.path.resolve()),
            cwd=item.cwd,
            title=item.title,
            source="scan",
            created_at=iso_utc(first) if (first := item.started or item.updated) else None,
            updated_at=iso_utc(item.updated) if item.updated else None,
        )
    cache.save(registered)
    return ScanResult(found, appended)
