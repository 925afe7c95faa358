"""The SQLite layer: migrations, WAL, locking and the transcript chain rule (seed 004 FR1)."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.store.db import (
    MIGRATIONS,
    SCHEMA_VERSION,
    connect,
    iso_utc,
    record_transcript,
    retry,
    write,
)


def test_connect_creates_schema_in_wal_mode(tmp_path: Path) -> None:
    conn = connect(tmp_path / "sub" / "store.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {
        "sessions",
        "transcript_files",
        "restorations",
        "runs",
        "file_index",
        "checkpoints",
    } <= tables
    conn.close()


def test_migrations_apply_step_by_step(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.execute(
        "INSERT INTO sessions (id, agent, created_at, updated_at) VALUES ('s', 'codex', 'a', 'b')"
    )
    old.commit()
    old.close()
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    assert conn.execute("SELECT id FROM sessions").fetchall() == [("s",)]
    assert conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM scanned_files").fetchone()[0] == 0
    conn.close()


def test_a_restoration_saved_before_the_redacted_column_counts_as_not_redacted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite3"
    old = sqlite3.connect(path)
    for step in MIGRATIONS[:3]:
        old.executescript(step)
    old.execute("PRAGMA user_version = 3")
    old.execute(
        "INSERT INTO sessions (id, agent, created_at, updated_at) VALUES ('s', 'codex', 'a', 'b')"
    )
    old.execute("INSERT INTO restorations (session_id, created_at) VALUES ('s', 'c')")
    old.commit()
    old.close()
    conn = connect(path)
    assert conn.execute("SELECT redacted FROM restorations").fetchall() == [(0,)]
    conn.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    sqlite3.connect(path).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}").connection.close()
    with pytest.raises(sqlite3.DatabaseError, match="newer than this program"):
        connect(path)


def test_chain_keeps_old_paths_and_native_log_file_is_latest(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite3")
    assert record_transcript(conn, "S1", "claude-code", "/a/one.jsonl", cwd="/w")
    assert not record_transcript(conn, "S1", "claude-code", "/a/one.jsonl")  # same path again
    assert record_transcript(conn, "S1", "claude-code", "/a/two.jsonl")
    # An old path reported again keeps its place and does not move native_log_file back.
    assert not record_transcript(conn, "S1", "claude-code", "/a/one.jsonl")
    rows = conn.execute(
        "SELECT position, path FROM transcript_files WHERE session_id = 'S1' ORDER BY position"
    ).fetchall()
    assert rows == [(0, "/a/one.jsonl"), (1, "/a/two.jsonl")]
    native, cwd = conn.execute("SELECT native_log_file, cwd FROM sessions").fetchone()
    assert native == "/a/two.jsonl"
    assert cwd == "/w"
    conn.close()


def test_session_without_path_and_first_title_wins(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite3")
    assert not record_transcript(conn, "S", "codex", None, title="first", event="start")
    record_transcript(conn, "S", "codex", None, title="second", event=None)
    title, event, native = conn.execute(
        "SELECT title, last_event, native_log_file FROM sessions"
    ).fetchone()
    assert (title, event, native) == ("first", "start", None)
    conn.close()


def test_created_and_updated_times_widen(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite3")
    record_transcript(conn, "S", "pi", "/p", created_at="2026-01-02", updated_at="2026-01-03")
    record_transcript(conn, "S", "pi", "/p", created_at="2026-01-01", updated_at="2026-01-02")
    assert conn.execute("SELECT created_at, updated_at FROM sessions").fetchone() == (
        "2026-01-01",
        "2026-01-03",
    )
    conn.close()


def test_write_rolls_back_on_error(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite3")

    def boom(c: sqlite3.Connection) -> None:
        c.execute("INSERT INTO runs (id, kind, status, created_at) VALUES ('r', 'k', 'q', 'n')")
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        write(conn, boom)
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    conn.close()


def test_retry_retries_locked_and_reraises_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("opencode_restore.store.db.time.sleep", lambda _s: None)
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "ok"

    assert retry(flaky) == "ok"
    assert len(calls) == 3

    def broken() -> None:
        raise sqlite3.OperationalError("no such table: nope")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry(broken)

    def always_locked() -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry(always_locked)


def test_threads_appending_to_one_chain_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    connect(path).close()
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            conn = connect(path)
            record_transcript(conn, "S", "claude-code", f"/t/{k}.jsonl")
            conn.close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    conn = connect(path)
    positions = [
        r[0] for r in conn.execute("SELECT position FROM transcript_files ORDER BY position")
    ]
    assert positions == list(range(20))
    conn.close()


def test_iso_utc_is_fixed_width_and_sorts() -> None:
    a = iso_utc(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    b = iso_utc(datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC))
    assert a == "2026-01-02T03:04:05.000000Z"
    assert b == "2026-01-02T03:04:05.120000Z"
    assert a < b


@given(
    st.datetimes(timezones=st.just(UTC)),
    st.integers(-23 * 60, 23 * 60),
)
def test_iso_utc_writes_what_strftime_writes(when: datetime, minutes: int) -> None:
    # In another zone too (the same instant): iso_utc turns it to UTC first.
    zone = timezone(timedelta(minutes=minutes))
    for ts in (when, when.astimezone(zone) if 1 < when.year < 9999 else when):
        expected = ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert iso_utc(ts) == expected
