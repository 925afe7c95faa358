"""Turn hashes: what decides whether a saved turn summary can be reused."""

from __future__ import annotations

import hashlib
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from opencode_restore.model import Compaction, Message, Turn
from opencode_restore.pipeline.journal.store import JournalStore, Streamed, json_chunks, turn_hash


def _hash_as_first_written(turn: Turn) -> str:
    """turn_hash as session 2 wrote it (timestamps through isoformat): saved timelines
    carry these hashes, so a new version must compute the same ones."""
    h = hashlib.sha256()
    for m in turn.messages:
        key = {
            "id": m.id, "role": m.role, "type": m.type, "text": m.text,
            "ts": m.timestamp.isoformat() if m.timestamp else None,
            "file": m.file_index, "entry": m.entry_index, "tool": m.tool_name,
            "call": m.tool_call_id, "input": m.tool_input, "error": m.is_error,
            "compaction": m.compaction.summary if m.compaction else None,
        }  # fmt: skip
        h.update(orjson.dumps(key, option=orjson.OPT_SORT_KEYS, default=str))
        h.update(b"\n")
    return h.hexdigest()


def test_turn_hashes_of_saved_timelines_stay_valid() -> None:
    stamps = [
        datetime(2026, 2, 11, 10, 30, tzinfo=UTC),
        datetime(2026, 2, 11, 10, 30, 1, 123456, tzinfo=UTC),
        datetime(2026, 2, 11, 10, 30, 2, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 2, 11, 10, 30, 3),
        None,
    ]
    messages = [
        Message(f"m{i}", "user" if i % 2 else "assistant", "text", f"text {i}", timestamp=ts)
        for i, ts in enumerate(stamps)
    ]
    turn = Turn(number=1, user_text="text 1", messages=messages)
    assert turn_hash(turn) == _hash_as_first_written(turn)


def test_hashing_leaves_no_utf8_copy_inside_the_log_text() -> None:
    # orjson caches a non-ASCII string's UTF-8 bytes inside the string object: hashing
    # every turn up front would double the memory of a whole log's text.
    text = "".join(["naïve café ", "x" * 5000])
    arg = "".join(["chemin/é", "y" * 3000])
    summary = "".join(["résumé ", "z" * 2000])
    tool = Message("t", "assistant", "tool_use", "", tool_input={"path": [arg]})
    plain = Message("u", "user", "text", text)
    packed = Message("c", "system", "compaction", "", compaction=Compaction("summary", summary))
    sizes = [sys.getsizeof(s) for s in (text, arg, summary)]
    turn = Turn(number=1, user_text=text, messages=[plain, tool, packed])
    digest = turn_hash(turn)
    assert [sys.getsizeof(s) for s in (text, arg, summary)] == sizes
    assert digest == _hash_as_first_written(turn)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)  # fmt: skip


@given(_JSON)
@example({"turns": [{"summary": {"text": "a\nb", "n": []}}], "labels": [[1, {}]], "x": {}})
def test_a_snapshot_is_written_in_pieces_as_it_would_be_dumped_whole(value: Any) -> None:
    # The memory-saving writer (json_chunks, bench/scale.py's RSS target) must give the
    # same bytes as the plain dump at every nesting level.
    plain = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    for levels in range(5):
        assert b"".join(json_chunks(value, levels=levels)) == plain


@given(_JSON, st.lists(_JSON, max_size=5))
def test_a_streamed_list_is_written_as_the_list_it_yields(value: Any, items: list[Any]) -> None:
    # The labels of a snapshot are made while it is written (bench/scale.py's peak).
    def payload(labels: Any) -> dict[str, Any]:
        return {"v": value, "numbering": {"version": 1, "labels": labels}, "tail": [labels]}

    plain = orjson.dumps(payload(items), option=orjson.OPT_INDENT_2)
    for levels in range(5):
        streamed = payload(Streamed(lambda: iter(items), len(items)))
        assert b"".join(json_chunks(streamed, levels=levels)) == plain


def test_a_saved_snapshot_reads_back_as_its_payload(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    payload = {"turns": [{"n": i, "s": "é" * i} for i in range(3000)], "empty": []}
    path = store.save("s", payload)
    assert path.read_bytes() == orjson.dumps(payload, option=orjson.OPT_INDENT_2)
    assert store.load("s") == payload


def test_a_value_json_cannot_hold_is_still_refused() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        b"".join(json_chunks({"x": [object()]}, levels=0))
