"""One 10-turn session recorded by five real agents: every reader reads it as cleanly.

The devset (fixtures/devset, see its PROVENANCE.md) is the same conversation in the native
log of Claude Code, Codex, opencode, Gemini CLI 0.61 and pi. Each must give the same 10
user turns, 106 tool calls with exactly one result each (per turn as ``facts.json``
says), the user's own words as the first request, reasoning as thinking blocks only, and
for line-based logs each message on its own record's line, so that the ground truth's
evidence lines can be cited.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, Session
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources import detect, filter_messages, iter_messages, open_session

DEVSET = Path(__file__).resolve().parents[2] / "fixtures" / "devset"
FACTS: dict[str, Any] = json.loads((DEVSET / "facts.json").read_text())
AGENTS = ["claude-code", "codex", "opencode", "gemini", "pi"]
FIRST_REQUEST = "Hi! This repo is shrinkray, our little URL shortener library"
#: Formats with one record per line: ``entry_index`` is the line of the message's record.
LINE_BASED = ["claude-code", "codex", "gemini", "pi"]


def _log(agent: str) -> Path:
    return DEVSET / str(FACTS["recordings"][agent]["log"])


@cache
def _read(agent: str) -> Session:
    sink = WarningSink()
    session = open_session([_log(agent)], sink)
    assert sink.warnings == [], agent
    return session


def _calls(messages: list[Message]) -> list[Message]:
    """The agent's tool calls (opencode's synthetic ``patch`` snapshots are no calls)."""
    return [m for m in messages if m.type == "tool_use" and not m.meta.get("synthetic")]


@pytest.mark.parametrize("agent", AGENTS)
def test_detected_as_its_own_format(agent: str) -> None:
    assert detect(_log(agent)).name == agent


@pytest.mark.parametrize("agent", AGENTS)
def test_ten_turns_with_the_recorded_tool_calls(agent: str) -> None:
    turns = parse_turns(_read(agent))
    assert len(turns) == FACTS["recordings"][agent]["turns"] == 10
    per_turn = [len(_calls(t.messages)) for t in turns]
    assert per_turn == FACTS["recordings"][agent]["tool_calls_per_turn"]
    # The user's words, not an injected context message (Gemini's <session_context>).
    assert turns[0].user_text.lstrip('"').startswith(FIRST_REQUEST)
    assert turns[-1].user_text.lstrip('"').startswith("Last one for today")


@pytest.mark.parametrize("agent", AGENTS)
def test_every_call_has_exactly_one_result(agent: str) -> None:
    messages = _read(agent).messages()
    calls = _calls(messages)
    results = [m for m in messages if m.type == "tool_result"]
    assert len(calls) == len(results) == 106
    call_ids = Counter(m.tool_call_id for m in calls)
    assert None not in call_ids
    assert set(call_ids.values()) == {1}
    assert Counter(m.tool_call_id for m in results) == call_ids
    # A result comes after its call.
    position = {m.id: n for n, m in enumerate(messages)}
    call_at = {m.tool_call_id: position[m.id] for m in calls}
    assert all(position[r.id] > call_at[r.tool_call_id] for r in results)


@pytest.mark.parametrize("agent", AGENTS)
def test_message_ids_are_unique_and_tool_calls_keep_the_logs_ids(agent: str) -> None:
    messages = _read(agent).messages()
    ids = Counter(m.id for m in messages)
    assert [i for i, n in ids.items() if n > 1] == []
    if agent == "gemini":
        # The log's own call ids (run_shell_command__run_shell_command_<ms>_0), no <id>.N.
        assert all(m.id == m.tool_call_id for m in _calls(messages))
        assert not [m.id for m in messages if m.id.endswith("_response")]


@pytest.mark.parametrize("agent", LINE_BASED)
def test_each_message_is_on_its_own_records_line(agent: str) -> None:
    raw = _log(agent).read_text().splitlines()
    records = {n for n, line in enumerate(raw, 1) if not _bookkeeping(agent, json.loads(line))}
    messages = _read(agent).messages()
    off_record = [
        (m.id, m.entry_index)
        for m in messages
        if m.entry_index not in records and not m.meta.get("synthetic")
    ]
    assert off_record == []
    lines = Counter(m.entry_index for m in messages)
    # Blocks of one record share its line; no line holds a whole history any more.
    assert max(lines.values()) <= 3
    assert len(lines) > 200


def _bookkeeping(agent: str, obj: dict[str, Any]) -> bool:
    """Lines that hold no message of their own (Gemini's header and ``$set`` lines)."""
    return agent == "gemini" and (("$set" in obj) or "id" not in obj)


@pytest.mark.parametrize("agent", LINE_BASED)
def test_every_fact_can_be_cited_by_its_lines(agent: str) -> None:
    lines = {m.entry_index for m in _read(agent).messages()}
    missing = []
    for fact in FACTS["facts"]:
        evidence = fact["evidence"].get(agent) or {}
        if evidence.get("lines") and not lines & set(evidence["lines"]):
            missing.append(fact["id"])
    assert missing == []


@pytest.mark.parametrize("agent", AGENTS)
def test_every_fact_can_be_cited_by_its_ids(agent: str) -> None:
    ids = {m.id for m in _read(agent).messages()}
    missing = []
    for fact in FACTS["facts"]:
        evidence = fact["evidence"].get(agent) or {}
        if evidence.get("message_ids") and not ids & set(evidence["message_ids"]):
            missing.append(fact["id"])
    assert missing == []


@pytest.mark.parametrize("agent", AGENTS)
def test_reasoning_is_thinking_only(agent: str) -> None:
    messages = _read(agent).messages()
    thinking = [m for m in messages if m.type == "thinking"]
    assert len(thinking) == 5
    replies = [m.text for m in messages if m.type == "text" and m.role == "assistant"]
    for t in thinking:
        words = t.text.split(": ", 1)[-1][:40]
        assert not [r for r in replies if words in r], (agent, words)
    shown = list(filter_messages(iter(messages), include_thinking=False, include_tools=True))
    assert not [m for m in shown if m.type == "thinking"]


@pytest.mark.parametrize("agent", AGENTS)
def test_streamed_messages_are_the_sessions(agent: str) -> None:
    streamed = [(m.id, m.type, m.entry_index) for m in iter_messages([_log(agent)], WarningSink())]
    assert streamed == [(m.id, m.type, m.entry_index) for m in _read(agent).messages()]
