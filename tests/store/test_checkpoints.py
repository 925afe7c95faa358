"""The checkpoint index and Claude Code tail reads: same messages as a full read, less reading."""

from __future__ import annotations

import itertools
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.report.messages import message_record
from opencode_restore.sources import filter_messages, iter_messages
from opencode_restore.sources.base import Checkpoint
from opencode_restore.sources.claude_code.reader import READER as CLAUDE
from opencode_restore.sources.claude_code.tail import read_tail as claude_tail
from opencode_restore.store import checkpoints as cp
from opencode_restore.store.checkpoints import tail_start, update_index
from opencode_restore.store.fetch import session_messages
from opencode_restore.store.store import Store
from tests.store.builders import (
    CLAUDE_COMPACT,
    CLAUDE_REWIND,
    CLAUDE_SPOTTER,
    FIXTURES,
    copy_to,
    line_of,
    split_file,
)

CLAUDE_FILES = sorted(
    p for p in (FIXTURES / "claude-code").rglob("*.jsonl") if "subagents" not in p.parts
)


def checkpoints(store: Store, path: Path) -> list[tuple[int, int, float | None]]:
    """The index rows of ``path`` as stored: (offset, line, max_ts_before), in file order."""
    rows = store.conn.execute(
        "SELECT offset, line, max_ts_before FROM checkpoints WHERE path = ? ORDER BY offset",
        (str(path),),
    ).fetchall()
    return [(int(o), int(n), ts) for o, n, ts in rows]


def _records(messages: object) -> list[dict[str, object]]:
    return [message_record(m) for m in messages]  # type: ignore[attr-defined]


def _expected(files: list[Path], since: datetime) -> list[dict[str, object]]:
    full = iter_messages(files, WarningSink(), "claude-code")
    return _records(filter_messages(full, since=since, include_tools=True, include_thinking=True))


def _fetch(store: Store, sid: str, since: datetime) -> tuple[list[dict[str, object]], str]:
    row = store.session(sid)
    assert row is not None
    fetch = session_messages(
        store, row, WarningSink(), since=since, include_tools=True, include_thinking=True
    )
    return _records(fetch.messages), fetch.mode


@pytest.mark.slow
@pytest.mark.parametrize("path", CLAUDE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_since_read_equals_filtered_full_read(store: Store, path: Path) -> None:
    """Every Claude Code fixture, at every 1/40th of its timestamps: identical output."""
    store.register("S", "claude-code", str(path))
    stamps = sorted(
        {m.timestamp for m in iter_messages([path], WarningSink(), "claude-code") if m.timestamp}
    )
    step = max(1, len(stamps) // 40)
    for since in stamps[::step]:
        got, _mode = _fetch(store, "S", since)
        assert got == _expected([path], since), f"since={since}"


def test_large_session_is_served_from_the_tail(store: Store) -> None:
    store.register("S", "claude-code", str(CLAUDE_SPOTTER))
    stamps = sorted(
        m.timestamp
        for m in iter_messages([CLAUDE_SPOTTER], WarningSink(), "claude-code")
        if m.timestamp
    )
    since = stamps[-11]
    got, mode = _fetch(store, "S", since)
    assert mode == "tail"
    assert len(got) == 10
    assert got == _expected([CLAUDE_SPOTTER], since)
    # The tail read started at a checkpoint far into the 2.7 MB file.
    start = tail_start(store.conn, CLAUDE_SPOTTER, since.timestamp())
    assert start is not None
    assert start.offset > CLAUDE_SPOTTER.stat().st_size // 2


def test_index_grows_incrementally_and_resets_on_shrink(store: Store, tmp_path: Path) -> None:
    src = CLAUDE_SPOTTER.read_bytes().splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"".join(src[:900]))
    state = update_index(store.conn, path, CLAUDE)
    assert state is not None
    assert (state.indexed_bytes, state.indexed_lines) == (path.stat().st_size, 900)
    first = checkpoints(store, path)
    assert first[0] == (0, 1, None)
    assert all(b[0] - a[0] >= cp.CHECKPOINT_EVERY for a, b in itertools.pairwise(first))
    # max_ts_before never decreases along the file.
    befores = [c[2] or 0.0 for c in first[1:]]
    assert befores == sorted(befores)

    # Append the rest plus half a line that is still being written.
    with path.open("ab") as fh:
        fh.write(b"".join(src[900:]))
        fh.write(src[0][:40])
    seen: list[int] = []
    real_open = Path.open

    def spy(self: Path, *args: object, **kwargs: object) -> object:
        fh = real_open(self, *args, **kwargs)  # type: ignore[call-overload]
        seen.append(id(fh))
        original_seek = fh.seek

        def seek(offset: int, *a: object) -> int:
            seen.append(offset)
            return int(original_seek(offset, *a))

        fh.seek = seek
        return fh

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "open", spy)
        state = update_index(store.conn, path, CLAUDE)
    assert state is not None
    # Only the new bytes were read: the update seeked to where the last one stopped.
    assert sum(len(line) for line in src[:900]) in seen
    assert state.indexed_lines == len(src)  # the unfinished line waits
    assert state.indexed_bytes == sum(len(line) for line in src)
    grown = checkpoints(store, path)
    assert grown[: len(first)] == first
    assert len(grown) > len(first)
    # Nothing new: nothing rewritten.
    assert update_index(store.conn, path, CLAUDE) == state

    # The file was replaced by a shorter one: indexed again from the start.
    path.write_bytes(b"".join(src[:10]))
    state = update_index(store.conn, path, CLAUDE)
    assert state is not None
    assert state.indexed_lines == 10
    assert checkpoints(store, path) == [(0, 1, None)]


def test_replaced_file_with_new_inode_is_reindexed(store: Store, tmp_path: Path) -> None:
    path = copy_to(CLAUDE_COMPACT, tmp_path)
    update_index(store.conn, path, CLAUDE)
    other = copy_to(CLAUDE_SPOTTER, tmp_path, "other.jsonl")
    os.replace(other, path)  # same name, other inode, bigger
    state = update_index(store.conn, path, CLAUDE)
    assert state is not None
    assert state.indexed_bytes == CLAUDE_SPOTTER.stat().st_size


def test_unreadable_file_has_no_index(store: Store, tmp_path: Path) -> None:
    assert update_index(store.conn, tmp_path / "missing.jsonl", CLAUDE) is None
    assert tail_start(store.conn, tmp_path / "missing.jsonl", 0.0) is None


def test_last_line_without_newline_counts_when_whole(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(CLAUDE_COMPACT.read_bytes().rstrip(b"\n"))
    state = update_index(store.conn, path, CLAUDE)
    assert state is not None
    assert state.indexed_bytes == path.stat().st_size


def test_rewind_in_the_tail_falls_back_to_full_read(store: Store, tmp_path: Path) -> None:
    """dag_compact_after_rewind: a prompt re-asked under an older entry must not leak."""
    path = copy_to(CLAUDE_REWIND, tmp_path)
    # The rewind's new prompt (line 5) hangs under line 2, like the abandoned line 3.
    starts = [Checkpoint(offset=_offset(path, 3), lines_before=2)]
    assert claude_tail([path], starts, WarningSink()) is None
    # From the rewind on, the tail is a plain continuation again.
    starts = [Checkpoint(offset=_offset(path, 5), lines_before=4)]
    assert claude_tail([path], starts, WarningSink()) is not None


def test_new_root_in_the_tail_falls_back(tmp_path: Path) -> None:
    lines = [
        b'{"type":"user","uuid":"a","parentUuid":null,"sessionId":"s",'
        b'"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"one"}}\n',
        b'{"type":"assistant","uuid":"b","parentUuid":null,"sessionId":"s",'
        b'"timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant",'
        b'"content":[{"type":"text","text":"two"}]}}\n',
        b"not json\n",
    ]
    path = tmp_path / "roots.jsonl"
    path.write_bytes(b"".join(lines))
    sink = WarningSink()
    assert claude_tail([path], [Checkpoint(0, 0)], sink) is None
    path.write_bytes(lines[0] + lines[2])
    tail = claude_tail([path], [Checkpoint(0, 0)], sink)
    assert tail is not None
    assert [m.text for m in tail] == ["one"]
    assert any("invalid JSON" in w.message for w in sink.warnings)


def _offset(path: Path, line: int) -> int:
    with path.open("rb") as fh:
        return sum(len(fh.readline()) for _ in range(line - 1))


def test_multi_file_chain_tail_skips_old_files(store: Store, tmp_path: Path) -> None:
    at = line_of(CLAUDE_SPOTTER, '"type":"user"') + 1200
    files = split_file(CLAUDE_SPOTTER, at, tmp_path, ("a.jsonl", "b.jsonl"))
    for f in files:
        store.register("S", "claude-code", str(f))
    stamps = sorted(
        m.timestamp for m in iter_messages(files, WarningSink(), "claude-code") if m.timestamp
    )
    since = stamps[-5]
    got, mode = _fetch(store, "S", since)
    assert mode == "tail"
    assert got == _expected(files, since)
    assert {m["file_index"] for m in got} == {1}
    # A since inside the first file reads the tail of file 0 and all of file 1.
    since = stamps[len(stamps) // 3]
    got, _mode = _fetch(store, "S", since)
    assert got == _expected(files, since)
    assert {m["file_index"] for m in got} == {0, 1}


def test_tail_skips_side_chains_repeats_and_unfinished_lines(tmp_path: Path) -> None:
    def line(uid: str, parent: str | None, text: str, **extra: object) -> bytes:
        import json as _json

        obj = {
            "type": "user",
            "uuid": uid,
            "parentUuid": parent,
            "sessionId": "s",
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": "user", "content": text},
            **extra,
        }
        return _json.dumps(obj).encode() + b"\n"

    path = tmp_path / "t.jsonl"
    path.write_bytes(
        line("a", None, "first")
        + line("side", "a", "sub-agent", isSidechain=True)
        + b'{"type":"queue-operation","operation":"enqueue"}\n'
        + b"[1, 2]\n"
        + line("a", None, "first")  # a repeated copy (resume)
        + b'{"type":"user","uuid":"b","parent'  # still being written
    )
    tail = claude_tail([path], [Checkpoint(0, 0)], WarningSink())
    assert tail is not None
    assert [(m.text, m.entry_index) for m in tail] == [("first", 1)]
    assert claude_tail([path], [None], WarningSink()) is not None


def test_sibling_after_a_prompt_falls_back(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rows = [
        ("p", None, "user", "question"),
        ("q", "p", "user", "edited question"),  # a prompt under a prompt ...
        ("r", "p", "assistant", "answer to the old one"),  # ... and a sibling after it
    ]
    out = b""
    for uid, parent, typ, text in rows:
        content = text if typ == "user" else [{"type": "text", "text": text}]
        out += (
            f'{{"type":"{typ}","uuid":"{uid}","parentUuid":'
            f'{"null" if parent is None else chr(34) + parent + chr(34)},"sessionId":"s",'
            f'"timestamp":"2026-01-01T00:00:01Z","message":{{"role":"{typ}",'
            f'"content":{json.dumps(content)}}}}}\n'
        ).encode()
    path.write_bytes(out)
    assert claude_tail([path], [Checkpoint(0, 0)], WarningSink()) is None


def test_concurrent_index_update_keeps_the_first(store: Store, tmp_path: Path) -> None:
    path = copy_to(CLAUDE_COMPACT, tmp_path)
    half = path.read_bytes()
    path.write_bytes(half[: len(half) // 2].rsplit(b"\n", 1)[0] + b"\n")
    first = update_index(store.conn, path, CLAUDE)
    assert first is not None
    path.write_bytes(half)
    # Another request indexes the grown file between our read and our write.
    real = cp._stored
    calls = {"n": 0}

    def racing(conn: object, key: str) -> tuple[int, int, int, int, float | None, int]:
        calls["n"] += 1
        row = real(conn, key)  # type: ignore[arg-type]
        if calls["n"] == 2:
            return (row[0], row[1], row[2] + 1, row[3], row[4], row[5])
        return row

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cp, "_stored", racing)
        update_index(store.conn, path, CLAUDE)
    stored = real(store.conn, str(path))
    assert stored[2] == first.indexed_bytes  # the racing writer's row was left alone
