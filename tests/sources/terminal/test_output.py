"""The JSONL output of terminal messages: chunked writes, same bytes as one line each."""

from __future__ import annotations

from pathlib import Path

import orjson

from opencode_restore.diagnostics import WarningSink
from opencode_restore.report.messages import JSONL_BATCH, iter_jsonl, message_record
from opencode_restore.sources.terminal.reader import READER

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "terminal"


def test_jsonl_chunks_hold_whole_lines_and_match_one_dump_per_message(tmp_path: Path) -> None:
    log = tmp_path / "many.log"
    # 200 copies of the seed capture: several chunks' worth of messages.
    log.write_bytes((FIXTURES / "seed_single.log").read_bytes() * 200)
    messages = list(READER.iter_messages([log], WarningSink()))
    assert len(messages) == 800
    assert len({m.id for m in messages}) == 800
    chunks = list(iter_jsonl(messages))
    assert len(chunks) == -(-len(messages) // JSONL_BATCH)
    assert all(c.endswith(b"\n") for c in chunks)
    expected = b"".join(orjson.dumps(message_record(m)) + b"\n" for m in messages)
    assert b"".join(chunks) == expected
    first = orjson.loads(chunks[0].split(b"\n", 1)[0])
    assert first["id"] == "0:2"
    assert first["role"] == "user"
    assert first["timestamp"] is None


def test_jsonl_of_no_messages_is_empty() -> None:
    assert list(iter_jsonl([])) == []
