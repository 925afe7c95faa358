"""Gemini CLI 0.61 ``/compress``, recorded (fixtures/gemini/own/compress/README.md).

The compression writes a ``$set.messages`` checkpoint: the session context, the summary
turn and its acknowledgement, then the kept turn restated under NEW ids. The reader
keeps the original history where it was said, marks the compaction where it happened,
and maps the restated copies onto the messages they repeat.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import orjson

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, Session
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources import detect
from opencode_restore.sources.base import SNIFF_BYTES
from opencode_restore.sources.gemini.reader import READER

COMPRESS = (
    Path(__file__).resolve().parents[3]
    / "fixtures/gemini/own/compress/session-2026-11-27T07-31-0899d14b.jsonl"
)

# The original records, in the order they were said.
CONTEXT = "d04923d38bb0f6017037e74183378ef4"
T1 = ["a5cf06be-542f-4586-be86-2125f3cbe019", "95e28aee-957d-4256-a59d-46d5aa54468f"]
T3_USER = "f4a35fdc-a27d-4622-a586-9a71a5ec497c"
T3_CALL = "8a88e3c8-4fd2-4b5e-b19d-83f4bd61d76a"
T3_RESULT = "9f5a7d5f-c952-47bf-b3e0-b94d2ad17db5"
T3_REPLY = "59634670-8558-4291-80b3-367486102a44"
SUMMARY = "8b1629f0-e679-4add-af82-02622eb2ce93"
ACK = "f5896966-4960-456c-affd-ddcb530bad39"
# The restated copies of turn 3 in the checkpoint (line 31).
RESTATED = [
    "4f2ae7c9-2381-4956-9c32-49b5ecac81d6",
    "837a3bba-27e8-495a-97b8-923167e5d0b8",
    "c0818bd7-811f-4ff4-b14b-ad077c286e1f",
    "290a28b0-3bb7-406f-bf6f-ceaee4080b0b",
]


def _read(path: Path = COMPRESS) -> Session:
    sink = WarningSink()
    session = READER.read([path], sink)
    assert sink.warnings == []
    return session


def _short(messages: list[Message]) -> list[tuple[str, int, str, str]]:
    return [(m.id[:8], m.entry_index, m.role, m.type) for m in messages]


def test_the_recording_is_detected_as_gemini() -> None:
    assert READER.sniff(COMPRESS, COMPRESS.read_bytes()[:SNIFF_BYTES]) >= 0.9
    assert detect(COMPRESS).name == "gemini"


def test_ids_pinned_here_are_the_recordings() -> None:
    ids = set()
    for line in COMPRESS.read_bytes().splitlines():
        obj = orjson.loads(line)
        ids.add(obj.get("id"))
        for m in obj.get("$set", {}).get("messages", []):
            ids.add(m["id"])
    assert {CONTEXT, *T1, T3_USER, T3_CALL, T3_RESULT, T3_REPLY, SUMMARY, ACK} <= ids
    assert set(RESTATED) <= ids


def test_original_history_then_the_compaction_where_it_happened_then_what_followed() -> None:
    msgs = _read().messages()
    assert _short(msgs) == [
        ("d04923d3", 2, "user", "text"),  # the injected session context
        ("a5cf06be", 3, "user", "text"),  # turn 1: create hello.py
        ("95e28aee", 7, "assistant", "text"),
        ("write_fi", 7, "assistant", "tool_use"),
        ("95f7fc70", 8, "tool", "tool_result"),
        ("b8530bf0", 10, "assistant", "text"),
        ("a1bb4f0c", 12, "user", "text"),  # turn 2: add a comment
        ("b52d3ba8", 16, "assistant", "text"),
        ("write_fi", 16, "assistant", "tool_use"),
        ("2043a617", 17, "tool", "tool_result"),
        ("540e50f8", 19, "assistant", "text"),
        ("f4a35fdc", 21, "user", "text"),  # turn 3: the edit, later kept by /compress
        ("replace_", 25, "assistant", "tool_use"),
        ("9f5a7d5f", 26, "tool", "tool_result"),
        ("59634670", 28, "assistant", "text"),
        ("0:31", 31, "system", "compaction"),  # /compress
        ("8b1629f0", 31, "user", "text"),  # its summary turn
        ("f5896966", 31, "assistant", "text"),  # and acknowledgement
        ("727de34f", 32, "system", "text"),  # the info record /compress wrote
        ("ab71ac75", 34, "user", "text"),  # turn 4, after the compression
        ("1d6bb3af", 36, "assistant", "text"),
        ("268f220a", 40, "user", "text"),  # turn 5, from a later --resume -p
        ("711ad8ed", 42, "assistant", "text"),
    ]
    assert [m.id for m in msgs][11:15] == [T3_USER, "replace__fake-call-3", T3_RESULT, T3_REPLY]


def test_no_message_is_repeated_and_the_restated_ids_name_none() -> None:
    msgs = _read().messages()
    ids = [m.id for m in msgs]
    assert len(ids) == len(set(ids))
    assert not set(RESTATED) & set(ids)
    texts = [m.text for m in msgs if m.type == "text"]
    for said in ("change hello.py to print goodbye", "Done: hello.py now prints goodbye."):
        assert texts.count(said) == 1
    calls = [m.tool_call_id for m in msgs if m.type == "tool_use"]
    results = [m.tool_call_id for m in msgs if m.type == "tool_result"]
    assert (
        calls
        == results
        == [f"write_file__fake-call-{n}" for n in (1, 2)] + ["replace__fake-call-3"]
    )


def test_one_summary_compaction_naming_the_kept_turn() -> None:
    session = _read()
    msgs = session.messages()
    markers = [m for m in msgs if m.type == "compaction"]
    assert len(markers) == 1  # the --resume checkpoint (line 39) compacts nothing
    c = markers[0].compaction
    assert c is not None
    assert (c.kind, c.first_kept_id) == ("summary", T3_USER)
    assert c.summary is not None
    assert c.summary.startswith("<state_snapshot>\n<overall_goal>A hello.py script that greets.")
    assert c.summary.endswith("</state_snapshot>\n\nGot it. Thanks for the additional context!")
    summary_turn = [m for m in msgs if m.meta.get("compaction_summary")]
    assert [m.id for m in summary_turn] == [SUMMARY, ACK]
    assert all(m.meta.get("synthetic") and not m.is_human for m in summary_turn)
    events = list(session.timeline.root.events())
    assert [e.kind for e in events].count("compaction") == 1
    assert next(e for e in events if e.kind == "compaction").compaction is c


def test_each_turns_edit_is_cited_once_in_its_own_turn() -> None:
    turns = parse_turns(_read())
    assert [(t.number, t.user_text) for t in turns] == [
        (1, "create hello.py that prints hello"),
        (2, "add a comment line to hello.py"),
        (3, "change hello.py to print goodbye"),
        (4, "what did we change"),
        (5, "what does hello.py print now"),
    ]
    cited = [
        (t.number, a.file_path, a.action, a.message_id, a.line_number)
        for t in turns
        for a in t.artifacts
    ]
    assert cited == [
        (1, "hello.py", "created", "write_file__fake-call-1", 7),
        (2, "hello.py", "edited", "write_file__fake-call-2", 16),
        (3, "hello.py", "edited", "replace__fake-call-3", 25),
    ]
    # the compaction happened during turn 3 (after its reply), before turn 4
    info = "727de34f-33fe-41cd-8713-38fcc780f9a6"
    assert turns[2].message_ids[-4:] == ["0:31", SUMMARY, ACK, info]
    assert turns[3].message_ids[0] == "ab71ac75-0d35-417f-8e7c-8490fb4e10c5"


def _continued(tmp_path: Path, *records: Mapping[str, object], upto: int = 37) -> Path:
    """The recording's first ``upto`` lines (to turn 4), then ``records``."""
    lines = COMPRESS.read_bytes().splitlines()[:upto]
    path = tmp_path / "session-2026-11-27T07-31-0899d14b.jsonl"
    path.write_bytes(b"\n".join([*lines, *(orjson.dumps(r) for r in records)]) + b"\n")
    return path


def test_rewinding_to_a_kept_message_drops_it_and_what_followed_but_not_the_compaction(
    tmp_path: Path,
) -> None:
    # In Gemini's context the restated turn follows the summary: rewinding to it keeps
    # the summary and drops the turn and everything after it.
    msgs = _read(_continued(tmp_path, {"$rewindTo": RESTATED[0]})).messages()
    ids = [m.id for m in msgs]
    assert ids[-3:] == ["0:31", SUMMARY, ACK]
    assert not {T3_USER, T3_RESULT, T3_REPLY, "replace__fake-call-3"} & set(ids)
    assert "what did we change" not in [m.text for m in msgs]


def test_a_kept_copy_written_again_is_its_message(tmp_path: Path) -> None:
    copy = {
        "id": RESTATED[3],
        "timestamp": "2026-11-27T07:32:15.000Z",
        "type": "gemini",
        "content": [{"text": "Done: hello.py now prints goodbye."}],
        "tokens": {"input": 1, "output": 1, "cached": 0, "thoughts": 0, "tool": 0, "total": 2},
    }
    unchanged = _read(_continued(tmp_path, copy)).messages()
    assert [m.id for m in unchanged] == [m.id for m in _read(_continued(tmp_path)).messages()]
    edited = _read(_continued(tmp_path, {**copy, "content": "Done: it prints goodbye."}))
    reply = next(m for m in edited.messages() if m.id == T3_REPLY)
    assert (reply.text, reply.entry_index) == ("Done: it prints goodbye.", 38)


def test_a_later_checkpoint_naming_the_copies_compacts_nothing(tmp_path: Path) -> None:
    restated = orjson.loads(COMPRESS.read_bytes().splitlines()[30])["$set"]["messages"]
    msgs = _read(_continued(tmp_path, {"$set": {"messages": restated}})).messages()
    assert [m.type for m in msgs].count("compaction") == 1
    assert len({m.id for m in msgs}) == len(msgs)


def test_a_restated_call_that_matches_out_of_order_is_still_not_a_new_call(
    tmp_path: Path,
) -> None:
    # The restated reply differs from the original (so nothing aligns newest first):
    # the texts become summary text, the restated call still maps to the recorded one.
    lines = COMPRESS.read_bytes().splitlines()
    ckpt = orjson.loads(lines[30])
    ckpt["$set"]["messages"][-1]["content"] = [{"text": "Done (restated)."}]
    path = tmp_path / COMPRESS.name
    path.write_bytes(b"\n".join([*lines[:30], orjson.dumps(ckpt), *lines[31:]]) + b"\n")
    session = _read(path)
    msgs = session.messages()
    assert [m.tool_call_id for m in msgs if m.type == "tool_use"].count("replace__fake-call-3") == 1
    c = next(m.compaction for m in msgs if m.compaction is not None)
    assert (c.kind, c.first_kept_id) == ("summary", None)
    assert c.summary is not None
    assert c.summary.endswith("Done (restated).")
    edits = [(t.number, a.message_id) for t in parse_turns(session) for a in t.artifacts]
    assert edits[-1] == (3, "replace__fake-call-3")
    assert len(edits) == 3
