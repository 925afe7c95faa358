"""The journal: blocks, contributions, rendering with cache breakpoints, TTL pruning,
compaction bookkeeping, the saved payload and its atomic store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from opencode_restore.llm.base import LLMRequest
from opencode_restore.pipeline.journal import policy
from opencode_restore.pipeline.journal.data import Journal, TurnRecord
from opencode_restore.pipeline.journal.persist import (
    SCHEMA,
    JournalFormatError,
    from_payload,
    to_payload,
)
from opencode_restore.pipeline.journal.store import (
    JournalStore,
    SourceFile,
    file_change,
    safe_name,
    source_file,
)
from opencode_restore.pipeline.prompting import render

from ..journal_helpers import session_of


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def summary(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "turn_number": n,
        "user_request_summary": f"request {n} [M{n}]",
        "agent_response_summary": f"response {n}",
        **extra,
    }


def record(n: int, **extra: Any) -> TurnRecord:
    return TurnRecord(n, f"u{n}", f"h{n}", (f"M{2 * n - 1}", f"M{2 * n}"), 2 * n,
                      summary=summary(n, **extra))  # fmt: skip


def timeline(turns: int = 0, clock: Clock | None = None) -> Journal:
    tl = Journal(session_of(1), "fp", clock=clock or Clock())

    async def fill() -> None:
        for n in range(1, turns + 1):
            await tl.add_turn(record(n))

    anyio.run(fill)
    return tl


def rendered(tl: Journal, **kw: Any) -> LLMRequest:
    async def go() -> LLMRequest:
        return await policy.render(
            tl,
            LLMRequest(messages=[], stage="turn_summary"),
            system="SYSTEM",
            header="HEADER",
            task="TASK",
            **kw,
        )

    return anyio.run(go)


def marks(request: LLMRequest) -> list[str]:
    out = [f"system:{b.text}" for b in request.system if b.cache_breakpoint]
    return out + [m.content.splitlines()[0] for m in request.messages if m.cache_breakpoint]


def test_blocks_are_id_linked_and_turns_render_as_one_message() -> None:
    tl = timeline(2)
    assert [(b.id, b.parent_id, b.kind) for b in tl.blocks] == [
        ("b1", None, "turn.header"),
        ("b2", "b1", "turn.summary"),
        ("b3", "b2", "turn.header"),
        ("b4", "b3", "turn.summary"),
    ]
    request = rendered(tl)
    texts = [m.content for m in request.messages]
    assert texts[0] == "HEADER"
    assert texts[1] == "[TURN 1 · M1–M2]\nRequest: request 1 [M1]\nResponse: response 1"
    assert texts[-1] == "TASK"
    assert len(texts) == 4


def test_two_breakpoints_move_with_the_tail() -> None:
    empty = rendered(timeline(0))
    assert marks(empty) == ["system:SYSTEM", "HEADER"]
    one = rendered(timeline(1))
    assert marks(one) == ["HEADER", "[TURN 1 · M1–M2]"]
    three = rendered(timeline(3))
    # Breakpoint 1 sits where the previous call's tail breakpoint was.
    assert marks(three) == ["[TURN 2 · M3–M4]", "[TURN 3 · M5–M6]"]
    assert sum(m.cache_breakpoint for m in three.messages) == 2


def test_requests_share_the_streams_messages_and_mark_only_copies() -> None:
    # Each block's message is made once and every request shares it: a breakpoint one
    # request marks is on its own copy, never on the message the next request gets.
    tl = timeline(3)
    first = rendered(tl)
    anyio.run(tl.add_turn, record(4))
    second = rendered(tl)
    assert first.messages[1] is second.messages[1]
    assert marks(second) == ["[TURN 3 · M5–M6]", "[TURN 4 · M7–M8]"]
    assert marks(first) == ["[TURN 2 · M3–M4]", "[TURN 3 · M5–M6]"]
    assert not any(m.cache_breakpoint for m in tl.stream_messages())


def test_the_turns_shared_part_ends_a_cached_prefix_before_the_notices() -> None:
    # The state and facts are the same for every segment of a turn: they follow the
    # stream with a breakpoint of their own, and the notices (new figures in every
    # call) come after them, so a second segment reads them from the cache.
    three = rendered(timeline(3), turn="STATE", announcements=["used 10 tokens"])
    texts = [m.content.splitlines()[0] for m in three.messages]
    assert texts[-3:] == ["STATE", "[NOTICE] used 10 tokens", "TASK"]
    assert marks(three) == ["[TURN 2 · M3–M4]", "[TURN 3 · M5–M6]", "STATE"]
    assert marks(rendered(timeline(0), turn="STATE")) == ["system:SYSTEM", "HEADER", "STATE"]
    # A template without the block renders as before.
    assert "STATE" not in [m.content for m in rendered(timeline(3)).messages]


def test_contribute_appends_a_persistent_block() -> None:
    tl = timeline(1)
    block = anyio.run(lambda: tl.contribute("system.message", "note", meta={"k": 1}))
    assert block.parent_id == "b2"
    assert block.id == "b3"
    assert rendered(tl).messages[2].content == "[SYSTEM MESSAGE] note"
    assert to_payload(tl)["blocks"][-1]["meta"] == {"k": 1}


def test_summary_text_lists_every_field() -> None:
    text = render.summary_text(
        summary(
            1,
            key_outcomes=["o [M1]"],
            state_changes=["s"],
            artifacts_modified=[{"path": "a.py", "note": "edited [M2]"}],
            constraints_assumptions_added=["c"],
            decisions=[{"decision": "d", "reason": "r"}, {"decision": "e", "reason": ""}],
            errors_and_fixes=["x"],
            open_questions=["q?"],
            resolved_questions=["old?"],
        )
    )
    assert text.splitlines() == [
        "Request: request 1 [M1]",
        "Response: response 1",
        "Outcomes:", "- o [M1]",
        "State changes:", "- s",
        "Files:", "- a.py: edited [M2]",
        "Constraints:", "- c",
        "Decisions:", "- d (because r)", "- e",
        "Errors and fixes:", "- x",
        "Open questions:", "- q?",
        "Resolved questions:", "- old?",
    ]  # fmt: skip


def test_failed_turn_block() -> None:
    tl = Journal(session_of(1), "fp", clock=Clock())
    anyio.run(lambda: tl.add_turn(TurnRecord(1, "u1", "h", None, 0, error="HTTP 503\nboom")))
    assert tl.blocks[0].text == "[TURN 1]"
    assert tl.blocks[1].text == "(this turn could not be summarized: HTTP 503 boom)"
    assert tl.blocks[1].meta == {"failed": True}


def test_ttl_expiry_prunes_old_bulky_blocks_once() -> None:
    clock = Clock()
    long = ["a long outcome " * 10] * 6
    tl = Journal(session_of(1), "fp", clock=clock)

    async def fill() -> None:
        for n in range(1, 8):
            await tl.add_turn(record(n, key_outcomes=long))

    anyio.run(fill)
    policy.touch(tl, 300)
    clock.now += 200
    assert all(not b.meta.get("pruned") for b in tl.blocks)
    rendered(tl, ttl_seconds=300, prune_buffer_seconds=30)
    assert all(not b.meta.get("pruned") for b in tl.blocks)  # 200 s < 300 - 30
    clock.now += 80  # 280 s idle: inside the prune buffer
    request = rendered(tl, ttl_seconds=300, prune_buffer_seconds=30)
    pruned = [b.turn for b in tl.blocks if b.meta.get("pruned")]
    assert pruned == [1, 2, 3]  # the last four turns stay whole
    texts = [m.content for m in request.messages]
    assert texts[1].splitlines()[1].startswith("[TRUNCATED] Request: request 1")
    assert len(texts[1]) < 400
    assert texts[-3].startswith("[SYSTEM MESSAGE] Context was pruned")
    assert texts[-2] == "[NOTICE] 3 older blocks were truncated after the prompt cache expired."
    assert tl.blocks[-1].kind == "system.message"  # persistent
    again = rendered(tl, ttl_seconds=300, prune_buffer_seconds=30)
    assert sum("[SYSTEM MESSAGE]" in m.content for m in again.messages) == 1
    assert all("[NOTICE]" not in m.content for m in again.messages)


def test_first_render_after_load_uses_the_saved_ttl() -> None:
    clock = Clock()
    tl = timeline(6, clock)
    for b in tl.blocks:
        b.text += " padding" * 100
    policy.touch(tl, 60)
    payload = to_payload(tl)
    assert payload["cache_last_ttl_seconds"] == 60
    clock.now += 120
    loaded = from_payload(payload, session_of(1), clock=clock)
    rendered(loaded, ttl_seconds=3600, prune_buffer_seconds=0)  # saved 60 s wins
    assert any(b.meta.get("pruned") for b in loaded.blocks)
    fresh = from_payload(payload, session_of(1), clock=clock)
    fresh.cache.loaded = False
    rendered(fresh, ttl_seconds=3600, prune_buffer_seconds=0)
    assert not any(b.meta.get("pruned") for b in fresh.blocks)


def test_no_ttl_never_prunes() -> None:
    clock = Clock()
    tl = timeline(6, clock)
    policy.touch(tl, 300)
    clock.now += 10_000
    rendered(tl, ttl_seconds=0)
    assert not any(b.meta.get("pruned") for b in tl.blocks)


def test_compact_puts_the_summary_at_the_cut() -> None:
    tl = timeline(4)
    anyio.run(lambda: tl.compact(4, "turns one and two", {"first_turn": 1, "last_turn": 2}))
    assert [b.kind for b in tl.blocks] == ["range.summary"] + ["turn.header", "turn.summary"] * 2
    assert tl.blocks[0].parent_id is None
    assert tl.blocks[1].parent_id == tl.blocks[0].id
    request = rendered(tl)
    assert request.messages[1].content == "[SUMMARY OF TURNS 1–2]\nturns one and two"
    # Saved and loaded: the chain still checks, every turn record is still there.
    loaded = from_payload(to_payload(tl), session_of(1))
    assert [t.number for t in loaded.turns] == [1, 2, 3, 4]
    assert loaded.blocks[0].meta["replaced"] == 4


def test_keep_turns_drops_later_turns_and_stale_range_summaries() -> None:
    tl = timeline(4)
    anyio.run(lambda: tl.compact(4, "one and two", {"first_turn": 1, "last_turn": 2}))
    tl.keep_turns(3)
    assert [b.turn for b in tl.blocks] == [None, 3, 3]
    tl.keep_turns(1)  # the range summary covered turn 2: rebuilt from the records
    assert [(b.kind, b.turn) for b in tl.blocks] == [("turn.header", 1), ("turn.summary", 1)]
    assert tl.blocks[0].parent_id is None
    from_payload(to_payload(tl), session_of(1))


def test_drop_evidence() -> None:
    tl = timeline(1)
    anyio.run(lambda: tl.contribute("evidence", "[EVIDENCE S1] x", meta={"source": "S1"}))
    tl.sources_pool.append({"id": "S1"})
    assert all("EVIDENCE" not in m.content for m in rendered(tl).messages)
    tl.drop_evidence()
    assert [b.kind for b in tl.blocks] == ["turn.header", "turn.summary"]
    assert tl.sources_pool == []


def test_payload_round_trip_and_checks() -> None:
    tl = timeline(2)
    tl.source_files = [SourceFile("/x/log.jsonl", 10, "ab" * 32)]
    tl.numbering = {"version": 1, "labels": []}
    payload = to_payload(tl)
    assert payload["schema"] == SCHEMA
    assert payload["version"] == 1
    assert payload["turn_ids"] == ["u1", "u2"]
    assert payload["turns"][0]["labels"] == ["M1", "M2"]
    loaded = from_payload(json.loads(json.dumps(payload)), session_of(1))
    assert to_payload(loaded) | {"ts": 0} == payload | {"ts": 0}
    with pytest.raises(JournalFormatError, match=r"not a restore\.timeline\.v1"):
        from_payload(payload | {"version": 2}, session_of(1))
    with pytest.raises(JournalFormatError, match="bad"):
        from_payload({k: v for k, v in payload.items() if k != "turns"},
                                  session_of(1))  # fmt: skip
    broken = json.loads(json.dumps(payload))
    broken["blocks"][2]["parent_id"] = "b9"
    with pytest.raises(JournalFormatError, match="does not follow"):
        from_payload(broken, session_of(1))


def test_debug_view_marks_breakpoints() -> None:
    request = rendered(timeline(2))
    view = render.debug_view(request, 123, 1000)
    lines = view.splitlines()
    assert lines[0].startswith("── render turn_summary")
    assert "~123 tokens of 1000" in lines[0]
    assert lines[2] == "[user] HEADER"
    assert lines[3].endswith("=>[1]")
    assert lines[4].endswith("=>[2]")
    assert lines[-1] == "[user] TASK"
    long = LLMRequest(messages=[], system=[])
    long.messages = [type(request.messages[0])("user", "y" * 1000)]
    assert "(+600 chars)" in render.debug_view(long, 1, 1)


# -- the store ------------------------------------------------------------------------


def test_safe_names() -> None:
    assert safe_name("ses_abc-1.2") == "ses_abc-1.2"
    odd = safe_name("../a b/c")
    assert "/" not in odd
    assert odd.startswith("a_b_c-")
    assert safe_name("a/b") != safe_name("a_b")
    assert safe_name("///").startswith("session-")


def test_store_cleans_temporary_files_of_dead_runs(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    path = store.path_for("s")
    path.parent.mkdir(parents=True, exist_ok=True)
    dead = path.with_name(f".{path.name}.999999999.tmp")
    live = path.with_name(f".{path.name}.{os.getppid()}.tmp")
    junk = path.with_name(f".{path.name}.notapid.tmp")
    for p in (dead, live, junk):
        p.write_text("half")
    store.save("s", {"x": 1})
    assert not dead.exists()
    assert not junk.exists()
    assert live.exists()
    assert store.load("s") == {"x": 1}
    assert store.load("other") is None
    path.write_text("[1, 2]")
    assert store.load("s") is None  # not an object


def test_file_change(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"line one\n")
    saved = source_file(str(log))
    assert saved is not None
    assert saved.size == 9
    assert file_change(saved) == "same"
    log.write_bytes(b"line one\nline two\n")
    assert file_change(saved) == "grew"
    log.write_bytes(b"LINE one\nline two\n")
    assert file_change(saved) == "changed"
    log.write_bytes(b"line")
    assert file_change(saved) == "changed"
    log.unlink()
    assert file_change(saved) == "gone"
    assert source_file(str(tmp_path)) is None
    assert SourceFile.from_dict(saved.to_dict()) == saved


_EDITS = st.lists(
    st.sampled_from(["turn", "long turn", "evidence", "note", "compact", "prune", "keep", "drop"]),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(_EDITS)
@example(["long turn", "turn", "turn", "turn", "turn", "prune", "turn"])
def test_the_kept_stream_is_the_stream_rendered_afresh(edits: list[str]) -> None:
    # The stream a journal keeps as blocks are appended is, after any edit (a compaction,
    # pruning in place, cut turns, evidence dropped), the one its blocks render to.
    clock = Clock()
    tl = timeline(0, clock)
    turns = 0

    async def edit(name: str) -> None:
        nonlocal turns
        if name in ("turn", "long turn"):
            turns += 1
            extra = {"key_outcomes": ["x" * 700]} if name == "long turn" else {}
            await tl.add_turn(record(turns, **extra))
        elif name == "evidence":
            await tl.contribute("evidence", "found", meta={"source": "S1"})
        elif name == "note":
            await tl.contribute("system.message", "a note")
        elif name == "compact" and len(tl.blocks) > 2:
            await tl.compact(2, "folded", {"first_turn": 1, "last_turn": 1})
        elif name == "prune":
            policy.touch(tl, 10)
            clock.now += 100
            policy.prune_expired(tl, 10, 0)
        elif name == "keep":
            turns = max(0, turns - 1)
            tl.keep_turns(turns)
        elif name == "drop":
            tl.drop_evidence()

    for name in edits:
        anyio.run(edit, name)
        assert list(tl.stream()) == render.stream_texts([b.view() for b in tl.blocks])
        assert [m.content for m in tl.stream_messages()] == list(tl.stream())
