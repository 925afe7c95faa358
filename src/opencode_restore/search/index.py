"""The search index: schema, incremental update, rebuild.

One SQLite file, ``search.sqlite3`` in the data directory. ``docs`` is an FTS5 table of
the texts; ``entries`` holds each text's label, kind, role and time under the same rowid
(see `rowid_of`: the kind is in the rowid too);
``sessions`` each session's agent and cwd once, with how far it was indexed: the labels
issued so far and the restoration indexed, and its span (see `_insert`). ``files``
remembers each transcript file's identity and size, so a grown file adds only the
messages past the last label indexed (the session is read again, so the numbering goes on
exactly as ``messages`` gives it), and a replaced or truncated one indexes its session
again from scratch.

An index that is missing, unreadable or of another schema version is built again: it
holds nothing the store and the logs do not.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..atomic import alive
from ..diagnostics import WarningSink
from ..dirs import make_private_dirs
from ..errors import SourceError
from ..redact import Redactor, expect_much_text, redact_optional
from ..store.fetch import existing_files, session_messages
from ..store.store import SessionRow, Store
from ..timeline.numbering import Labeler
from .rows import Row, message_rows, restoration_rows

#: The index's file name inside the data directory.
INDEX_NAME = "search.sqlite3"
#: Bumped whenever the schema or what a row holds changes: an older index is rebuilt.
SCHEMA_VERSION = 4
BUSY_TIMEOUT_MS = 10_000
#: A row's rowid is its code (`CODES`) above this many bits of sequence, so a query weighs
#: and filters the matches of a word by kind from the rowid alone (no lookup in
#: ``entries`` for each of 300,000 matches), and each code's rows are one rowid range,
#: which FTS5 seeks to.
SEQ_BITS = 40
SEQ_MASK = (1 << SEQ_BITS) - 1
#: The codes: (kind, written by the user). In the order the ranking weighs them
#: (`search.query`, highest first), so the codes of one weight are one rowid range.
CODES = (
    ("message", True),
    ("decision", False),
    ("summary", False),
    ("message", False),
    ("error", False),
    ("command", False),
    ("file", False),
    ("tool", False),
    ("thinking", False),
)
_CODE = {key: n for n, key in enumerate(CODES)}

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE sessions (
    sid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    agent TEXT NOT NULL,
    cwd TEXT,
    labels INTEGER NOT NULL DEFAULT 0,
    restoration INTEGER,
    first_time TEXT,
    last_time TEXT,
    first_seq INTEGER,
    last_seq INTEGER,
    row_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE files (
    sid INTEGER NOT NULL,
    path TEXT NOT NULL,
    device INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (sid, path)
) WITHOUT ROWID;
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    sid INTEGER NOT NULL,
    time TEXT,
    label INTEGER,
    kind TEXT NOT NULL,
    role TEXT
);
CREATE INDEX entries_sid ON entries(sid, kind);
CREATE VIRTUAL TABLE docs USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2');
"""

#: Sessions a query's catch-up indexes at most (``before_query``): a session whose log
#: grew is read again whole, so a backlog is worked off a few sessions per query.
QUERY_SESSIONS = 10
#: Seconds a query's catch-up waits for another writer of the index.
QUERY_WAIT = 0.2

#: Sessions from which a build compiles the redactor's one-pass scan first: each redacts
#: ~9,000 characters, and the scan is compiled after the first megabyte anyway.
WARM_SESSIONS = 100

#: Progress: (sessions done, sessions in all).
Progress = Callable[[int, int], None]


@dataclass(slots=True)
class Updated:
    """What an update did."""

    sessions: int = 0
    rows: int = 0
    rebuilt: bool = False
    #: Changed sessions left for the next catch-up (its ``most`` was reached).
    left: int = 0


def index_path(data_dir: Path) -> Path:
    """The index's file inside ``data_dir``."""
    return data_dir / INDEX_NAME


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _version(conn: sqlite3.Connection) -> int | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except sqlite3.DatabaseError:
        return None
    return int(row[0]) if row is not None and str(row[0]).isdigit() else None


def _remove(path: Path) -> None:
    for p in (path, path.with_name(path.name + "-journal")):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _open(path: Path) -> sqlite3.Connection | None:
    """The index at ``path``, or None when it is missing, not a SQLite file, or of
    another schema version (it is then built again)."""
    if not path.exists():
        return None
    conn = None
    try:
        conn = _connect(path)
        if _version(conn) == SCHEMA_VERSION:
            return conn
    except sqlite3.DatabaseError:
        pass
    if conn is not None:
        conn.close()
    return None


@dataclass(slots=True)
class _Indexed:
    sid: int
    labels: int
    restoration: int | None
    files: dict[str, tuple[int, int, int]]


def _indexed(conn: sqlite3.Connection, session_id: str) -> _Indexed | None:
    row = conn.execute(
        "SELECT sid, labels, restoration FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        return None
    files = {
        p: (d, i, s)
        for p, d, i, s in conn.execute(
            "SELECT path, device, inode, size FROM files WHERE sid = ?", (row[0],)
        )
    }
    return _Indexed(row[0], row[1], row[2], files)


def _identities(row: SessionRow) -> dict[str, tuple[int, int, int]]:
    """Each readable chain file's (device, inode, size) now."""
    present, _, _ = existing_files(row)
    out: dict[str, tuple[int, int, int]] = {}
    for p in present:
        try:
            st = p.stat()
        except OSError:
            continue
        out[str(p)] = (st.st_dev, st.st_ino, st.st_size)
    return out


def _change(before: _Indexed | None, now: dict[str, tuple[int, int, int]]) -> str:
    """``same``, ``grown`` (only appended to, or new files joined) or ``reset``."""
    if before is None:
        return "reset"
    if before.files == now:
        return "same"
    for path, (dev, ino, size) in before.files.items():
        cur = now.get(path)
        if cur is None or cur[:2] != (dev, ino) or cur[2] < size:
            return "reset"
    return "grown"


def _labelled(store: Store, row: SessionRow, after: int) -> tuple[Iterator[Row], Labeler]:
    """The rows of ``row``'s messages labelled past ``after``, labelled as the API labels
    the messages it serves; the labeler counts every label issued. Read raw: only the
    strings these rows take are redacted (see ``rows``), once each."""
    labeler = Labeler()
    fetch = session_messages(
        store,
        row,
        WarningSink(),
        include_tools=True,
        include_thinking=True,
        raw=True,
        labeler=labeler,
    )
    clean = Redactor().redact

    def rows() -> Iterator[Row]:
        for m, label in fetch.labelled:
            if label is not None and labeler.issued > after:
                yield from message_rows(m, labeler.issued, clean)

    return rows(), labeler


def code_of(kind: str, role: str | None) -> int:
    """The code (`CODES`) of a row of ``kind`` by ``role``."""
    return _CODE[(kind, kind == "message" and role == "user")]


def code_range(code: int) -> tuple[int, int]:
    """The first and last rowid a row of ``code`` can have."""
    return code << SEQ_BITS, (code << SEQ_BITS) | SEQ_MASK


def rowid_of(code: int, seq: int) -> int:
    """The rowid of the row of ``code`` inserted ``seq``-th: the sequence runs across the
    codes, so ``rowid & SEQ_MASK`` orders every row as it was inserted."""
    return (code << SEQ_BITS) | seq


#: The highest sequence number given: each code's range's last rowid, in one statement
#: (one per code cost a build ~1.5% of its time).
_LAST_SEQ = "SELECT MAX(top & {mask}) FROM ({tops})".format(
    mask=SEQ_MASK,
    tops=" UNION ALL ".join(
        "SELECT (SELECT MAX(id) FROM entries WHERE id BETWEEN {} AND {}) AS top".format(
            *code_range(code)
        )
        for code in range(len(CODES))
    ),
)


def _next_seq(conn: sqlite3.Connection) -> int:
    return int(conn.execute(_LAST_SEQ).fetchone()[0] or 0) + 1


class Texts:
    """``docs`` rows on their way in, written in rowid order.

    FTS5 writes the terms it holds out as a new segment whenever a rowid comes lower than
    the one before, and the codes interleave the rowids of a session's rows: written as
    they come, a build wrote a segment every few rows and spent most of its SQLite time
    merging them. A build (``batch``) holds its rows back until ``BATCH_CHARS`` of text,
    so a segment is written per batch; an update writes each session's rows at once.
    """

    #: Characters of text a build's batch holds (FTS5's own buffer is 1 MB of terms).
    BATCH_CHARS = 4_000_000

    __slots__ = ("batch", "chars", "held")

    def __init__(self, *, batch: bool) -> None:
        self.batch = batch
        self.held: list[tuple[int, str]] = []
        self.chars = 0

    def add(self, conn: sqlite3.Connection, rows: Iterable[tuple[int, str]]) -> None:
        """Take ``rows`` (rowid, text); write what is held when the batch is full."""
        for row in rows:
            self.held.append(row)
            self.chars += len(row[1])
        if not self.batch or self.chars >= self.BATCH_CHARS:
            self.flush(conn)

    def flush(self, conn: sqlite3.Connection) -> None:
        """Write every row held."""
        self.held.sort()
        conn.executemany("INSERT INTO docs (rowid, text) VALUES (?, ?)", self.held)
        self.held, self.chars = [], 0


def _insert(conn: sqlite3.Connection, sid: int, rows: list[Row], texts: Texts | None = None) -> int:
    """Insert ``rows`` of session ``sid``; their texts go through ``texts`` (default:
    written now)."""
    if not rows:
        return 0
    # The rowids given here, so both tables take their rows in one statement each.
    first = _next_seq(conn)
    ids = [rowid_of(code_of(r.kind, r.role), first + n) for n, r in enumerate(rows)]
    conn.executemany(
        "INSERT INTO entries (id, sid, time, label, kind, role) VALUES (?, ?, ?, ?, ?, ?)",
        [(i, sid, r.time, r.label, r.kind, r.role) for i, r in zip(ids, rows, strict=True)],
    )
    (texts or Texts(batch=False)).add(conn, [(i, r.text) for i, r in zip(ids, rows, strict=True)])
    # The session's span, for a query to take or leave its rows whole: its times (an
    # untimed row counts as '' in the first) and sequences only widen, and its row count
    # is exact, so when its rows are as many as the sequences between its first and last,
    # they are every row between.
    last = max((r.time for r in rows if r.time), default=None)
    conn.execute(
        "UPDATE sessions SET first_time = min(coalesce(first_time, ?1), ?1),"
        " last_time = iif(?2 IS NULL, last_time, max(coalesce(last_time, ?2), ?2)),"
        " first_seq = min(coalesce(first_seq, ?3), ?3), last_seq = max(coalesce(last_seq, ?4), ?4),"
        " row_count = row_count + ?5 WHERE sid = ?6",
        (min(r.time or "" for r in rows), last, first, first + len(rows) - 1, len(rows), sid),
    )
    return len(rows)


def _delete(conn: sqlite3.Connection, sid: int, kinds: tuple[str, ...] | None = None) -> None:
    where = "sid = ?" + (f" AND kind IN ({','.join('?' * len(kinds))})" if kinds else "")
    args = (sid, *(kinds or ()))
    conn.execute(f"DELETE FROM docs WHERE rowid IN (SELECT id FROM entries WHERE {where})", args)
    gone = conn.execute(f"DELETE FROM entries WHERE {where}", args).rowcount
    conn.execute("UPDATE sessions SET row_count = row_count - ? WHERE sid = ?", (gone, sid))


_SUMMARY_KINDS = ("decision", "summary")


def _session_id(conn: sqlite3.Connection, row: SessionRow, before: _Indexed | None) -> int:
    cwd = redact_optional(row.cwd)
    if before is None:
        cur = conn.execute(
            "INSERT INTO sessions (id, agent, cwd) VALUES (?, ?, ?)", (row.id, row.agent, cwd)
        )
        return int(cur.lastrowid or 0)
    conn.execute(
        "UPDATE sessions SET agent = ?, cwd = ? WHERE sid = ?", (row.agent, cwd, before.sid)
    )
    return before.sid


def _latest_restorations(store: Store) -> dict[str, int]:
    return dict(
        store.conn.execute("SELECT session_id, MAX(id) FROM restorations GROUP BY session_id")
    )


def _read(store: Store, row: SessionRow, after: int) -> tuple[list[Row], int] | None:
    """``row``'s rows past label ``after`` and the labels issued in all, or None when
    its files cannot be read."""
    try:
        rows, labeler = _labelled(store, row, after)
        return list(rows), labeler.issued
    except (SourceError, OSError):
        return None


def _summary_rows(store: Store, restoration: int) -> list[Row]:
    saved = store.conn.execute(
        "SELECT summary_json, created_at FROM restorations WHERE id = ?", (restoration,)
    ).fetchone()
    if saved is None or not saved[0]:
        return []
    return list(restoration_rows(json.loads(saved[0]), saved[1]))


def index_session(
    conn: sqlite3.Connection,
    store: Store,
    row: SessionRow,
    restoration: int | None,
    texts: Texts | None = None,
) -> int:
    """Bring ``row``'s rows up to date; returns the rows added. Everything is read
    first, then written in one transaction (``conn``'s own when it is in one: a build).
    ``texts``: a build's batch (`Texts`; a build indexes each session anew, so it deletes
    none of the rows held).

    A session none of whose files can be read keeps what was indexed of it.
    """
    before = _indexed(conn, row.id)
    now = _identities(row)
    change = _change(before, now)
    new_summary = restoration is not None and (before is None or before.restoration != restoration)
    if change == "same" and not new_summary:
        return 0
    after = before.labels if before is not None and change == "grown" else 0
    read = None
    if change != "same" and now:
        read = _read(store, row, after)
        if read is None:
            return 0
    summary = _summary_rows(store, restoration) if new_summary and restoration is not None else None
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN IMMEDIATE")
    try:
        added = 0
        sid = _session_id(conn, row, before)
        if read is not None:
            if after == 0 and before is not None:
                _delete(conn, sid, ("message", "tool", "error", "command", "file", "thinking"))
            added += _insert(conn, sid, read[0], texts)
            conn.execute("UPDATE sessions SET labels = ? WHERE sid = ?", (read[1], sid))
            conn.execute("DELETE FROM files WHERE sid = ?", (sid,))
            conn.executemany(
                "INSERT INTO files VALUES (?, ?, ?, ?, ?)",
                [(sid, p, *ident) for p, ident in now.items()],
            )
        if summary is not None:
            _delete(conn, sid, _SUMMARY_KINDS)
            added += _insert(conn, sid, summary, texts)
            conn.execute("UPDATE sessions SET restoration = ? WHERE sid = ?", (restoration, sid))
    except BaseException:
        if own and conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if own:
        conn.execute("COMMIT")
    return added


def _mark(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _marks_now(store: Store) -> tuple[str, str]:
    """The store's newest session change and newest restoration, as meta values."""
    touched = store.conn.execute("SELECT MAX(updated_at) FROM sessions").fetchone()[0]
    restored = store.conn.execute("SELECT MAX(id) FROM restorations").fetchone()[0]
    return touched or "", str(restored or 0)


def _run(
    conn: sqlite3.Connection,
    store: Store,
    ids: list[str],
    marks: tuple[str, str] | None,
    progress: Progress | None,
    later: list[str] | None = None,
    texts: Texts | None = None,
) -> Updated:
    done = Updated()
    latest = _latest_restorations(store)
    for n, session_id in enumerate(ids, start=1):
        row = store.session(session_id)
        if row is not None:
            added = index_session(conn, store, row, latest.get(session_id), texts)
            done.sessions += added > 0
            done.rows += added
        if progress is not None:
            progress(n, len(ids))
    if marks is not None:
        # ``later``: changed sessions not indexed yet, which the marks no longer find.
        conn.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [("touched", marks[0]), ("restored", marks[1]), ("pending", json.dumps(later or []))],
        )
        done.left = len(later or [])
    return done


def _pending(conn: sqlite3.Connection) -> list[str]:
    try:
        ids = json.loads(_mark(conn, "pending") or "[]")
    except ValueError:
        return []
    return [x for x in ids if isinstance(x, str)] if isinstance(ids, list) else []


def _all_ids(store: Store) -> list[str]:
    return [r[0] for r in store.conn.execute("SELECT id FROM sessions ORDER BY updated_at, id")]


def update(
    store: Store,
    path: Path,
    session_ids: Iterable[str] | None = None,
    *,
    progress: Progress | None = None,
) -> Updated:
    """Index what changed of ``session_ids`` (default: every registered session: each
    chain file is looked at, only grown or replaced ones are read). An index that cannot
    be used is built again whole."""
    conn = _open(path)
    if conn is None:
        return rebuild(store, path, progress=progress)
    try:
        if session_ids is None:
            # Taken first: a change made while this runs is seen by the next catch-up.
            marks = _marks_now(store)
            return _run(conn, store, _all_ids(store), marks, progress)
        return _run(conn, store, list(dict.fromkeys(session_ids)), None, progress)
    finally:
        conn.close()


def catch_up(
    store: Store,
    path: Path,
    *,
    progress: Progress | None = None,
    most: int | None = None,
    wait: float | None = None,
) -> Updated:
    """Index the sessions the store saw change since the last update: a hook touched them
    (the hook itself only records the event, see ``hooks.receiver``) or a restoration of
    them was saved. Cheap when nothing changed (two indexed queries); the whole store
    when the index is missing or unusable.

    ``most``: index that many sessions at most; the others are noted in the index and
    come first next time. ``wait``: seconds to wait for another writer of the index
    (default ``BUSY_TIMEOUT_MS``), then ``sqlite3.OperationalError``.
    """
    conn = _open(path)
    if conn is None:
        return rebuild(store, path, progress=progress, most=most)
    if wait is not None:
        conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
    try:
        marks = _marks_now(store)
        touched, restored = _mark(conn, "touched") or "", _mark(conn, "restored") or "0"
        pending = _pending(conn)
        if (touched, restored) == marks and not pending:
            return Updated()
        ids = pending + [
            r[0]
            for r in store.conn.execute(
                "SELECT id FROM sessions WHERE updated_at > ? UNION"
                " SELECT session_id FROM restorations WHERE id > ?",
                (touched, int(restored) if restored.isdigit() else 0),
            )
        ]
        ids = list(dict.fromkeys(ids))
        cut = len(ids) if most is None else most
        return _run(conn, store, ids[:cut], marks, progress, ids[cut:])
    finally:
        conn.close()


def before_query(store: Store, path: Path) -> Updated | None:
    """What a front end (the API, MCP) runs before a query: a catch-up bounded to
    ``QUERY_SESSIONS`` sessions, waiting ``QUERY_WAIT`` s at most for another writer of the
    index. None when it could not run (a build holds the index, it cannot be written):
    the query then reads what is there."""
    try:
        return catch_up(store, path, most=QUERY_SESSIONS, wait=QUERY_WAIT)
    except (sqlite3.Error, OSError):
        return None


def begin_build(path: Path) -> sqlite3.Connection:
    """A new index file at ``path`` with its schema, in an open transaction: the file is
    the builder's own until it is renamed into place, so it has no journal and no sync."""
    conn = _connect(path)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    return conn


def _remove_stale_builds(path: Path) -> None:
    """Remove the files of the builds beside ``path`` whose process is gone (killed): a
    live one's file is its own until its rename."""
    for stale in path.parent.glob(f"{path.name}.new-*"):
        pid = stale.name.rsplit("-", 1)[1]
        if pid.isdigit() and not alive(pid):
            _remove(stale)


def rebuild(
    store: Store, path: Path, *, progress: Progress | None = None, most: int | None = None
) -> Updated:
    """Build the index anew beside ``path`` and put it in its place in one rename, so a
    search running meanwhile reads the old index whole. ``most``: as in ``catch_up`` (the
    other sessions are left for the next catch-up).

    The new file is this process's own until the rename (its name holds the pid: two
    builds at once each rename a whole index), so it is written without a journal or a
    sync, in one transaction, and synced once before the rename.
    """
    make_private_dirs(str(path.parent))
    tmp = path.with_name(f"{path.name}.new-{os.getpid()}")
    _remove(tmp)
    _remove_stale_builds(path)
    try:
        conn = begin_build(tmp)
        try:
            marks = _marks_now(store)  # before the ids: see update
            ids = _all_ids(store)
            cut = len(ids) if most is None else most
            if len(ids[:cut]) >= WARM_SESSIONS:
                expect_much_text()
            texts = Texts(batch=True)
            done = _run(conn, store, ids[:cut], marks, progress, ids[cut:], texts)
            texts.flush(conn)
            # One segment per level merged into one: fewer pages, faster queries.
            conn.execute("INSERT INTO docs (docs) VALUES ('optimize')")
            conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode = DELETE")
        finally:
            conn.close()
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    done.rebuilt = True
    return done
