"""The SQLite store's connection, schema migrations and the hook's one write.

Standard library only: ``opencode-restore hook`` imports this module on every agent
event, so it must stay cheap to import. Many agents may write at once: every write
runs in ``BEGIN IMMEDIATE`` (the write lock is taken up front, so two writers never
deadlock upgrading a read lock), waits up to ``busy_timeout`` for the lock, and is
retried a few times if SQLite still reports the database as locked.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from ..dirs import make_private_dirs

#: The store's file name inside the data directory.
DB_NAME = "store.sqlite3"
BUSY_TIMEOUT_MS = 10_000
_RETRIES = 8

T = TypeVar("T")

#: Versioned migrations: ``MIGRATIONS[k]`` moves the schema from version k to k + 1.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        native_log_file TEXT,
        cwd TEXT,
        title TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_event TEXT
    );
    CREATE INDEX sessions_updated ON sessions(updated_at);
    CREATE INDEX sessions_agent ON sessions(agent, updated_at);
    CREATE TABLE transcript_files (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        path TEXT NOT NULL,
        added_at TEXT NOT NULL,
        source TEXT NOT NULL,
        PRIMARY KEY (session_id, position),
        UNIQUE (session_id, path)
    );
    CREATE TABLE restorations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        provider TEXT,
        summary_markdown TEXT,
        summary_json TEXT,
        usage_json TEXT,
        errors_json TEXT
    );
    CREATE INDEX restorations_session ON restorations(session_id, id);
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        session_id TEXT,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        started_at TEXT,
        finished_at TEXT,
        error TEXT,
        restoration_id INTEGER REFERENCES restorations(id)
    );
    """,
    """
    CREATE TABLE file_index (
        path TEXT PRIMARY KEY,
        device INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        indexed_bytes INTEGER NOT NULL,
        indexed_lines INTEGER NOT NULL,
        max_ts REAL,
        last_checkpoint INTEGER NOT NULL
    );
    CREATE TABLE checkpoints (
        path TEXT NOT NULL REFERENCES file_index(path) ON DELETE CASCADE,
        offset INTEGER NOT NULL,
        line INTEGER NOT NULL,
        max_ts_before REAL,
        PRIMARY KEY (path, offset)
    ) WITHOUT ROWID;
    """,
    # What `sessions scan` last saw of each candidate file: an unchanged file (same size
    # and mtime) is neither read nor registered again. agent NULL = no session file.
    """
    CREATE TABLE scanned_files (
        path TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        agent TEXT,
        session_id TEXT,
        registered_id TEXT,
        cwd TEXT,
        title TEXT,
        started TEXT,
        updated TEXT,
        slug TEXT
    ) WITHOUT ROWID;
    """,
    # Whether a restoration was saved with redaction on: memory at start then shows it
    # without importing the redactor. A row saved before this knew nothing of it: 0.
    """
    ALTER TABLE restorations ADD COLUMN redacted INTEGER NOT NULL DEFAULT 0;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def now_iso() -> str:
    """The current UTC time in the store's sortable text form."""
    return iso_utc(datetime.now(UTC))


def iso_utc(ts: datetime) -> str:
    """An aware datetime as fixed-width ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (sorts as text)."""
    u = ts.astimezone(UTC)
    if u.year < 1000:  # how ``%Y`` writes such a year is the platform's
        return u.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # The same text as that strftime in half the time (an index build formats every
    # message's time; an f-string takes a third more).
    return "%d-%02d-%02dT%02d:%02d:%02d.%06dZ" % (  # noqa: UP031
        u.year,
        u.month,
        u.day,
        u.hour,
        u.minute,
        u.second,
        u.microsecond,
    )


def connect(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open (creating and migrating if needed) the store at ``path``."""
    make_private_dirs(os.path.dirname(os.fspath(path)) or ".")
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        retry(lambda: conn.execute("PRAGMA journal_mode = WAL"))
    # In WAL mode NORMAL never corrupts; a power cut can lose the last commits only.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        write(conn, _migrate)
    return conn


def _migrate(conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise sqlite3.DatabaseError(
            f"store schema version {version} is newer than this program ({SCHEMA_VERSION})"
        )
    for step in MIGRATIONS[version:]:
        for statement in step.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def retry(fn: Callable[[], T]) -> T:
    """Run ``fn``, retrying with jittered backoff while the database stays locked."""
    for attempt in range(_RETRIES):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or attempt == _RETRIES - 1:
                raise
            # Jitter from the clock and pid: ``random`` costs the hook an import.
            jitter = (time.perf_counter_ns() + os.getpid()) % 40 / 1000
            time.sleep((0.01 + jitter) * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


def write(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction, retried while locked."""

    def attempt() -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    return retry(attempt)


def record_transcript(
    conn: sqlite3.Connection,
    session_id: str,
    agent: str,
    path: str | None,
    *,
    cwd: str | None = None,
    title: str | None = None,
    event: str | None = None,
    source: str = "hook",
    created_at: str | None = None,
    updated_at: str | None = None,
) -> bool:
    """Create or touch a session and append ``path`` to its transcript chain.

    A path already in the chain keeps its place; a new one is appended, so an old
    path is never lost, and ``native_log_file`` becomes the newest path in the chain.
    The first title recorded stays, redacted (it is a user's prompt, often). Returns True
    when ``path`` was appended.
    """
    stamp = now_iso()
    if title:
        # Imported here: a hook without a title (most) does not pay for the patterns.
        from ..redact import redact

        title = redact(title)[0]

    def tx(c: sqlite3.Connection) -> bool:
        c.execute(
            "INSERT INTO sessions (id, agent, cwd, title, created_at, updated_at, last_event)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET"
            " cwd = COALESCE(excluded.cwd, cwd), title = COALESCE(title, excluded.title),"
            " updated_at = MAX(updated_at, excluded.updated_at),"
            " created_at = MIN(created_at, excluded.created_at),"
            " last_event = COALESCE(excluded.last_event, last_event)",
            (session_id, agent, cwd, title, created_at or stamp, updated_at or stamp, event),
        )
        if not path:
            return False
        added = c.execute(
            "INSERT OR IGNORE INTO transcript_files (session_id, position, path, added_at, source)"
            " SELECT ?, COALESCE(MAX(position) + 1, 0), ?, ?, ?"
            " FROM transcript_files WHERE session_id = ?",
            (session_id, path, stamp, source, session_id),
        ).rowcount
        if added:
            c.execute("UPDATE sessions SET native_log_file = ? WHERE id = ?", (path, session_id))
        return added > 0

    return write(conn, tx)
