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

Files of one session (same agent and session id, e.g. a resumed Codex thread) join
one chain, oldest first, as in the store.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import SourceError
from ..sources import detect, get_reader
from ..sources.base import WarningSink
from ..store.db import iso_utc
from ..store.discovery import AGENTS, Found, find_sessions
from .items import BatchItem, FileHasher, finalize

_GLOB_CHARS = frozenset("*?[")
_EXTRA_SUFFIXES = (".json", ".jsonl", ".eval")
_SQLITE_MAGIC = b"SQLite format 3\x00"


def discover(
    args: Sequence[str],
    sink: WarningSink,
    agent: str | None = None,
    hasher: FileHasher | None = None,
) -> list[BatchItem]:
    """The sessions named by ``args``, each with a unique key and its content hash.

    A missing path or a glob that matches nothing is reported through ``sink``.
    """
    items: list[BatchItem] = []
    for arg in args:
        for path in _expand(arg, sink):
            if path.is_dir() and not _is_opencode_dir(path):
                items.extend(_from_dir(path, sink))
            else:
                items.extend(_from_path(path, sink, agent, quiet=False))
    return finalize(_merge(items), hasher)


def _expand(arg: str, sink: WarningSink) -> list[Path]:
    path = Path(os.path.expanduser(arg))
    if path.exists():
        return [path]
    if _GLOB_CHARS & set(arg):
        matches = sorted(Path(m) for m in glob.glob(os.path.expanduser(arg), recursive=True))
        if not matches:
            sink.warn(arg, 0, "the pattern matches nothing")
        return matches
    sink.warn(arg, 0, "no such file or directory")
    return []


def _is_opencode_dir(path: Path) -> bool:
    try:
        return detect(path).name == "opencode"
    except SourceError:
        return False


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def _from_path(path: Path, sink: WarningSink, agent: str | None, *, quiet: bool) -> list[BatchItem]:
    try:
        reader = get_reader(agent) if agent else detect(path)
    except SourceError as exc:
        if not quiet:
            sink.warn(path, 0, exc.reason)
        return []
    if reader.name == "opencode":
        return _opencode(path, sink)
    if reader.name == "inspect":
        from ..sources.inspect_log import iter_samples

        return [BatchItem(s.id, "inspect", [path], selector=s.id) for s in iter_samples(path, sink)]
    return [BatchItem(path.stem, reader.name, [path])]


def _opencode(path: Path, sink: WarningSink) -> list[BatchItem]:
    from ..sources.opencode_native import list_sessions

    try:
        infos = list_sessions(path, sink)
    except (SourceError, OSError) as exc:
        sink.warn(path, 0, f"cannot list opencode sessions: {exc}")
        return []
    # A database or storage tree holds many sessions and changes whenever any of them
    # does: the session's own "updated" time says whether this one changed. A single
    # export or event stream is hashed by its bytes.
    shared = path.is_dir() or _is_sqlite(path)
    out = []
    for info in infos:
        sid, updated = info.get("id"), info.get("updated")
        if not isinstance(sid, str) or info.get("parent_id"):
            continue
        stamp = iso_utc(updated) if shared and updated is not None else ""
        out.append(BatchItem(sid, "opencode", [path], selector=sid, fingerprint=stamp))
    return out


def _from_dir(root: Path, sink: WarningSink) -> list[BatchItem]:
    found = sorted(find_sessions(AGENTS, [root], sink), key=_order)
    items = [_found_item(f) for f in found]
    claimed = {f.path.resolve() for f in found}
    containers = [f.path.resolve() for f in found if f.path.is_dir()]
    for path in _extra_files(root, claimed, containers):
        items.extend(_from_path(path, sink, None, quiet=True))
    return items


def _found_item(f: Found) -> BatchItem:
    if f.agent == "opencode":
        shared = f.path.is_dir() or _is_sqlite(f.path)
        stamp = iso_utc(f.updated) if shared and f.updated is not None else ""
        return BatchItem(
            f.session_id, "opencode", [f.path], selector=f.session_id, fingerprint=stamp
        )
    return BatchItem(f.session_id, f.agent, [f.path])


def _order(f: Found) -> tuple[str, str]:
    started = f.started or f.updated
    return (iso_utc(started) if started else "", str(f.path))


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


def _merge(items: list[BatchItem]) -> list[BatchItem]:
    """One item per (agent, session, selector): chains joined, repeated paths dropped."""
    merged: dict[tuple[str, str, str], BatchItem] = {}
    for item in items:
        # opencode.db and the storage/ tree of one install hold the same sessions, so an
        # opencode session is one item wherever it was found; eval logs reuse sample ids.
        where = str(item.files[0]) if item.agent == "inspect" else ""
        key = (item.agent, item.session_id, where)
        first = merged.get(key)
        if first is None:
            merged[key] = item
        elif item.selector is None:
            first.files.extend(p for p in item.files if p not in first.files)
    return list(merged.values())
