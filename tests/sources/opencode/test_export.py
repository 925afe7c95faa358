"""`opencode export` quirks (junk prefix, truncation), event streams, and fuzzing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.sources.opencode.files import EventStore
from opencode_restore.sources.opencode.reader import READER

FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def export_bytes(fixtures: Path) -> bytes:
    return (fixtures / "opencode" / "recorded" / "tui-compact" / "export.json").read_bytes()


@pytest.fixture
def full_ids(fixtures: Path) -> list[str]:
    path = fixtures / "opencode" / "recorded" / "tui-compact" / "export.json"
    return [m.id for m in READER.read([path], WarningSink()).messages()]


def _write(tmp_path: Path, data: bytes, name: str = "export.json") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_junk_before_the_export_is_reported_and_skipped(
    tmp_path: Path, export_bytes: bytes, full_ids: list[str]
) -> None:
    junk = b"Exporting session: ses_e021ac976ffeprCgfn115CWSLu\n"
    path = _write(tmp_path, junk + export_bytes)
    assert READER.sniff(path, path.read_bytes()) == 0.9
    sink = WarningSink()
    session = READER.read([path], sink)
    assert [m.id for m in session.messages()] == full_ids
    assert [(w.line, w.message) for w in sink.warnings] == [
        (1, f"skipped {len(junk)} bytes before the first '{{'")
    ]


def test_truncated_export_keeps_the_complete_messages(
    tmp_path: Path, export_bytes: bytes, full_ids: list[str]
) -> None:
    cut = export_bytes.index(b'"Also mention the new flag')  # inside turn 2's user message
    path = _write(tmp_path, export_bytes[:cut])
    sink = WarningSink()
    session = READER.read([path], sink)
    ids = [m.id for m in session.messages()]
    assert ids == full_ids[: len(ids)]
    assert [m.text for m in session.messages() if m.is_human] == [
        "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a test for it."
    ]
    (warning,) = sink.warnings
    assert warning.line == export_bytes[:cut].count(b"\n") + 1
    assert warning.message.startswith("export is truncated or invalid (")
    assert warning.message.endswith("; kept 7 messages")


def test_export_cut_inside_the_session_info_is_an_error(
    tmp_path: Path, export_bytes: bytes
) -> None:
    path = _write(tmp_path, export_bytes[:200])
    with pytest.raises(SourceError, match="no session info"):
        READER.read([path], WarningSink())


@pytest.mark.parametrize(
    ("doc", "warnings"),
    [
        ({"info": {"id": "ses_1"}, "messages": {"oops": 1}}, ["export has no messages list"]),
        (
            {"info": {"id": "ses_1"}, "messages": [7, {"info": {}, "parts": "x"}]},
            ["message #1 has no parts list; skipped", "message #2 has no parts list; skipped"],
        ),
        (
            {"info": {"id": "ses_1"}, "messages": [{"info": {"role": "user"}, "parts": [1]}]},
            ["message #1: non-object parts skipped"],
        ),
    ],
)
def test_malformed_export_messages_are_reported(
    tmp_path: Path, doc: object, warnings: list[str]
) -> None:
    sink = WarningSink()
    session = READER.read([_write(tmp_path, orjson.dumps(doc))], sink)
    assert session.messages() == []
    assert [w.message for w in sink.warnings] == warnings


def test_files_that_are_not_exports(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no JSON object found"):
        READER.read([_write(tmp_path, b"Error: session not found\n")], WarningSink())
    with pytest.raises(SourceError, match="no session info"):
        READER.read([_write(tmp_path, b'{"messages": []}')], WarningSink())
    opencode_dir = tmp_path / "share"
    opencode_dir.mkdir()
    (opencode_dir / "opencode.db").write_text("not sqlite")
    with pytest.raises(SourceError, match="not a SQLite database"):
        READER.read([opencode_dir], WarningSink())


def test_db_without_the_expected_columns_fails_clearly(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE session (id text); CREATE TABLE message (id text);"
        "CREATE TABLE part (id text); INSERT INTO session VALUES ('ses_1');"
    )
    conn.commit()
    conn.close()
    with pytest.raises(SourceError, match="database read failed"):
        READER.read([db], WarningSink())


def test_event_stream_errors_and_bad_lines(tmp_path: Path) -> None:
    lines = [
        {
            "type": "step_start",
            "timestamp": 1,
            "sessionID": "ses_1",
            "part": {"type": "step-start"},
        },
        {
            "type": "text",
            "sessionID": "ses_1",
            "part": {"id": "prt_1", "type": "text", "text": "hi"},
        },
        {"type": "error", "timestamp": 1795261084233, "sessionID": "ses_1", "error": {"name": "E"}},
        {"type": "mystery", "sessionID": "ses_1"},
    ]
    data = b"\n".join(orjson.dumps(line) for line in lines) + b"\n{broken\n"
    path = _write(tmp_path, data, "events.jsonl")
    sink = WarningSink()
    session = READER.read([path], sink)
    assert [(m.id, m.text, m.is_error, m.entry_index) for m in session.messages()] == [
        ("prt_1", "hi", False, 2),
        ("line:3:error", "E", True, 3),
    ]
    mystery, broken = sink.warnings
    assert (mystery.line, mystery.message) == (4, "event 'mystery' has no part; skipped")
    assert broken.line == 5
    assert broken.message.startswith("invalid JSON (")


def test_event_store_needs_a_session_id(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no opencode event names its session"):
        EventStore(_write(tmp_path, b'{"type": "text"}\n', "e.jsonl"), WarningSink())


def _read_or_source_error(path: Path) -> list[str] | None:
    try:
        return [m.id for m in READER.read([path], WarningSink()).messages()]
    except SourceError:
        return None


@FUZZ
@given(data=st.binary(max_size=400))
def test_fuzz_any_bytes_read_or_fail_cleanly(tmp_path: Path, data: bytes) -> None:
    path = _write(tmp_path, data)
    assert 0.0 <= READER.sniff(path, data) <= 1.0
    _read_or_source_error(path)


def _plain_junk(junk: bytes) -> bool:
    """Junk a terminal could print before the export (not the start of a SQLite file)."""
    return b"{" not in junk and not junk.startswith(b"SQLite")


@FUZZ
@given(body=st.binary(max_size=300), junk=st.binary(max_size=20).filter(_plain_junk))
def test_fuzz_export_shaped_bytes(tmp_path: Path, body: bytes, junk: bytes) -> None:
    head = b'{"info": {"id": "ses_f", "title": "t"}, "messages": [{"info": {"role": "user"}, '
    ids = _read_or_source_error(_write(tmp_path, junk + head + body))
    assert ids is not None  # the session info is always complete here


@FUZZ
@given(fraction=st.floats(min_value=0.0, max_value=1.0))
def test_fuzz_truncated_real_export_yields_a_prefix(
    tmp_path: Path, export_bytes: bytes, full_ids: list[str], fraction: float
) -> None:
    ids = _read_or_source_error(_write(tmp_path, export_bytes[: int(len(export_bytes) * fraction)]))
    if ids is not None:
        assert ids == full_ids[: len(ids)]


@FUZZ
@given(data=st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["id", "type", "text", "state", "status", "tool", "parts", "info",
                         "role", "summary", "time", "tokens", "error", "files", "callID"]),
        inner, max_size=4,
    ),
    max_leaves=25,
))  # fmt: skip
def test_fuzz_arbitrary_export_structure(tmp_path: Path, data: object) -> None:
    doc = {"info": {"id": "ses_f"}, "messages": [data, {"info": data, "parts": [data, data]}]}
    # json, not orjson: integers beyond 64 bits must be survivable too.
    path = _write(tmp_path, json.dumps(doc).encode())
    assert _read_or_source_error(path) is not None
