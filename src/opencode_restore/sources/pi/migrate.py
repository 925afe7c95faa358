"""Writing pi session files: migrated copies (v1 -> v2 -> v3) and branch extracts.

Reading never rewrites a user's file (``tree`` migrates in memory). These writers
are what ``opencode-restore migrate`` and ``export-branch`` run: they write a new file
atomically (temp file, then rename), and overwrite the source only when asked, after
keeping a backup. Migrated v1 ids are the positional ids the reader shows
(``tree.v1_entry_id``), so a migrated file reads with the same message ids as the
original, and migrating again changes nothing.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ...atomic import SESSION_FILE_MODE, atomic_write, backup_path
from ...diagnostics import WarningSink
from ...errors import SourceError, UsageError
from ..base import MigrationResult
from . import tree


def _line(obj: dict[str, Any]) -> bytes:
    # pi writes JSON.stringify(entry): compact, keys in insertion order, UTF-8 as is.
    return orjson.dumps(obj) + b"\n"


def default_migrated_path(path: Path) -> Path:
    """Where ``migrate FILE`` writes without ``-o``: ``<stem>.v3.jsonl`` beside the source."""
    return path.with_name(f"{path.stem}.v{tree.CURRENT_VERSION}{path.suffix or '.jsonl'}")


def _parse(path: Path, sink: WarningSink) -> tree.PiFile:
    pi = tree.parse_file(path, sink)
    if pi.header is None:
        raise SourceError(str(path), "not a pi session file (no session header line)", 1)
    return pi


def migrate_file(
    source: Path,
    dest: Path | None = None,
    *,
    in_place: bool = False,
    force: bool = False,
    sink: WarningSink | None = None,
) -> MigrationResult:
    """Migrate a pi session file to the current version.

    Writes ``dest`` (default ``default_migrated_path``), or with ``in_place`` replaces
    ``source`` after copying it to ``backup_path(source)``. A file already at the
    current version is left alone and nothing is written. Malformed lines are reported
    to ``sink`` and left out, as pi does when it rewrites a file.
    """
    sink = sink or WarningSink()
    if in_place and dest is not None:
        raise UsageError("give either an output file or --in-place, not both")
    pi = _parse(source, sink)
    assert pi.header is not None  # _parse checked
    result = MigrationResult(source, pi.version, max(pi.version, tree.CURRENT_VERSION), 0)
    result.entries = len(pi.entries)
    if not tree.migrate(pi):
        return result
    target = source if in_place else (dest or default_migrated_path(source))
    if not in_place and target.exists() and not force:
        raise UsageError(f"{target} exists; pass --force to overwrite it")
    if in_place:
        result.backup = backup_path(source)
        shutil.copy2(source, result.backup)
    entries = (_line(obj) for obj in [pi.header, *(e.data for e in pi.entries)])
    atomic_write(target, entries, mode=SESSION_FILE_MODE)
    result.written = target
    return result


@dataclass(slots=True)
class BranchExport:
    """What ``export_pi_branch`` wrote."""

    dest: Path
    session_id: str
    entries: int
    labels: int


def branch_lines(
    header: dict[str, Any],
    path: Sequence[tree.PiEntry],
    labels: dict[str, str],
    source: Path,
    now: datetime | None = None,
) -> tuple[str, list[bytes]]:
    """The lines of a new session holding ``path`` (pi's ``createBranchedSession``).

    Label entries on the path are dropped and the labels still in force on path
    entries are written fresh at the end, chained after the last entry.
    """
    now = now or datetime.now(UTC)
    stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    session_id = str(uuid.uuid4())
    new_header: dict[str, Any] = {
        "type": "session",
        "version": tree.CURRENT_VERSION,
        "id": session_id,
        "timestamp": stamp,
        "cwd": header.get("cwd", ""),
        "parentSession": str(source),
    }
    kept = [e for e in path if e.type != "label"]
    lines = [_line(new_header)]
    parent: str | None = None
    for entry in kept:
        data = entry.data
        if data.get("parentId") != parent:
            # A dropped label was this entry's parent: chain it to the entry kept before.
            data = {**data, "parentId": parent}
        lines.append(_line(data))
        parent = entry.id
    ids = {e.id for e in kept}
    for target, label in labels.items():
        if target not in ids:
            continue
        entry_id = uuid.uuid4().hex[:8]
        while entry_id in ids:
            entry_id = uuid.uuid4().hex[:8]
        ids.add(entry_id)
        label_entry = {
            "type": "label",
            "id": entry_id,
            "parentId": parent,
            "timestamp": stamp,
            "targetId": target,
            "label": label,
        }
        lines.append(_line(label_entry))
        parent = entry_id
    return session_id, lines


def export_pi_branch(
    source: Path, leaf: str, dest: Path, *, force: bool = False, sink: WarningSink | None = None
) -> BranchExport:
    """Write the path from the root to entry ``leaf`` of ``source`` as a new session file."""
    sink = sink or WarningSink()
    if dest.exists() and not force:
        raise UsageError(f"{dest} exists; pass --force to overwrite it")
    pi = _parse(source, sink)
    assert pi.header is not None
    tree.migrate(pi)
    by_id = tree.index_by_id(pi)
    if leaf not in by_id:
        raise UsageError(f"no entry with id {leaf!r} in {source}")
    path = tree.path_to_root(by_id, by_id[leaf])
    labels = tree.resolve_labels(pi.entries)
    session_id, lines = branch_lines(pi.header, path, labels, source)
    atomic_write(dest, lines, mode=SESSION_FILE_MODE)
    written_labels = len(lines) - 1 - sum(1 for e in path if e.type != "label")
    return BranchExport(dest, session_id, len(lines) - 1, written_labels)
