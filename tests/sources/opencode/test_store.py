"""The opencode reader's stores: SQLite (WAL, locks, corruption), storage trees, sub-agents."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.model import TimelineSpan
from opencode_restore.sources.opencode import sqlite as opencode_sqlite
from opencode_restore.sources.opencode.reader import READER, list_sessions, read_session

SCHEMA = """
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
  slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
  model text, time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
"""

T0 = 1_795_000_000_000


def _session(conn: sqlite3.Connection, sid: str, title: str, parent: str | None, t: int) -> None:
    conn.execute(
        "INSERT INTO session VALUES (?, 'prj', ?, 'slug', '/repo', ?, '1.18.33', ?, ?, ?)",
        (sid, parent, title, '{"id": "coder-1", "providerID": "fakeai"}', T0 + t, T0 + t + 50),
    )


def _message(
    conn: sqlite3.Connection, sid: str, mid: str, t: int, info: Any, parts: list[Any]
) -> None:
    data = info if isinstance(info, str) else orjson.dumps(info).decode()
    conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, T0 + t, T0 + t, data))
    for n, part in enumerate(parts):
        pdata = part if isinstance(part, str) else orjson.dumps(part).decode()
        pid = f"prt_{mid[4:]}{n:03d}"
        conn.execute(
            "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (pid, mid, sid, T0 + t, T0 + t, pdata)
        )


def _user(text: str) -> tuple[dict[str, Any], list[Any]]:
    return {"role": "user", "time": {"created": T0}}, [{"type": "text", "text": text}]


def _assistant(*parts: Any) -> tuple[dict[str, Any], list[Any]]:
    info = {"role": "assistant", "modelID": "coder-1", "time": {"created": T0}}
    return info, list(parts)


def _task(child: str | None, output: str = "done") -> dict[str, Any]:
    state: dict[str, Any] = {
        "status": "completed",
        "input": {"description": "look around", "prompt": "explore", "subagent_type": "general"},
        "output": output,
        "time": {"start": T0, "end": T0 + 5},
    }
    if child:
        state["metadata"] = {"sessionId": child}
    return {"type": "tool", "tool": "task", "callID": "call_task", "state": state}


def _new_db(path: Path, *, wal: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=wal")
        conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.executescript(SCHEMA)
    conn.commit()
    return conn


def _subagent_db(path: Path) -> None:
    conn = _new_db(path)
    _session(conn, "ses_root", "Root work", None, 0)
    _session(conn, "ses_child", "look around (@general subagent)", "ses_root", 10)
    _session(conn, "ses_orphan", "orphan (@general subagent)", "ses_root", 20)
    _session(conn, "ses_grandchild", "deeper", "ses_child", 30)
    _session(conn, "ses_late", "later child", "ses_other_root", 90)
    _message(conn, "ses_root", "msg_a1", 1, *_user("Explore the repo"))
    _message(conn, "ses_root", "msg_a2", 2, *_assistant(_task("ses_child")))
    _message(conn, "ses_root", "msg_a3", 3, *_assistant({"type": "text", "text": "All explored."}))
    _message(conn, "ses_child", "msg_b1", 11, *_user("explore"))
    _message(conn, "ses_child", "msg_b2", 12, *_assistant(_task(None, "task_id: ses_grandchild")))
    _message(conn, "ses_grandchild", "msg_c1", 31, *_user("deeper"))
    _message(conn, "ses_orphan", "msg_d1", 21, *_user("orphan work"))
    conn.commit()
    conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reads_changes_still_in_the_wal_without_writing(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    writer = _new_db(db, wal=True)
    _session(writer, "ses_w", "In the WAL", None, 0)
    _message(writer, "ses_w", "msg_w1", 1, *_user("hello from the WAL"))
    writer.commit()  # the writer stays open: nothing is checkpointed into opencode.db
    try:
        peek = sqlite3.connect(f"{db.as_uri()}?immutable=1", uri=True)
        # Without the WAL, even the schema is missing: everything is still in the WAL.
        assert peek.execute("SELECT name FROM sqlite_master").fetchall() == []
        peek.close()
        before = (_digest(db), _digest(tmp_path / "opencode.db-wal"))
        sink = WarningSink()
        session = READER.read([db], sink)
        assert sink.warnings == []
        assert [m.text for m in session.messages()] == ["hello from the WAL"]
        assert (_digest(db), _digest(tmp_path / "opencode.db-wal")) == before
    finally:
        writer.close()


def test_real_db_with_its_wal_is_read_read_only(fixtures: Path, tmp_path: Path) -> None:
    src = fixtures / "opencode" / "recorded" / "run-noninteractive"
    for name in ("opencode.db", "opencode.db-wal"):
        shutil.copy(src / name, tmp_path / name)
    before = {p.name: _digest(p) for p in tmp_path.iterdir()}
    session = READER.read([tmp_path / "opencode.db"], WarningSink())
    assert len([m for m in session.messages() if m.is_human]) == 3
    after = {p.name: _digest(p) for p in tmp_path.iterdir() if p.name in before}
    assert after == before


def test_wal_mode_db_without_a_wal_file_creates_no_side_files(
    fixtures: Path, tmp_path: Path
) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(fixtures / "opencode" / "recorded" / "tui-compact" / "opencode.db", db)
    READER.read([db], WarningSink())
    assert READER.sniff(db, db.read_bytes()[:100]) == 0.95
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opencode.db"]


def test_locked_db_falls_back_to_an_unlocked_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(opencode_sqlite, "BUSY_TIMEOUT", 0.05)
    db = tmp_path / "opencode.db"
    conn = _new_db(db)
    _session(conn, "ses_l", "Locked", None, 0)
    _message(conn, "ses_l", "msg_l1", 1, *_user("committed before the lock"))
    conn.commit()
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("UPDATE session SET title = 'uncommitted'")
    try:
        sink = WarningSink()
        session = READER.read([db], sink)
    finally:
        conn.rollback()
        conn.close()
    assert [m.text for m in session.messages()] == ["committed before the lock"]
    assert session.title == "Locked"
    assert len(sink.warnings) == 1
    assert "locked" in sink.warnings[0].message
    assert "newest changes may be missing" in str(sink.warnings[0])


def test_corrupt_db_is_a_clear_source_error(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    db.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    assert READER.sniff(db, db.read_bytes()) == 0.0
    with pytest.raises(SourceError, match=r"opencode\.db"):
        READER.read([db], WarningSink())
    with pytest.raises(SourceError):
        list(READER.iter_messages([db], WarningSink()))


def test_other_sqlite_db_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE session (id text)")
    conn.commit()
    conn.close()
    assert READER.sniff(db, db.read_bytes()) == 0.0
    with pytest.raises(SourceError, match="not an opencode database \\(no message, part table\\)"):
        READER.read([db], WarningSink())


def test_empty_db_and_unknown_session(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    _new_db(db).close()
    with pytest.raises(SourceError, match="holds no session"):
        READER.read([db], WarningSink())
    with pytest.raises(SourceError, match=r"no session 'ses_x' here \(it holds none\)"):
        read_session(db, "ses_x", WarningSink())


def test_subagent_sessions_become_agent_spans(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    _subagent_db(db)
    session = READER.read([db], WarningSink())
    root = session.timeline.root
    assert session.id == "ses_root"
    assert root.name == "main"
    kinds = [
        item.id if isinstance(item, TimelineSpan) else item.message.type  # type: ignore[union-attr]
        for item in root.content
    ]
    assert kinds == ["text", "tool_use", "ses_child", "tool_result", "text", "ses_orphan"]
    child = next(root.spans())
    assert child.span_type == "agent"
    assert child.name == "look around (@general subagent)"
    assert child.meta["task_call"] == "prt_a2000"
    assert child.meta["parent_id"] == "ses_root"
    # The grandchild is linked through the `task_id:` line of the child's task output.
    assert [s.id for s in child.spans()] == ["ses_grandchild"]
    assert next(m.text for m in child.messages()) == "explore"
    assert [s.id for s in root.walk()] == ["ses_root", "ses_child", "ses_grandchild", "ses_orphan"]
    orphan = list(root.spans())[1]
    assert orphan.meta["task_call"] is None
    # Sub-agent messages are not part of the active conversation.
    assert [m.text for m in session.messages() if m.is_human] == ["Explore the repo"]
    listed = {s["id"]: s["parent_id"] for s in list_sessions(db)}
    assert listed["ses_child"] == "ses_root"
    assert listed["ses_root"] is None
    assert next(iter(list_sessions(db)))["id"] == "ses_late"


def test_bad_rows_are_reported_and_skipped(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    conn = _new_db(db)
    _session(conn, "ses_b", "Bad rows", None, 0)
    _message(conn, "ses_b", "msg_b1", 1, *_user("fine"))
    _message(conn, "ses_b", "msg_b2", 2, "{not json", [{"type": "text", "text": "orphan text"}])
    _message(
        conn, "ses_b", "msg_b3", 3, *_assistant('"just a string"', {"type": "text", "text": "ok"})
    )
    conn.commit()
    conn.close()
    sink = WarningSink()
    session = READER.read([db], sink)
    assert [(m.role, m.text) for m in session.messages()] == [
        ("user", "fine"),
        ("assistant", "orphan text"),
        ("assistant", "ok"),
    ]
    assert [w.message for w in sink.warnings] == [
        "message msg_b2: data is not a JSON object; role unknown",
        "part prt_b3000: data is not a JSON object; skipped",
    ]
    assert sink.warnings[0].path == str(db)


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(value if isinstance(value, bytes) else orjson.dumps(value))


def test_storage_tree_with_subagent_and_bad_files(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    _write(
        storage / "session/prj/ses_r.json",
        {"id": "ses_r", "title": "Root", "time": {"created": T0, "updated": T0 + 9}},
    )
    _write(
        storage / "session/prj/ses_k.json",
        {"id": "ses_k", "parentID": "ses_r", "time": {"created": T0 + 2, "updated": T0 + 99}},
    )
    _write(storage / "session/prj/broken.json", b"{oops")
    _write(
        storage / "message/ses_r/msg_1.json",
        {"id": "msg_1", "role": "user", "time": {"created": T0}},
    )
    _write(
        storage / "message/ses_r/msg_2.json",
        {"id": "msg_2", "role": "assistant", "time": {"created": T0 + 1}},
    )
    _write(storage / "message/ses_r/msg_3.json", [1, 2])
    _write(storage / "part/msg_1/prt_1.json", {"id": "prt_1", "type": "text", "text": "go"})
    _write(
        storage / "part/msg_2/prt_2.json",
        {
            "id": "prt_2",
            "type": "tool",
            "tool": "task",
            "state": {"status": "running", "metadata": {"sessionId": "ses_k"}},
        },
    )
    _write(
        storage / "message/ses_k/msg_9.json",
        {"id": "msg_9", "role": "user", "time": {"created": T0 + 3}},
    )
    _write(
        storage / "part/msg_9/prt_9.json", {"id": "prt_9", "type": "text", "text": "child prompt"}
    )
    sink = WarningSink()
    session = READER.read([tmp_path], sink)
    assert session.id == "ses_r"
    content = session.timeline.root.content
    ids = [c.id if isinstance(c, TimelineSpan) else c.uuid for c in content]
    assert ids == ["prt_1", "prt_2", "ses_k"]
    broken, not_object = sink.warnings
    assert broken.path.endswith("broken.json")
    assert broken.message.startswith("invalid JSON (")
    assert not_object.path.endswith("msg_3.json")
    assert not_object.message == "not a JSON object; skipped"


def test_unusable_paths_are_source_errors(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        READER.read([tmp_path / "missing.db"], WarningSink())
    with pytest.raises(SourceError, match="no opencode storage"):
        READER.read([tmp_path], WarningSink())
    with pytest.raises(SourceError, match="no input files"):
        READER.read([], WarningSink())
    with pytest.raises(SourceError, match="no input files"):
        list(READER.iter_messages([], WarningSink()))
    bad = tmp_path / "storage" / "session" / "prj" / "ses_bad.json"
    _write(bad, b"[]")
    (tmp_path / "storage" / "message").mkdir()
    with pytest.raises(SourceError, match="not an opencode session file"):
        READER.read([bad], WarningSink())


def test_ids_from_file_contents_cannot_leave_the_tree(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    _write(storage / "session/prj/ses_s.json", {"id": "ses_s", "time": {"created": T0}})
    _write(storage / "message/ses_s/msg_1.json", {"id": "../../outside", "role": "user"})
    _write(storage / "part/msg_1/prt_1.json", {"id": "prt_1", "type": "text", "text": "inside"})
    _write(tmp_path / "outside/prt_x.json", {"id": "prt_x", "type": "text", "text": "outside"})
    session = READER.read([storage], WarningSink())
    # The unsafe id is replaced by the file's name, so the parts come from part/msg_1/.
    assert [m.text for m in session.messages()] == ["inside"]
    assert session.messages()[0].group == "msg_1"


def test_open_failures_are_source_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "opencode.db"
    _subagent_db(db)
    assert READER.sniff(tmp_path / "gone.db", opencode_sqlite.SQLITE_MAGIC) == 0.0
    store = opencode_sqlite.DbStore(db, WarningSink())
    store.close()
    with pytest.raises(SourceError, match="database read failed"):
        store.sessions()

    def refuse(path: Path, query: str) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(opencode_sqlite, "_connect", refuse)
    sink = WarningSink()
    with pytest.raises(SourceError, match="cannot open the database"):
        READER.read([db], sink)
    assert "cannot open read-only (unable to open database file)" in sink.warnings[0].message


def test_parent_cycles_do_not_recurse(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    conn = _new_db(db)
    _session(conn, "ses_a", "A", "ses_b", 0)
    _session(conn, "ses_b", "B", "ses_a", 10)
    _session(conn, "ses_c", "C", "ses_c", 5)
    _message(conn, "ses_a", "msg_a1", 1, *_user("in A"))
    conn.commit()
    conn.close()
    # No session lacks a parent: every one is a candidate, and one must be named.
    with pytest.raises(SourceError, match="holds 3 sessions"):
        READER.read([db], WarningSink())
    session = READER.read([db], WarningSink(), session="ses_b")
    assert [s.id for s in session.timeline.root.walk()] == ["ses_b", "ses_a"]
    own_parent = read_session(db, "ses_c", WarningSink())
    assert [s.id for s in own_parent.timeline.root.walk()] == ["ses_c"]
