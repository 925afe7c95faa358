"""The session store: sessions, their transcript chains, restorations and runs."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RestoreError
from ..redact import redact
from .db import connect, now_iso, record_transcript, write
from .paths import FIX


@dataclass(slots=True)
class ChainFile:
    """One transcript file of a session, at its place in the chain (0 = oldest)."""

    position: int
    path: str
    added_at: str
    source: str


@dataclass(slots=True)
class SessionRow:
    """A stored session; ``native_log_file`` is the newest file of ``files``."""

    id: str
    agent: str
    native_log_file: str | None
    cwd: str | None
    title: str | None
    created_at: str
    updated_at: str
    last_event: str | None
    file_count: int = 0
    files: list[ChainFile] = field(default_factory=list)


@dataclass(slots=True)
class RestorationRow:
    """One stored restore result."""

    id: int
    session_id: str
    created_at: str
    provider: str | None
    summary_markdown: str | None
    summary: Any
    usage: Any
    errors: Any
    #: Saved with redaction on (``[restore] redact``): its texts hold no secret it found.
    redacted: bool = False


@dataclass(slots=True)
class RunRow:
    """A background job (a restore started through the API, or a CLI run)."""

    id: str
    session_id: str | None
    kind: str
    status: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    error: str | None
    restoration_id: int | None


_SESSION_COLUMNS = (
    "s.id, s.agent, s.native_log_file, s.cwd, s.title, s.created_at, s.updated_at,"
    " s.last_event, (SELECT COUNT(*) FROM transcript_files f WHERE f.session_id = s.id)"
)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


class StoreUnavailable(RestoreError, sqlite3.OperationalError):
    """The store cannot be opened or written (an unwritable or misplaced data directory).

    Still a ``sqlite3.OperationalError`` for code that handles those; a command prints
    its one line (``cli.exits``) and exits 2.
    """

    exit_code = 2

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{path}: cannot use the session store: {reason} ({FIX})")


def unusable(path: Path, exc: BaseException) -> StoreUnavailable:
    """Why the store at ``path`` (its SQLite file) could not be opened, on one line."""
    directory = path.parent
    blocker = next((p for p in (path, *path.parents) if p.exists()), None)
    if blocker is not None and blocker != path and not blocker.is_dir():
        return StoreUnavailable(str(blocker), "not a directory")
    if path.is_dir():
        return StoreUnavailable(str(path), "a directory where the store's file should be")
    if isinstance(exc, OSError):
        return StoreUnavailable(str(exc.filename or directory), exc.strerror or str(exc))
    if directory.is_dir() and not os.access(directory, os.W_OK):
        return StoreUnavailable(str(directory), "directory is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        return StoreUnavailable(str(path), "file is not writable")
    return StoreUnavailable(str(path), str(exc))


class Store:
    """The SQLite store at ``path`` (one connection per thread)."""

    #: The file of the store opened last in this process: the one a stray SQLite error
    #: of a command is about (``cli.exits``).
    last_path: str | None = None

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        Store.last_path = str(path)
        self.conn  # noqa: B018 - create and migrate the file now, not on first use

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = connect(self.path)
            except StoreUnavailable:
                raise
            except (sqlite3.Error, OSError) as exc:
                raise unusable(Path(self.path), exc) from exc
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # sessions and chains

    def register(
        self,
        session_id: str,
        agent: str,
        path: str | None,
        *,
        cwd: str | None = None,
        title: str | None = None,
        event: str | None = None,
        source: str = "scan",
        created_at: str | None = None,
        updated_at: str | None = None,
    ) -> bool:
        """Create or touch a session and append ``path`` to its chain (``record_transcript``)."""
        return record_transcript(
            self.conn,
            session_id,
            agent,
            path,
            cwd=cwd,
            title=title,
            event=event,
            source=source,
            created_at=created_at,
            updated_at=updated_at,
        )

    def session(self, session_id: str) -> SessionRow | None:
        """The session with its chain, or None."""
        row = self.conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        s = _session_row(row)
        s.files = self.chain(session_id)
        return s

    def chain(self, session_id: str) -> list[ChainFile]:
        """The session's transcript files, oldest first."""
        rows = self.conn.execute(
            "SELECT position, path, added_at, source FROM transcript_files"
            " WHERE session_id = ? ORDER BY position",
            (session_id,),
        ).fetchall()
        return [ChainFile(*r) for r in rows]

    def sessions(
        self,
        *,
        agent: str | None = None,
        since: str | None = None,
        until: str | None = None,
        cwds: list[str] | None = None,
        project: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> tuple[list[SessionRow], int]:
        """One page of sessions, most recently updated first, and the total that match.

        ``since`` / ``until`` bound ``updated_at`` (store text times, see ``iso_utc``);
        ``cwds`` keeps the sessions recorded in one of these directories, ``project`` those
        of a directory as `cwd_clause` matches it (as search's ``cwd:`` filter does).
        """
        where: list[str] = []
        args: list[Any] = []
        if agent is not None:
            where.append("s.agent = ?")
            args.append(agent)
        if cwds is not None:
            where.append(f"s.cwd IN ({', '.join('?' * len(cwds))})")
            args.extend(cwds)
        if project is not None:
            clause, more = cwd_clause(project)
            where.append(clause)
            args.extend(more)
        if since is not None:
            where.append("s.updated_at > ?")
            args.append(since)
        if until is not None:
            where.append("s.updated_at <= ?")
            args.append(until)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        total = self.conn.execute(f"SELECT COUNT(*) FROM sessions s{clause}", args).fetchone()[0]
        rows = self.conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s{clause}"
            " ORDER BY s.updated_at DESC, s.id LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        return [_session_row(r) for r in rows], total

    def sessions_by_prefix(self, prefix: str, *, agent: str | None = None) -> list[SessionRow]:
        """The sessions whose id starts with ``prefix``, most recently updated first."""
        # substr, not LIKE: ids may hold % and _.
        clause = "substr(s.id, 1, ?) = ?" + (" AND s.agent = ?" if agent is not None else "")
        args: list[str | int] = [len(prefix), prefix]
        if agent is not None:
            args.append(agent)
        rows = self.conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE {clause}"
            " ORDER BY s.updated_at DESC, s.id",
            args,
        ).fetchall()
        return [_session_row(r) for r in rows]

    # restorations

    def add_restoration(
        self,
        session_id: str,
        *,
        provider: str | None,
        summary_markdown: str | None,
        summary: Any,
        usage: Any,
        errors: Any,
        redacted: bool = False,
    ) -> int:
        """Store a restore result; returns its id. ``redacted``: it was made with
        redaction on, so its texts can be shown as they are. ``summary`` is JSON data,
        or its JSON text already (a str: a restoration is an object, never a string)."""

        def tx(c: sqlite3.Connection) -> int:
            cur = c.execute(
                "INSERT INTO restorations (session_id, created_at, provider, summary_markdown,"
                " summary_json, usage_json, errors_json, redacted)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    now_iso(),
                    provider,
                    summary_markdown,
                    summary if isinstance(summary, str) else _dumps(summary),
                    _dumps(usage),
                    _dumps(errors),
                    int(redacted),
                ),
            )
            return int(cur.lastrowid or 0)

        return write(self.conn, tx)

    def latest_restoration(self, session_id: str) -> RestorationRow | None:
        """The newest restore result of a session, or None."""
        row = self.conn.execute(
            "SELECT id, session_id, created_at, provider, summary_markdown, summary_json,"
            " usage_json, errors_json, redacted FROM restorations WHERE session_id = ?"
            " ORDER BY id DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        return RestorationRow(
            id=row[0],
            session_id=row[1],
            created_at=row[2],
            provider=row[3],
            summary_markdown=row[4],
            summary=_loads(row[5]),
            usage=_loads(row[6]),
            errors=_loads(row[7]),
            redacted=bool(row[8]),
        )

    def restored_turns(self, session_ids: list[str]) -> dict[str, int]:
        """The turn count of each session's newest restoration (sessions never restored
        are left out); read inside SQLite, so no summary is loaded."""
        if not session_ids:
            return {}
        marks = ",".join("?" * len(session_ids))
        rows = self.conn.execute(
            "SELECT session_id, json_extract(summary_json, '$.turn_count') FROM restorations"
            f" WHERE id IN (SELECT MAX(id) FROM restorations WHERE session_id IN ({marks})"
            " GROUP BY session_id)",
            session_ids,
        ).fetchall()
        return {sid: int(n) for sid, n in rows if isinstance(n, int)}

    # runs

    def create_run(self, session_id: str | None, kind: str) -> str:
        """Record a queued run; returns its id."""
        run_id = uuid.uuid4().hex
        write(
            self.conn,
            lambda c: c.execute(
                "INSERT INTO runs (id, session_id, kind, status, created_at)"
                " VALUES (?, ?, ?, 'queued', ?)",
                (run_id, session_id, kind, now_iso()),
            ),
        )
        return run_id

    def update_run(
        self,
        run_id: str,
        status: str,
        *,
        error: str | None = None,
        restoration_id: int | None = None,
    ) -> None:
        """Move a run to ``status`` (``running`` stamps the start, ``done``/``failed`` the end)."""
        stamp = now_iso()
        started = stamp if status == "running" else None
        finished = stamp if status in ("done", "failed") else None
        write(
            self.conn,
            lambda c: c.execute(
                "UPDATE runs SET status = ?, error = COALESCE(?, error),"
                " restoration_id = COALESCE(?, restoration_id),"
                " started_at = COALESCE(?, started_at), finished_at = COALESCE(?, finished_at)"
                " WHERE id = ?",
                (status, error, restoration_id, started, finished, run_id),
            ),
        )

    def run(self, run_id: str) -> RunRow | None:
        """A run by id, or None."""
        row = self.conn.execute(
            "SELECT id, session_id, kind, status, created_at, started_at, finished_at, error,"
            " restoration_id FROM runs WHERE id = ?",
            (run_id,),
        ).fetchone()
        return None if row is None else RunRow(*row)


def cwd_clause(cwd: str) -> tuple[str, list[Any]]:
    """A WHERE clause over ``s.cwd`` and its arguments: the sessions of ``cwd``, that
    directory, one under it, or one whose last part it is. A backslash separates parts
    too: sessions recorded on Windows have cwds like ``D:\\src\\app``."""
    base = cwd.rstrip("/\\") or cwd
    return (
        "(s.cwd = ? OR substr(s.cwd, 1, ?) IN (?, ?)"
        " OR s.cwd LIKE ? ESCAPE '\\' OR s.cwd LIKE ? ESCAPE '\\')",
        [base, len(base) + 1, base + "/", base + "\\", "%/" + _like(base), "%\\\\" + _like(base)],
    )


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _session_row(row: tuple[Any, ...]) -> SessionRow:
    """A row as served: its title redacted again (a store written before titles were
    redacted on the way in still holds raw ones)."""
    s = SessionRow(*row)
    if s.title:
        s.title = redact(s.title)[0]
    return s
