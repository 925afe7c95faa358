"""The restore state saved in a snapshot: its summaries are dumped while it is written."""

from __future__ import annotations

import tracemalloc

import orjson

from opencode_restore.pipeline.journal.store import json_chunks
from opencode_restore.pipeline.schemas import Decision, TurnSummary
from opencode_restore.pipeline.state import RestoreState

TURNS = 400


def _state() -> RestoreState:
    state = RestoreState()
    for n in range(1, TURNS + 1):
        state.add_summary(
            TurnSummary(
                turn_number=n,
                user_request_summary=f"request {n}: make the parser stream",
                agent_response_summary=f"reply {n}: changed scan.py and ran the tests",
                key_outcomes=[f"outcome {n}", "tests pass"],
                decisions=[Decision(decision=f"use one pass ({n})", reason="memory")],
                open_questions=[f"question {n}?"],
            )
        )
    return state


def test_a_streamed_snapshot_writes_what_the_plain_one_writes() -> None:
    state = _state()
    plain = orjson.dumps({"state": state.to_dict()}, option=orjson.OPT_INDENT_2)
    streamed = b"".join(json_chunks({"state": state.to_dict(streamed=True)}))
    assert streamed == plain


def test_a_streamed_snapshot_holds_no_copy_of_the_summaries() -> None:
    state = _state()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        plain = state.to_dict()
        plain_held = tracemalloc.get_traced_memory()[0] - before
        del plain
        before = tracemalloc.get_traced_memory()[0]
        streamed = state.to_dict(streamed=True)
        streamed_held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert streamed["summaries"]  # written from the state when the snapshot is
    # Every summary as a dict was ~1.5 KB a turn; the rest (decisions, questions) stays.
    assert plain_held - streamed_held > 1000 * TURNS, (plain_held, streamed_held)
