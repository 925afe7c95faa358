"""A Claude Code session read hollow leaves the live path's bodies in the file, and its
``bodies`` stream gives every one of them back, in order, as a whole read has them."""

from __future__ import annotations

from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.sources import open_session
from opencode_restore.sources.claude_code.reader import READER, log_form

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "claude-code"
LOGS = sorted(p for p in FIXTURES.rglob("*.jsonl") if log_form(p) == "transcript")
AGENT = next(FIXTURES.rglob("agent-a881341.jsonl"))


def _body(m: Message) -> tuple[str, str, str, object]:
    return m.id, m.type, m.text, m.tool_input


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_the_stream_gives_back_what_a_whole_read_holds(path: Path) -> None:
    whole = open_session([path], WarningSink())
    hollow = open_session([path], WarningSink(), hollow=True)
    assert hollow.bodies is not None
    assert [m.id for m in hollow.messages()] == [m.id for m in whole.messages()]
    for m in hollow.messages():
        if m.type in ("tool_use", "tool_result", "thinking") or (
            m.role == "assistant" and m.type == "text"
        ):
            assert (m.text, m.tool_input) == ("", None)
    assert [_body(m) for m in hollow.bodies()] == [_body(m) for m in whole.messages()]
    # Everything but the bodies is the same: spans, branches, sub-agents, header.
    assert [s.id for s in hollow.timeline.root.walk()] == [s.id for s in whole.timeline.root.walk()]
    assert (hollow.id, hollow.title, hollow.warnings) == (whole.id, whole.title, whole.warnings)


def test_requests_and_slash_commands_keep_their_text() -> None:
    path = FIXTURES / "commands" / "prompt_and_local_commands.jsonl"
    whole = open_session([path], WarningSink())
    hollow = open_session([path], WarningSink(), hollow=True)
    kept = [m.text for m in hollow.messages() if m.role == "user" and m.type == "text"]
    assert kept == [m.text for m in whole.messages() if m.role == "user" and m.type == "text"]
    assert any(t.startswith("/") for t in kept)


def test_a_sub_agent_file_read_hollow_is_still_its_own_session() -> None:
    hollow = open_session([AGENT], WarningSink(), hollow=True)
    assert hollow.id == "a881341"
    assert hollow.bodies is not None
    assert list(hollow.bodies())


def test_sub_agents_and_branches_are_read_whole() -> None:
    path = FIXTURES / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    hollow = open_session([path], WarningSink(), hollow=True)
    root = hollow.timeline.root
    others = [m for span in root.walk() if span is not root for m in span.messages()]
    assert any(m.type == "tool_result" and m.text for m in others)


@pytest.mark.parametrize(
    "path",
    [p for p in FIXTURES.rglob("*.json*") if log_form(p) != "transcript"],
    ids=lambda p: p.name,
)
def test_headless_streams_and_web_exports_are_read_whole(path: Path) -> None:
    assert READER.read_hollow([path], WarningSink()) is None
    session = open_session([path], WarningSink(), hollow=True)
    assert session.bodies is None
