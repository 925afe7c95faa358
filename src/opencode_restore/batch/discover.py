"""Find the sessions named by ``batch`` arguments: files, globs and directories.

* A file is detected like ``restore`` does; an opencode input (database, storage
  tree, export) yields one item per top-level session, an Inspect eval log one per
  sample, any other log one item.
* A glob (``'logs/**/*.jsonl'``, quoted so the shell leaves it alone) is expanded
  recursively and each match treated as a file or directory.
* A directory is searched like ``sessions scan --root DIR`` (each agent's own file
  patterns, detection must agree, Claude Code sub-agent files left to their parent),
  plus any other ``.json`` / ``.jsonl`` / ``.eval`` file a reader recognizes
  (opencode exports and event streams, Inspect logs).

With ``since``, only sessions active after it are kept, judged as ``nightly`` judges a
session it has not registered yet: the newest of its recorded update (or start) time and
its files' mtimes (a database or storage tree shared by many sessions has only the
session's own update time). A session with neither is kept, as is an input that failed.

A session is named by the id inside its file (``sessionId``, ``session_meta``, the
pi header; the file stem only when there is none) however it was given, so a file
named directly, matched by a glob and found in a directory is one item with one key,
and a re-run skips it whichever way it is named. Files of one session (same agent and
session id, e.g. a resumed Codex thread, Claude Code files continued under one slug)
join one chain, oldest first, as in the store; a file named twice is read once.

A file named on the command line that cannot be used (missing, empty, unknown format)
becomes an item carrying its error: the batch records it as failed. A folder or a
pattern that turns up no session holds nothing to restore, like an empty folder: it is
noted in `Leftovers` (the command makes it a warning, or a usage error when no input
holds a session), so a pattern for an agent not installed here fails nothing. A file a
directory scan or a pattern turned up that is not a log is a warning, or not even that
for a directory's other ``.json`` files; either way it is counted in `Leftovers`.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..diagnostics import WarningSink
from ..errors import SourceError
from ..model import ReadWarning
from ..sources import detect, get_reader, is_container, reader_names
from ..sources.base import ContainerReader, Found, Reader, found_order, merge_slugs
from ..sources.discover import mtime
from ..store.db import iso_utc
from ..store.discovery import AGENTS, find_sessions
from .items import BatchItem, FileHasher, finalize

_GLOB_CHARS = frozenset("*?[")
_EXTRA_SUFFIXES = (".json", ".jsonl", ".eval")
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: The agent of an input that could not even be detected.
UNKNOWN_AGENT = "unknown"


@dataclass(slots=True)
class Leftovers:
    """What the arguments turned up that is no session to restore."""

    #: Files a scan or a pattern turned up that hold no log a reader recognizes (or
    #: could not be read), each once.
    not_logs: list[Path] = field(default_factory=list)
    #: Named folders and patterns that turned up no session, each with why.
    empty: list[tuple[str, str]] = field(default_factory=list)
    _noted: set[Path] = field(default_factory=set, repr=False)

    def note(self, path: Path) -> None:
        """Note ``path`` as no log (once, however often it is turned up)."""
        if path not in self._noted:
            self._noted.add(path)
            self.not_logs.append(path)


@dataclass(slots=True)
class _Hit:
    """An item found, with what its file says of itself (file chains only)."""

    item: BatchItem
    found: Found | None = None


def discover(
    args: Sequence[str],
    sink: WarningSink,
    agent: str | None = None,
    hasher: FileHasher | None = None,
    since: datetime | None = None,
    leftovers: Leftovers | None = None,
) -> list[BatchItem]:
    """The sessions named by ``args``, each with a unique key and its content hash.

    A named file that cannot be read is an item with ``error`` set; a scanned file that
    is no log is reported through ``sink``. Files that are no log and folders or patterns
    that hold no session are noted in ``leftovers``. With ``since``, sessions last active
    at or before it are left out (see the module docstring).
    """
    hits: list[_Hit] = []
    left = leftovers if leftovers is not None else Leftovers()
    once = _once_per_file(sink, left)
    for arg in args:
        hits.extend(_from_arg(arg, once, agent, left))
    # Files continued under one slug may come from different arguments.
    merge_slugs([h.found for h in hits if h.found is not None])
    for hit in hits:
        if hit.found is not None:
            hit.item.session_id = hit.found.session_id
    items = _merge(hits)
    if since is not None:
        items = [i for i in items if i.error or i.updated is None or i.updated > since]
    return finalize(items, hasher)


def _once_per_file(sink: WarningSink, leftovers: Leftovers) -> WarningSink:
    """``sink``, but a file skipped as a whole is reported once (a directory and a
    pattern may both turn it up) and noted in ``leftovers``."""
    skipped: set[str] = set()

    def report(w: ReadWarning) -> None:
        if w.line == 0 and w.message.endswith("skipped"):
            if w.path in skipped:
                return
            skipped.add(w.path)
            leftovers.note(Path(w.path))
        sink.warn(w.path, w.line, w.message)

    return WarningSink(report=report)


def _from_arg(arg: str, sink: WarningSink, agent: str | None, left: Leftovers) -> list[_Hit]:
    path = Path(os.path.expanduser(arg))
    if path.exists():
        return _from_match(path, sink, agent, left, named=True)
    if _GLOB_CHARS & set(arg):
        matches = sorted(Path(m) for m in glob.glob(os.path.expanduser(arg), recursive=True))
        hits = [h for m in matches for h in _from_match(m, sink, agent, left, named=False)]
        if not hits:
            why = "matches no session" if matches else "matches nothing"
            left.empty.append((arg, f"the pattern {why}"))
        return hits
    return [_failed(path, "no such file or directory")]


def _from_match(
    path: Path, sink: WarningSink, agent: str | None, left: Leftovers, *, named: bool
) -> list[_Hit]:
    if path.is_dir() and not _is_container_dir(path):
        hits = _from_dir(path, sink, left)
        if named and not hits:
            left.empty.append((str(path), "no sessions found in this directory"))
        return hits
    return _from_file(path, sink, agent, left, named=named)


def _failed(path: Path, reason: str) -> _Hit:
    item = BatchItem(path.stem or "input", UNKNOWN_AGENT, [path])
    item.error = f"{path}: {reason}"
    return _Hit(item)


def _is_container_dir(path: Path) -> bool:
    """A directory that is itself one input holding sessions (opencode's storage tree)."""
    try:
        return isinstance(detect(path), ContainerReader)
    except SourceError:
        return False


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def _from_file(
    path: Path,
    sink: WarningSink,
    agent: str | None,
    left: Leftovers,
    *,
    named: bool,
    quiet: bool = False,
) -> list[_Hit]:
    """``named``: given on the command line (its problems fail it), else found by a scan.

    ``quiet``: a file that is no log is only noted in ``left`` (any ``.json`` of a
    directory is tried; its ``.jsonl`` files were reported by the scan already).
    """
    try:
        reader = get_reader(agent) if agent else detect(path)
    except SourceError as exc:
        if named:
            return [_failed(path, exc.reason)]
        if quiet:
            left.note(path)
        else:
            reason = exc.reason.partition("; force one with")[0]
            sink.warn(path, 0, f"matched by a pattern, but {reason}; skipped")
        return []
    if isinstance(reader, ContainerReader):
        return _container(reader, path, sink, named=named)
    listed = reader.list_sessions(path, sink)
    found = listed[0] if listed else None
    if found is not None and found.sidechain:
        if not named:
            return []  # a sub-agent transcript is restored with its parent session
        found = None  # named on its own: restored on its own, named by its file
    sid = found.session_id if found is not None else path.stem
    item = BatchItem(sid, reader.name, [path], updated=_latest(found, mtime(path)))
    return [_Hit(item, found)]


def _container(reader: Reader, path: Path, sink: WarningSink, *, named: bool) -> list[_Hit]:
    """One item per session of an input holding several, each named by its id."""
    try:
        listed = reader.list_sessions(path, sink)
    except (SourceError, OSError) as exc:
        if named:
            return [_failed(path, f"cannot list {reader.name} sessions: {exc}")]
        sink.warn(path, 0, f"cannot list {reader.name} sessions: {exc}")
        return []
    return [_found_hit(f) for f in listed]


def _from_dir(root: Path, sink: WarningSink, left: Leftovers) -> list[_Hit]:
    found = sorted(find_sessions(AGENTS, [root], sink), key=found_order)
    hits = [_found_hit(f) for f in found]
    claimed = {f.path.resolve() for f in found}
    containers = [f.path.resolve() for f in found if f.path.is_dir()]
    for path in _extra_files(root, claimed, containers):
        hits.extend(_from_file(path, sink, None, left, named=False, quiet=True))
    return hits


def _found_hit(f: Found) -> _Hit:
    if is_container(f.agent):
        # A database or storage tree holds many sessions and changes whenever any of
        # them does: the session's own "updated" time says whether this one changed. A
        # single export, event stream or eval log is hashed by its bytes.
        shared = f.path.is_dir() or _is_sqlite(f.path)
        stamp = iso_utc(f.updated) if shared and f.updated is not None else ""
        changed = None if shared else mtime(f.path)
        item = BatchItem(f.session_id, f.agent, [f.path], selector=f.session_id)
        item.fingerprint = stamp
        item.updated = _latest(f, changed)
        return _Hit(item)
    return _Hit(BatchItem(f.session_id, f.agent, [f.path], updated=_latest(f, mtime(f.path))), f)


def _latest(found: Found | None, changed: datetime | None) -> datetime | None:
    """The newer of what a session's file says of its last activity and ``changed``."""
    return _latest_of((found.updated or found.started) if found is not None else None, changed)


def _latest_of(*times: datetime | None) -> datetime | None:
    return max((t for t in times if t is not None), default=None)


def _extra_files(root: Path, claimed: set[Path], containers: list[Path]) -> Iterable[Path]:
    for path in sorted(root.rglob("*")):
        if path.suffix not in _EXTRA_SUFFIXES or not path.is_file():
            continue
        # Claude Code sub-agent transcripts belong to their parent session.
        if "subagents" in path.parts or path.name.startswith("agent-"):
            continue
        real = path.resolve()
        if real in claimed or any(real.is_relative_to(c) for c in containers):
            continue
        yield path


def _ids_span_inputs(agent: str) -> bool:
    reader = get_reader(agent) if agent in reader_names() else None
    return not isinstance(reader, ContainerReader) or reader.ids_span_inputs


def _merge(hits: list[_Hit]) -> list[BatchItem]:
    """One item per (agent, session, selector): chains joined oldest first, files once."""
    merged: dict[tuple[str, str, str], BatchItem] = {}
    when: dict[Path, tuple[str, str]] = {}
    for hit in hits:
        item = hit.item
        if hit.found is not None:
            when[item.files[0].resolve()] = found_order(hit.found)
        # A container's session is one item wherever it was found when its ids span inputs
        # (opencode's database and storage tree), else one per file (eval logs reuse sample
        # ids); inputs that failed are apart whatever their names.
        apart = item.error is not None or not _ids_span_inputs(item.agent)
        where = str(item.files[0].resolve()) if apart else ""
        key = (item.agent, item.session_id, where)
        first = merged.get(key)
        if first is None:
            merged[key] = item
        elif item.selector is None:
            known = {p.resolve() for p in first.files}
            first.files.extend(p for p in item.files if p.resolve() not in known)
            first.updated = _latest_of(first.updated, item.updated)
    for item in merged.values():
        if len(item.files) > 1:
            item.files.sort(key=lambda p: when.get(p.resolve(), ("", str(p))))
    return list(merged.values())
