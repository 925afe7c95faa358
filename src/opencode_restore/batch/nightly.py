"""``nightly``: restore the sessions that changed since the last run, for cron or systemd.

1. Take ``data_dir/nightly.lock`` (``filelock``); a second run exits at once (`NightlyBusy`)
   naming the holder that ``data_dir/nightly.holder`` describes.
2. Scan each agent's default locations (or ``--root``) into the store, as
   ``sessions scan`` does, then take the store's sessions updated within ``--since``
   (default 24 h) of now, or of the last fully successful nightly run if that is older
   (so a night without a run, or a session that failed, is caught up).
3. Skip every session whose content hash is already ``done`` in the nightly state
   (``data_dir/nightly/state.jsonl``, the batch manifest of all nightly runs), restore
   the others with the batch runner into ``<out>/YYYY-MM-DD/`` (its own
   ``manifest.jsonl`` too), store each restoration and record the run in the store.

With nothing new to do, nothing is written: running it twice changes nothing the
second time. ``--dry-run`` takes no lock, registers nothing and says what it would do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from filelock import FileLock, Timeout

from ..diagnostics import WarningSink
from ..dirs import make_private_dirs
from ..errors import RestoreError
from ..pipeline.restoration import Restoration
from ..report.saved import save_restoration
from ..sources.discover import mtime
from ..store.db import iso_utc
from ..store.discovery import AGENTS, find_sessions, scan
from ..store.fetch import existing_files
from ..store.store import SessionRow, Store
from .items import BatchItem, FileHasher, finalize
from .manifest import Manifest

LOCK_NAME = "nightly.lock"
#: Who holds the lock, beside it: Windows locks the lock file's first byte, so the
#: holder cannot be written into the lock file itself there.
HOLDER_NAME = "nightly.holder"
RUN_KIND = "nightly"
_PAGE = 1000


class NightlyBusy(RestoreError):
    """Another nightly run holds the lock; this one did nothing."""

    #: EX_TEMPFAIL: cron and systemd treat it as "try again later", not as a crash.
    exit_code = 75


@contextmanager
def nightly_lock(data_dir: Path) -> Iterator[Path]:
    """Hold ``data_dir/nightly.lock`` for the ``with`` block, or raise `NightlyBusy`.

    The lock dies with the process, so a killed run never leaves a stale lock.
    """
    make_private_dirs(data_dir)
    path = data_dir / LOCK_NAME
    holder = data_dir / HOLDER_NAME
    lock = FileLock(path)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        try:
            who = holder.read_text(encoding="utf-8", errors="replace").strip() or "unknown"
        except OSError:  # not written yet, or already removed
            who = "unknown"
        raise NightlyBusy(
            f"another nightly run is in progress ({who}); lock {path}. Nothing done."
        ) from None
    try:
        holder.write_text(f"pid {os.getpid()}, started {iso_utc(datetime.now(UTC))}\n")
        yield path
    finally:
        holder.unlink(missing_ok=True)
        lock.release()


@dataclass(slots=True)
class NightlyPlan:
    """What a nightly run would restore, and why."""

    cutoff: datetime
    out_dir: Path
    todo: list[BatchItem]
    unchanged: list[BatchItem]
    #: key -> "new" or "changed" for every item in ``todo``.
    reasons: dict[str, str]


def state_manifest(data_dir: Path) -> Path:
    """The nightly state: every nightly run's manifest lines, in one file."""
    return data_dir / "nightly" / "state.jsonl"


def last_success(store: Store) -> datetime | None:
    """When the last nightly run that restored everything started."""
    row = store.conn.execute(
        "SELECT MAX(started_at) FROM runs WHERE kind = ? AND status = 'done'", (RUN_KIND,)
    ).fetchone()
    return datetime.fromisoformat(row[0]) if row and row[0] else None


def _row_item(row: SessionRow) -> BatchItem | None:
    files, _, _ = existing_files(row)
    if not files:
        return None
    if row.agent == "opencode":
        # One database holds many sessions: the session's own update time says if it changed.
        return BatchItem(
            row.id, "opencode", files[-1:], selector=row.id, fingerprint=row.updated_at
        )
    return BatchItem(row.id, row.agent, files)


def candidates(
    store: Store, cutoff: datetime, sink: WarningSink, extra: list[BatchItem] | None = None
) -> list[BatchItem]:
    """The store's sessions updated after ``cutoff``, or whose chain files changed on disk
    after it (chain files that still exist)."""
    items: list[BatchItem] = []
    seen: set[str] = set()

    def add(session_id: str) -> None:
        full = store.session(session_id)
        item = _row_item(full) if full is not None else None
        if item is None:
            sink.warn(session_id, 0, "no transcript file of this session exists any more; skipped")
            return
        seen.add(session_id)
        items.append(item)

    offset = 0
    while True:
        rows, total = store.sessions(since=iso_utc(cutoff), limit=_PAGE, offset=offset)
        for row in rows:
            add(row.id)
        offset += len(rows)
        if not rows or offset >= total:
            break
    for session_id in _changed_on_disk(store, cutoff):
        if session_id not in seen:
            add(session_id)
    items.extend(i for i in extra or [] if i.session_id not in seen)
    return items


def _changed_on_disk(store: Store, cutoff: datetime) -> list[str]:
    """Sessions with a chain file modified after ``cutoff``, as the last scan saw it.

    A session's update time is its last entry's time (a copied log keeps its own), so a
    file that changed on disk is caught here.
    """
    rows = store.conn.execute(
        "SELECT DISTINCT t.session_id FROM transcript_files t"
        " JOIN scanned_files f ON f.path = t.path WHERE f.mtime_ns > ? ORDER BY t.session_id",
        (int(cutoff.timestamp() * 1_000_000_000),),
    ).fetchall()
    return [row[0] for row in rows]


def _unregistered(
    store: Store, root: Path | None, cutoff: datetime, sink: WarningSink
) -> list[BatchItem]:
    """What a scan would register (for ``--dry-run``, which writes nothing)."""
    found = find_sessions(AGENTS, [root] if root is not None else None, sink)
    out: dict[str, BatchItem] = {}
    for f in found:
        changed = mtime(f.path) if f.agent != "opencode" else None
        when = max((t for t in (f.updated or f.started, changed) if t is not None), default=None)
        if when is not None and when <= cutoff:
            continue
        item = out.setdefault(f.session_id, BatchItem(f.session_id, f.agent, []))
        if f.agent == "opencode":
            item.selector = f.session_id
            item.fingerprint = iso_utc(f.updated) if f.updated else ""
        if f.path not in item.files:
            item.files.append(f.path)
    return list(out.values())


def plan(
    store: Store,
    manifest: Manifest,
    provider_spec: str,
    *,
    window: timedelta,
    out: Path,
    now: datetime,
    root: Path | None = None,
    dry_run: bool = False,
    sink: WarningSink | None = None,
) -> NightlyPlan:
    """Scan (unless ``dry_run``), pick the changed sessions and name the dated folder."""
    sink = sink or WarningSink()
    cutoff = now - window
    previous = last_success(store)
    # Back to the last run that restored everything (and a window more, so a file that
    # changed while that run was scanning is not missed): content hashes keep
    # anything already done from being redone.
    if previous is not None and previous - window < cutoff:
        cutoff = previous - window
    extra: list[BatchItem] = []
    if dry_run:
        extra = _unregistered(store, root, cutoff, sink)
    else:
        scan(store, root=root, sink=sink)
    items = finalize(candidates(store, cutoff, sink, extra), FileHasher())
    todo, unchanged, reasons = [], [], {}
    for item in items:
        if manifest.is_done(item.key, item.content_hash, provider_spec):
            unchanged.append(item)
        else:
            todo.append(item)
            reasons[item.key] = "changed" if item.key in manifest.latest else "new"
    day = now.astimezone().strftime("%Y-%m-%d")
    return NightlyPlan(cutoff, out / day, todo, unchanged, reasons)


def store_hook(
    store: Store, *, redacted: bool
) -> Callable[[BatchItem, Restoration], dict[str, object]]:
    """A batch result hook that stores each restoration and a ``nightly`` run for it
    (``redacted``: made with ``[restore] redact`` on)."""

    def record(item: BatchItem, restoration: Restoration) -> dict[str, object]:
        restoration_id = save_restoration(store, item.session_id, restoration, redacted)
        run_id = store.create_run(item.session_id, RUN_KIND)
        store.update_run(run_id, "running")
        status = "done" if restoration.complete else "failed"
        store.update_run(run_id, status, restoration_id=restoration_id)
        return {"restoration_id": restoration_id}

    return record
