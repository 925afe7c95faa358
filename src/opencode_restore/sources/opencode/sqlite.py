"""opencode's SQLite database (``~/.local/share/opencode/opencode.db``, opencode 1.x).

Tables used (opencode 1.18): ``session`` (one column per field: ``id``,
``parent_id``, ``title``, ``directory``, ``time_created`` ...), ``message``
(``id``, ``session_id``, ``time_created``, ``data`` = message info JSON without
its ids) and ``part`` (``id``, ``message_id``, ``session_id``, ``data`` = part
JSON without its ids). The database belongs to a live program, so it is only
ever opened read-only and nothing is copied.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...errors import SourceError
from ..base import loads_capped, max_line_bytes
from .convert import NumberedPart, RawMessage, as_dict, part_sort_key

SQLITE_MAGIC = b"SQLite format 3\x00"

#: Seconds to wait for a writer's lock before reading without locks.
BUSY_TIMEOUT = 1.0

_REQUIRED_TABLES = frozenset({"session", "message", "part"})

#: ``session`` columns -> Session.Info keys (as in ``opencode export``).
_SESSION_COLUMNS = {
    "id": "id",
    "title": "title",
    "directory": "directory",
    "parent_id": "parentID",
    "project_id": "projectID",
    "version": "version",
    "slug": "slug",
}


#: The ``session`` columns read.
_SESSION_READ = frozenset({*_SESSION_COLUMNS, "data", "time_created", "time_updated", "model"})
#: The columns every query names (in a join, a filter or an ordering): each must be a
#: stored column, since a generated one is computed again for every row it is asked of (a
#: 70 KB database whose ``session_id`` built a string per row ran past 300 s at 1.8 GB).
_QUERIED = {
    "session": ("id",),
    "message": ("id", "session_id", "time_created", "data"),
    "part": ("id", "message_id", "data"),
}
#: SQLite virtual-machine steps between two calls of the progress handler.
_PROGRESS_STEPS = 100_000
#: SQLite work allowed on one database, in virtual-machine steps: reading a real 700 MB
#: database takes a few hundred million; only a runaway (a hostile schema this reader does
#: not foresee) reaches this, and it ends in an error instead of running for hours.
MAX_SQLITE_STEPS = 20_000_000_000


def _connect(path: Path, query: str) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True, timeout=BUSY_TIMEOUT)
    # No value longer than a log line is ever loaded: SQLite refuses it (SQLITE_TOOBIG)
    # before allocating, where a 600 MB part took 3.5 GB to parse.
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_line_bytes())
    steps = [0]

    def progress() -> int:
        steps[0] += _PROGRESS_STEPS
        return 1 if steps[0] > MAX_SQLITE_STEPS else 0

    conn.set_progress_handler(progress, _PROGRESS_STEPS)
    return conn


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(r[0]) for r in rows}


def is_opencode_db(path: Path) -> bool:
    """True when ``path`` is a SQLite file with opencode's session, message and part tables."""
    try:
        with closing(_connect(path, "immutable=1")) as conn:
            return _tables(conn) >= _REQUIRED_TABLES
    except sqlite3.Error:
        return False


def _checked(conn: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """``conn`` once it is known to hold opencode's tables; closed and reported otherwise."""
    try:
        missing = _REQUIRED_TABLES - _tables(conn)
    except sqlite3.OperationalError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise SourceError(str(path), f"not a readable SQLite database ({exc})") from exc
    if missing:
        conn.close()
        names = ", ".join(sorted(missing))
        raise SourceError(str(path), f"not an opencode database (no {names} table)")
    return conn


def open_db(path: Path, sink: WarningSink) -> sqlite3.Connection:
    """Open opencode's database read-only, without copying it and without writing to it.

    A WAL-mode database with no ``-wal`` file has nothing pending, so it is opened
    ``immutable`` (SQLite would otherwise create ``-wal``/``-shm`` files beside the
    user's database). Otherwise ``mode=ro`` reads the WAL too; when that fails (the
    database is locked, or the WAL cannot be read) it falls back to ``immutable``
    and reports that the newest, not yet checkpointed changes may be missing.
    """
    try:
        with path.open("rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise SourceError(str(path), f"cannot read: {exc.strerror}") from exc
    if not header.startswith(SQLITE_MAGIC):
        raise SourceError(str(path), "not a SQLite database")
    wal_mode = len(header) > 19 and header[18] == 2
    try:
        if wal_mode and not Path(f"{path}-wal").exists():
            return _checked(_connect(path, "immutable=1"), path)
        try:
            return _checked(_connect(path, "mode=ro"), path)
        except sqlite3.OperationalError as exc:
            sink.warn(
                path, 0, f"cannot open read-only ({exc}); read without locking, so the newest "
                "changes may be missing",
            )  # fmt: skip
            return _checked(_connect(path, "immutable=1"), path)
    except sqlite3.Error as exc:
        raise SourceError(str(path), f"cannot open the database ({exc})") from exc


def _json_column(value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        try:
            return loads_capped(value)
        except orjson.JSONDecodeError:
            return None
    return value


def _session_info(row: sqlite3.Row) -> dict[str, Any]:
    cols = dict(zip(row.keys(), tuple(row), strict=True))
    info = as_dict(_json_column(cols.get("data")))
    for column, key in _SESSION_COLUMNS.items():
        if cols.get(column) is not None:
            info[key] = cols[column]
    time = as_dict(info.get("time"))
    for column, key in (("time_created", "created"), ("time_updated", "updated")):
        if cols.get(column) is not None:
            time[key] = cols[column]
    info["time"] = time
    model = _json_column(cols.get("model"))
    if isinstance(model, dict):
        info["model"] = model
    return info


class DbStore:
    """The sessions of one opencode database."""

    kind = "sqlite"
    default_id: str | None = None

    def __init__(self, path: Path, sink: WarningSink) -> None:
        self.path = path
        self.sink = sink
        self.conn = open_db(path, sink)
        self.conn.row_factory = sqlite3.Row

    def close(self) -> None:
        """Release the database."""
        self.conn.close()

    def _fail(self, exc: sqlite3.Error) -> SourceError:
        if isinstance(exc, sqlite3.OperationalError) and str(exc) == "interrupted":
            why = f"database read stopped after {MAX_SQLITE_STEPS:,} SQLite steps (a runaway)"
            return SourceError(str(self.path), why)
        if isinstance(exc, sqlite3.DataError):
            why = f"a value over the {max_line_bytes()}-byte limit where none can be skipped"
            return SourceError(str(self.path), f"database read failed ({why})")
        return SourceError(str(self.path), f"database read failed ({exc})")

    def sessions(self) -> list[dict[str, Any]]:
        """Every session's info, in the shape of ``opencode export``'s ``info``."""
        try:
            self._require_stored("session")
            columns = ", ".join(f'"{c}"' for c in self._stored_columns("session", _SESSION_READ))
            rows = self.conn.execute(f"SELECT {columns} FROM session").fetchall()
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc
        return [_session_info(r) for r in rows]

    def _stored_columns(self, table: str, wanted: frozenset[str]) -> list[str]:
        """The ``wanted`` columns ``table`` stores (never ``SELECT *``: a generated column
        of a hostile database computes a gigabyte per row)."""
        rows = self.conn.execute(f"PRAGMA table_xinfo({table})").fetchall()
        # hidden: 0 stored, 1 hidden (virtual tables), 2 and 3 generated.
        return [str(r["name"]) for r in rows if r["hidden"] == 0 and r["name"] in wanted]

    def messages(self, session_id: str) -> Iterator[RawMessage]:
        """Stream ``(message info, numbered parts)`` of one session, oldest first.

        Warnings name the database and, as the line, the ordinal of the last part read.
        """
        # One row per message id (the first stored): with duplicated ids, joining on the
        # id paired every copy with every part, quadratic in a hostile database. The rows
        # carry ids only (the sort stays small); each ``data`` is fetched alone, so one
        # over the length limit is skipped and the rest still read.
        query = (
            "SELECT m.id, m.rowid, p.id, p.rowid FROM message AS m"
            " LEFT JOIN part AS p ON p.message_id = m.id"
            " WHERE m.rowid IN (SELECT min(rowid) FROM message WHERE session_id = ? GROUP BY id)"
            " ORDER BY m.time_created, m.id, p.id"
        )
        self._check_tables(session_id)
        ordinal = 0
        current: tuple[dict[str, Any], list[dict[str, Any]]] | None = None
        try:
            for mid, mrow, pid, prow in self.conn.execute(query, (session_id,)):
                if current is None or current[0]["id"] != mid:
                    if current is not None:
                        yield RawMessage(current[0], self._number(current[1], ordinal), ordinal)
                        ordinal += len(current[1])
                    mdata = self._data("message", mrow, f"message {mid}", ordinal, "role unknown")
                    info = self._load(mdata, f"message {mid}", ordinal, "role unknown")
                    current = ({**info, "id": mid, "sessionID": session_id}, [])
                if pid is not None:
                    pdata = self._data("part", prow, f"part {pid}", ordinal, "skipped")
                    part = self._load(pdata, f"part {pid}", ordinal, "skipped")
                    if part:
                        current[1].append({**part, "id": pid, "messageID": mid})
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc
        if current is not None:
            yield RawMessage(current[0], self._number(current[1], ordinal), ordinal)

    def _data(self, table: str, rowid: int, what: str, ordinal: int, outcome: str) -> Any:
        """The ``data`` of one row; an empty object (reported) when over the length limit."""
        try:
            query = f"SELECT data FROM {table} WHERE rowid = ?"
            row = self.conn.execute(query, (rowid,)).fetchone()
        except sqlite3.DataError:
            limit = max_line_bytes()
            why = f"{what}: data over the {limit}-byte limit; {outcome}"
            self.sink.warn(self.path, ordinal, why)
            return {}
        return None if row is None else row[0]

    def _require_stored(self, table: str) -> None:
        """Refuse a table whose queried columns are missing or computed (generated)."""
        stored = self._stored_columns(table, frozenset(_QUERIED[table]))
        for column in _QUERIED[table]:
            if column not in stored:
                why = f"{table}.{column} is missing or not a stored column"
                raise SourceError(str(self.path), f"database read failed ({why})")

    def _check_tables(self, session_id: str) -> None:
        """Refuse missing or computed columns; report messages whose id repeats."""
        try:
            self._require_stored("message")
            self._require_stored("part")
            (extra,) = self.conn.execute(
                "SELECT count(*) - count(DISTINCT id) FROM message WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc
        if extra:
            self.sink.warn(self.path, 0, f"{extra} messages repeat an earlier id; skipped")

    @staticmethod
    def _number(parts: list[dict[str, Any]], ordinal: int) -> list[NumberedPart]:
        parts.sort(key=part_sort_key)
        return [(ordinal + i, p) for i, p in enumerate(parts, 1)]

    def _load(self, data: Any, what: str, ordinal: int, outcome: str) -> dict[str, Any]:
        value = _json_column(data)
        if not isinstance(value, dict):
            self.sink.warn(self.path, ordinal, f"{what}: data is not a JSON object; {outcome}")
            return {}
        return value
