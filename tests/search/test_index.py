"""The search index: build, incremental growth, truncation, rebuild, redaction."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.search import index as search_index
from opencode_restore.search.index import before_query, catch_up, index_path, rebuild, update
from opencode_restore.search.query import search
from opencode_restore.search.rows import message_rows
from opencode_restore.sources import iter_messages
from opencode_restore.store.fetch import session_messages
from opencode_restore.store.store import Store
from opencode_restore.timeline.numbering import Labeler
from tests.search.helpers import (
    CLAUDE_ID,
    append_lines,
    claude_session,
    codex_session,
    rows_of,
)
from tests.store.builders import CLAUDE_COMPACT, FIXTURES, copy_to


def test_build_indexes_every_session_with_the_labels_messages_shows(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    log = claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    done = update(store, index_path(data_dir))
    assert (done.sessions, done.rebuilt) == (2, True)
    hits = search(index_path(data_dir), '"Show diff stat"')
    assert hits
    assert hits[0].session_id == CLAUDE_ID
    assert hits[0].kind == "command"
    # The label is the one `messages --label` gives the same message.
    labeler = Labeler()
    labels = {}
    for m in iter_messages([log], WarningSink()):
        label = labeler.label(m)
        if label is not None:
            labels[label] = m
    cited = labels[hits[0].label or ""]
    assert cited.tool_input is not None
    assert "Show diff stat" in str(cited.tool_input)
    assert {h.agent for h in search(index_path(data_dir), "greet", limit=100)} == {
        "claude-code",
        "codex",
    }


def served_rows(store: Store) -> list[tuple[object, ...]]:
    """Every session's rows made from its messages as the API serves them (labelled, then
    redacted whole), as ``rows_of`` lists an index's."""
    rows: list[tuple[object, ...]] = []
    for session_id in sorted(r[0] for r in store.conn.execute("SELECT id FROM sessions")):
        row = store.session(session_id)
        assert row is not None
        labeler = Labeler()
        fetch = session_messages(
            store, row, WarningSink(), include_tools=True, include_thinking=True, labeler=labeler
        )
        for m, label in fetch.labelled:
            if label is not None:
                for r in message_rows(m, int(label[1:]), lambda text: text):
                    rows.append((session_id, r.label, r.kind, r.role, r.time, r.text))
    return sorted(rows, key=json.dumps)


def test_a_build_indexes_the_messages_as_the_api_serves_them(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    log = copy_to(FIXTURES / "hostile" / "secrets.jsonl", tmp_path / "logs")
    store.register("qa-secrets-0001", "claude-code", str(log), cwd="/home/dev/greet")
    rebuild(store, index_path(data_dir))
    indexed = rows_of(index_path(data_dir))
    assert len(indexed) > 50
    assert any("[REDACTED:" in str(r[5]) for r in indexed)
    assert indexed == served_rows(store)


def _segments_written(index: Path) -> int:
    """How many segments FTS5 wrote into ``docs``: the write counter of its structure
    record (a 4-byte cookie, then varints: levels, segments, the counter)."""
    with sqlite3.connect(index) as conn:
        block = conn.execute("SELECT block FROM docs_data WHERE id = 10").fetchone()[0]
    values, value = [], 0
    for byte in block[4:]:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            values.append(value)
            value = 0
            if len(values) == 3:
                break
    return int(values[2])


def test_a_build_writes_its_texts_in_rowid_order(
    store: Store, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    index = index_path(data_dir)
    rebuild(store, index)
    # One batch and the optimize: FTS5 starts a segment at every rowid lower than the one
    # before, and the codes interleave a session's rowids (31 segments written as they came).
    assert _segments_written(index) <= 3
    # Batches of a few rows hold every row once, each text under its entry's rowid.
    monkeypatch.setattr(search_index.Texts, "BATCH_CHARS", 200)
    rebuild(store, index)
    assert _segments_written(index) > 3
    assert rows_of(index) == served_rows(store)
    with sqlite3.connect(index) as conn:
        counts = conn.execute("SELECT (SELECT COUNT(*) FROM docs), COUNT(*) FROM entries")
        assert counts.fetchone() == (len(served_rows(store)),) * 2


def test_a_build_of_many_sessions_compiles_the_redactor_scan_first(
    store: Store, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    warmed: list[bool] = []
    monkeypatch.setattr(search_index, "expect_much_text", lambda: warmed.append(True))
    monkeypatch.setattr(search_index, "WARM_SESSIONS", 3)
    rebuild(store, index_path(data_dir))
    assert not warmed
    monkeypatch.setattr(search_index, "WARM_SESSIONS", 2)
    rebuild(store, index_path(data_dir))
    assert warmed == [True]


def test_an_unchanged_store_reads_nothing_again(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    claude_session(store, tmp_path / "logs")
    update(store, index_path(data_dir))
    again = update(store, index_path(data_dir))
    assert (again.sessions, again.rows, again.rebuilt) == (0, 0, False)


def test_a_grown_file_adds_only_its_new_messages(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    log = claude_session(store, tmp_path / "logs", lines=30)
    index = index_path(data_dir)
    first = update(store, index)
    append_lines(log, CLAUDE_COMPACT, 30)
    grown = update(store, index, [CLAUDE_ID])
    assert grown.rows > 0
    # Exactly what a fresh index of the whole file holds: nothing twice, nothing missed.
    whole = tmp_path / "whole" / "search.sqlite3"
    update(store, whole)
    assert rows_of(index) == rows_of(whole)
    assert first.rows + grown.rows == len(rows_of(whole))


def test_a_truncated_or_replaced_file_is_indexed_again(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    log = claude_session(store, tmp_path / "logs")
    index = index_path(data_dir)
    update(store, index)
    head = CLAUDE_COMPACT.read_text(encoding="utf-8").splitlines(keepends=True)[:30]
    log.write_text("".join(head), encoding="utf-8")
    update(store, index)
    fresh = tmp_path / "fresh" / "search.sqlite3"
    update(store, fresh)
    assert rows_of(index) == rows_of(fresh)
    assert not search(index, '"Show diff stat"')


def test_an_old_schema_or_a_corrupt_file_is_rebuilt(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    claude_session(store, tmp_path / "logs")
    index = index_path(data_dir)
    update(store, index)
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
    assert update(store, index).rebuilt
    assert search(index, "greet")
    index.write_bytes(b"this is not a database" * 100)
    done = catch_up(store, index)
    assert done.rebuilt
    assert done.rows > 0
    assert search(index, "greet")
    assert not update(store, index).rebuilt


def test_rebuild_replaces_the_file_whole(store: Store, data_dir: Path, tmp_path: Path) -> None:
    claude_session(store, tmp_path / "logs")
    index = index_path(data_dir)
    update(store, index)
    before = rows_of(index)
    done = rebuild(store, index)
    assert done.rebuilt
    assert rows_of(index) == before
    assert [p.name for p in index.parent.glob("search.sqlite3*")] == [index.name]


def test_catch_up_indexes_sessions_a_hook_touched_and_new_restorations(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    index = index_path(data_dir)
    catch_up(store, index)
    assert not search(index, "greet")
    claude_session(store, tmp_path / "logs")  # what the hook does: register, touch
    assert catch_up(store, index).sessions == 1
    assert catch_up(store, index).sessions == 0
    store.add_restoration(
        CLAUDE_ID,
        provider="offline",
        summary_markdown=None,
        summary={
            "summary": {
                "goal": "Add a shout flag to the greeter [M2]",
                "key_decisions": [{"decision": "Use argparse store_true", "reason": "[M5]"}],
                "progress": {"done": ["flag added [M9]"], "in_progress": []},
                "stood_in": ["goal"],
            }
        },
        usage=None,
        errors=None,
    )
    assert catch_up(store, index).rows == 3
    decision = search(index, "argparse", kinds=frozenset({"decision"}))
    assert [(h.kind, h.label) for h in decision] == [("decision", "M5")]
    assert search(index, "shout flag greeter")[0].kind == "summary"


def test_no_secret_of_a_log_reaches_the_index_file(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    log = claude_session(store, tmp_path / "logs")
    text = log.read_text(encoding="utf-8").replace("Show diff stat", f"token {secret} stat")
    log.write_text(text, encoding="utf-8")
    index = index_path(data_dir)
    update(store, index)
    assert search(index, "stat token")
    raw = b"".join(p.read_bytes() for p in index.parent.glob("search.sqlite3*"))
    assert secret.encode() not in raw
    assert b"a1B2c3D4e5F6g7H8" not in raw


def test_a_build_that_fails_leaves_the_index_it_replaces_whole(
    store: Store, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_session(store, tmp_path / "logs")
    index = index_path(data_dir)
    update(store, index)
    before = rows_of(index)

    def broken(*args: object) -> int:
        raise sqlite3.OperationalError("disk full")

    monkeypatch.setattr(search_index, "index_session", broken)
    with pytest.raises(sqlite3.OperationalError):
        rebuild(store, index)
    assert rows_of(index) == before
    assert [p.name for p in index.parent.glob("search.sqlite3*")] == [index.name]


def test_a_build_removes_the_files_of_killed_builds_only(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    claude_session(store, tmp_path / "logs")
    index = index_path(data_dir)
    update(store, index)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    assert dead.wait() == 0  # reaped: its pid names no process now
    killed = index.with_name(f"{index.name}.new-{dead.pid}")
    running = index.with_name(f"{index.name}.new-{os.getppid()}")  # a live process's build
    for p in (killed, running):
        p.write_bytes(b"half an index")
    rebuild(store, index)
    assert not killed.exists()
    assert running.read_bytes() == b"half an index"
    assert search(index, '"Show diff stat"')


def test_a_bounded_catch_up_leaves_the_rest_for_the_next(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    index = index_path(data_dir)
    catch_up(store, index)
    claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    first = catch_up(store, index, most=1)
    assert (first.sessions, first.left) == (1, 1)
    # Nothing changed in the store since: the one left over is still found, and indexed.
    second = catch_up(store, index, most=1)
    assert (second.sessions, second.left) == (1, 0)
    assert {h.agent for h in search(index, "greet", limit=100)} == {"claude-code", "codex"}
    assert catch_up(store, index, most=1) == catch_up(store, index)


def test_before_query_serves_what_is_there_while_another_writer_holds_the_index(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    index = index_path(data_dir)
    claude_session(store, tmp_path / "logs")
    assert before_query(store, index) is not None
    codex_session(store, tmp_path / "logs")
    writer = sqlite3.connect(index, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # as a build in another process holds it
    try:
        assert before_query(store, index) is None
        assert {h.agent for h in search(index, "greet", limit=100)} == {"claude-code"}
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    done = before_query(store, index)
    assert done is not None
    assert done.sessions == 1


def test_a_bounded_catch_up_of_a_missing_index_builds_it_with_the_rest_pending(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    index = index_path(data_dir)
    claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    first = catch_up(store, index, most=1)
    assert (first.rebuilt, first.sessions, first.left) == (True, 1, 1)
    second = catch_up(store, index, most=1)
    assert (second.rebuilt, second.sessions, second.left) == (False, 1, 0)
    assert {h.agent for h in search(index, "greet", limit=100)} == {"claude-code", "codex"}


def assert_spans(index: Path) -> None:
    """Each session's span as `search.index._insert` keeps it: its row count exact, its
    times and sequences covering its every row, and, when its rows are as many as the
    sequences of its span, every row of the span its own."""
    with sqlite3.connect(index) as conn:
        sessions = conn.execute(
            "SELECT sid, first_time, last_time, first_seq, last_seq, row_count FROM sessions"
        ).fetchall()
        for sid, first_time, last_time, first_seq, last_seq, count in sessions:
            own = conn.execute(
                f"SELECT id & {search_index.SEQ_MASK}, time FROM entries WHERE sid = ?", (sid,)
            ).fetchall()
            assert count == len(own)
            for seq, time in own:
                assert first_seq <= seq <= last_seq
                assert (time or "") >= first_time
                assert time is None or time <= last_time
            if count and last_seq - first_seq + 1 == count:
                between = conn.execute(
                    f"SELECT DISTINCT sid FROM entries WHERE id & {search_index.SEQ_MASK}"
                    " BETWEEN ? AND ?",
                    (first_seq, last_seq),
                ).fetchall()
                assert between == [(sid,)]


def test_each_session_s_span_covers_its_rows_through_growth_truncation_and_restorations(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    log = claude_session(store, tmp_path / "logs", lines=30)
    codex_session(store, tmp_path / "logs")
    index = index_path(data_dir)
    update(store, index)
    assert_spans(index)
    append_lines(log, CLAUDE_COMPACT, 30)  # its new rows come after the Codex session's
    update(store, index, [CLAUDE_ID])
    assert_spans(index)
    for goal in ("Add a shout flag [M2]", "Add a whisper flag [M3]"):  # the second replaces
        store.add_restoration(
            CLAUDE_ID,
            provider="offline",
            summary_markdown=None,
            summary={"summary": {"goal": goal, "stood_in": ["goal"]}},
            usage=None,
            errors=None,
        )
        catch_up(store, index)
        assert_spans(index)
    head = CLAUDE_COMPACT.read_text(encoding="utf-8").splitlines(keepends=True)[:20]
    log.write_text("".join(head), encoding="utf-8")
    update(store, index)
    assert_spans(index)
    with sqlite3.connect(index) as conn:
        spans = conn.execute("SELECT first_time, last_time FROM sessions").fetchall()
    assert all(first and last for first, last in spans)


def test_the_next_sequence_number_follows_the_highest_of_every_code(tmp_path: Path) -> None:
    conn = search_index.begin_build(tmp_path / "search.sqlite3")
    assert search_index._next_seq(conn) == 1
    for code, seq in ((3, 7), (0, 5), (len(search_index.CODES) - 1, 2)):
        conn.execute(
            "INSERT INTO entries (id, sid, kind) VALUES (?, 1, 'message')",
            (search_index.rowid_of(code, seq),),
        )
    assert search_index._next_seq(conn) == 8
    conn.close()
