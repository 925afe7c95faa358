"""Claude Code reader against real and peer fixtures (EXPECTATIONS.md "Claude Code" rows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, Session, TimelineEvent, TimelineSpan
from opencode_restore.sources import detect
from opencode_restore.sources.base import SNIFF_BYTES
from opencode_restore.sources.claude_code.reader import READER, log_form

CC = Path(__file__).resolve().parents[3] / "fixtures" / "claude-code"
SCOUT = CC / "scout"
CCLOG = CC / "claude-code-log"
SPOTTER = CC / "spotter"
BIG = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
TUI = CC / "recorded" / "tui-compact" / "e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"
PRINT = CC / "recorded" / "print-continue" / "d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"
SESSION_FILES = sorted(p for p in CC.rglob("*.jsonl") if "subagents" not in p.parts)


def _read(*paths: Path) -> Session:
    sink = WarningSink()
    session = READER.read(list(paths), sink)
    assert sink.warnings == []
    return session


def _ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


def _render_order(span: TimelineSpan) -> list[str]:
    """Message ids in display order: content depth first (branches where they fork)."""
    out: list[str] = []
    for item in span.content:
        if isinstance(item, TimelineSpan):
            out += _render_order(item)
        elif item.message is not None:
            out.append(item.message.id)
    return out


@pytest.mark.parametrize("path", SESSION_FILES, ids=lambda p: p.name)
def test_every_fixture_is_detected_and_streams_like_read(path: Path) -> None:
    assert READER.sniff(path, path.read_bytes()[:SNIFF_BYTES]) >= 0.8
    assert detect(path).name == "claude-code"
    session = READER.read([path], WarningSink())
    streamed = list(READER.iter_messages([path], WarningSink()))
    assert _ids(streamed) == _ids(session.messages())
    assert session.messages(), "every fixture holds a conversation"


@pytest.mark.parametrize("area", ["codex", "pi", "gemini"])
def test_other_agents_jsonl_is_not_claimed(fixtures: Path, area: str) -> None:
    files = sorted(p for p in (fixtures / area).rglob("*.jsonl") if "not-codex" not in p.parts)
    assert files
    for path in files:
        assert READER.sniff(path, path.read_bytes()[:SNIFF_BYTES]) == 0.0, path


# --- inspect_scout fixtures -------------------------------------------------------------


def test_scout_simple_conversation() -> None:
    s = _read(SCOUT / "simple_conversation.jsonl")
    assert s.id == "test-session-001"
    assert [m.role for m in s.messages()] == ["user", "assistant", "user", "assistant"]
    assert s.model == "claude-opus-4-5-20251101"
    assert s.usage().total == 300
    assert s.meta["slug"] == "simple-conv-slug"
    assert "session_ids" not in s.meta
    assert s.cwd == "/Users/test/project"
    assert s.started_at is not None
    assert s.started_at.isoformat() == "2026-01-31T10:00:00+00:00"


def test_scout_tool_call_conversation() -> None:
    msgs = _read(SCOUT / "tool_call_conversation.jsonl").messages()
    assert len(msgs) >= 3
    first = next(m for m in msgs if m.role == "assistant")
    response = [m for m in msgs if m.group == first.group]
    calls = [m for m in response if m.type == "tool_use"]
    assert [c.tool_name for c in calls] == ["Read"]
    assert calls[0].tool_input == {"file_path": "/Users/test/project/README.md"}
    assert calls[0].tool_call_id == "toolu_read_001"
    thinking = [m for m in response if m.type == "thinking"]
    assert len(thinking) == 1
    assert thinking[0].meta["signature"] == "sig_abc123"
    assert [m.id for m in response] == ["tool-002#0", "tool-002#1", "tool-002#2"]
    # usage is counted once per response: 200 + 50 + 100 + 50, then 250 + 40
    assert [m.usage.total for m in msgs if m.usage] == [400, 290]
    result = next(m for m in msgs if m.type == "tool_result")
    assert (result.role, result.tool_call_id, result.is_human) == ("tool", "toolu_read_001", False)


def test_scout_agent_session_links_the_old_layout_agent_file() -> None:
    s = _read(SCOUT / "agent_session.jsonl")
    msgs = s.messages()
    assert len(msgs) >= 2
    task = next(m for m in msgs if m.tool_name == "Task")
    assert task.tool_input is not None
    assert task.tool_input["subagent_type"] == "Explore"
    result = next(
        m for m in msgs if m.tool_call_id == task.tool_call_id and m.type == "tool_result"
    )
    assert result.text.splitlines()[-1].startswith("agentId: atest01 ")
    content = s.timeline.root.content
    at = next(
        i for i, e in enumerate(content) if isinstance(e, TimelineEvent) and e.uuid == task.id
    )
    agent = content[at + 1]
    assert isinstance(agent, TimelineSpan)
    assert (agent.name, agent.span_type, agent.id) == ("Explore", "agent", "agent-atest01")
    assert agent.meta["tool_use_id"] == "toolu_task_001"
    assert _ids(agent.messages())[0] == "sidechain-001"
    assert [m.tool_name for m in agent.messages() if m.type == "tool_use"] == ["Bash"]


def test_scout_agent_file_alone_reads_its_side_chain() -> None:
    s = _read(SCOUT / "agent-atest01.jsonl")
    assert len(s.messages()) == 5
    assert s.messages()[0].text.startswith("Explore the structure")


def test_scout_compaction_session() -> None:
    msgs = _read(SCOUT / "compaction_session.jsonl").messages()
    assert len(msgs) >= 3
    summary = next(m for m in msgs if m.type == "summary")
    assert summary.text.startswith("Summary of previous conversation")
    assert not summary.is_human
    boundary = next(m for m in msgs if m.type == "compaction")
    assert boundary.compaction is not None
    assert (boundary.role, boundary.text) == ("system", "Context compacted")
    assert boundary.compaction.kind == "summary"
    assert boundary.compaction.tokens_before == 50000
    assert boundary.compaction.trigger == "auto"
    assert boundary.compaction.summary == summary.text
    assert [m.text for m in msgs if m.is_human] == [
        "Start a long conversation",
        "Continue where we left off",
    ]


# --- claude-code-log fixtures -----------------------------------------------------------

LIVE = ["b2u", "b2a", "b2u2", "b2a2", "cb", "cs", "p1u", "p1a"]
LIVE_PRESERVED = ["b2u", "b2a", "b2u2", "cb", "cs", "b2a2", "p1u", "p1a"]


@pytest.mark.parametrize(
    ("name", "sid", "live"),
    [
        ("dag_compact_after_rewind.jsonl", "s1", LIVE),
        ("dag_compact_after_rewind_preserved.jsonl", "s2", LIVE_PRESERVED),
    ],
)
def test_compact_after_rewind_continues_the_live_branch(
    name: str, sid: str, live: list[str]
) -> None:
    s = _read(CCLOG / name)
    root = s.timeline.root
    assert _ids(s.messages()) == ["u1", "a1", *live]
    branch_at = next(i for i, e in enumerate(root.content) if isinstance(e, TimelineSpan))
    trunk = [e.uuid for e in root.content[:branch_at] if isinstance(e, TimelineEvent)]
    assert trunk == ["u1", "a1"]
    (branch,) = list(root.spans())
    assert (branch.id, branch.span_type, branch.branched_from) == (f"{sid}@b1u", "branch", "a1")
    assert _ids(branch.messages()) == ["b1u", "b1a"]
    assert _render_order(root) == ["u1", "a1", "b1u", "b1a", *live]
    assert _ids(list(READER.iter_messages([CCLOG / name], WarningSink()))) == ["u1", "a1", *live]
    cb = next(m for m in s.messages() if m.id == "cb")
    assert cb.compaction is not None
    assert cb.compaction.tokens_before == 150000
    assert cb.compaction.summary is not None
    assert "ran out of context" in cb.compaction.summary


def test_edge_cases_reports_non_object_lines_and_keeps_going() -> None:
    sink = WarningSink()
    s = READER.read([CCLOG / "edge_cases.jsonl"], sink)
    lines = {w.line: w.message for w in sink.warnings}
    for n, kind in ((13, "str"), (15, "int"), (16, "list")):
        assert lines[n] == f"JSON {kind} is not an object; skipped"
    assert lines[14] == "object without a type; skipped"
    assert {w.path for w in sink.warnings} == {str(CCLOG / "edge_cases.jsonl")}
    assert s.warnings == sink.warnings
    msgs = s.messages()
    special = next(m for m in msgs if m.id == "edge_011")
    assert "café" in special.text
    assert special.entry_index == 12
    error = next(m for m in msgs if m.type == "tool_result")
    assert error.is_error
    assert error.text.startswith("Error:")
    assert [
        m.meta.get("injected") for m in msgs if m.id in ("edge_006", "edge_007", "edge_008")
    ] == [
        "command",
        "command",
        "command",
    ]
    assert s.title is not None
    assert s.title.startswith("Tested various edge cases")


@pytest.mark.parametrize(
    ("name", "count", "humans", "tools"),
    [
        ("representative_messages.jsonl", 11, 4, ["Edit", "Bash"]),
        ("session_b.jsonl", 3, 2, []),
        ("todowrite_examples.jsonl", 11, 2, ["TodoWrite"] * 3),
    ],
)
def test_other_claude_code_log_samples(
    name: str, count: int, humans: int, tools: list[str]
) -> None:
    msgs = _read(CCLOG / name).messages()
    assert len(msgs) == count
    assert sum(m.is_human for m in msgs) == humans
    assert [m.tool_name for m in msgs if m.type == "tool_use"] == tools


# --- ccrider and simonw fixtures --------------------------------------------------------


def test_ccrider_sample_takes_its_title_from_the_summary_line() -> None:
    s = _read(CC / "ccrider" / "sample.jsonl")
    assert s.title == "Test session"
    assert len(s.messages()) == 2
    assert s.messages()[0].role == "user"


def test_ccrider_agent_file_has_no_title() -> None:
    s = _read(CC / "ccrider" / "agent-session.jsonl")
    assert s.title is None
    # A sub-agent's own file is the agent's session, linked to its parent.
    assert (s.id, s.meta["parent_session_id"]) == ("ffdd9610", "test-session-123")
    assert [m.text for m in s.messages()] == ["Warmup", "I'm ready to help!"]


def test_ccrider_no_summary() -> None:
    s = _read(CC / "ccrider" / "no-summary.jsonl")
    assert (s.id, s.title, len(s.messages())) == ("test-session-456", None, 2)


def test_simonw_sample_session() -> None:
    s = _read(CC / "simonw" / "sample_session.jsonl")
    assert len(s.messages()) == 8
    assert s.title == "Test session for JSONL parsing"
    assert [m.tool_name for m in s.messages() if m.type == "tool_use"] == ["Write", "Bash"]


# --- real transcripts -------------------------------------------------------------------


def test_spotter_session_with_compaction_and_subagents() -> None:
    assert sum(1 for _ in BIG.open("rb")) == 1863
    s = _read(BIG)
    assert s.id == "258c7280-ae70-4798-800f-63464d01a85d"
    assert (s.model, s.meta["version"]) == ("claude-opus-4-6", "2.1.39")
    msgs = s.messages()
    (boundary,) = [m for m in msgs if m.type == "compaction"]
    (summary,) = [m for m in msgs if m.type == "summary"]
    assert boundary.entry_index == 1256  # 0-based index 1255 in EXPECTATIONS.md
    assert boundary.compaction is not None
    assert boundary.compaction.tokens_before == 167094
    assert boundary.compaction.trigger == "auto"
    assert boundary.compaction.summary == summary.text
    assert [m.text for m in msgs if m.is_human] == ["Implement spotter-gqc", "did you push?"]
    # usage once per API response, however many lines the response was split into
    assert len([m for m in msgs if m.usage]) == len({m.group for m in msgs if m.group}) == 152
    assert not [sp for sp in s.timeline.root.walk() if sp.span_type == "branch"]
    content = s.timeline.root.content
    spans = {sp.id: sp for sp in s.timeline.root.spans()}
    guide = spans["agent-a881341"]
    assert (guide.name, guide.utility) == ("claude-code-guide", False)
    assert guide.meta["tool_use_id"] == "toolu_01VmaERAwhb19LGUwu9GenaK"
    before = content[content.index(guide) - 1]
    assert isinstance(before, TimelineEvent)
    assert before.message is not None
    assert before.message.tool_call_id == "toolu_01VmaERAwhb19LGUwu9GenaK"
    assert before.message.tool_name == "Task"
    assert len(guide.messages()) == 8
    compact = spans["agent-acompact-fffbd0"]
    assert compact.utility
    before = content[content.index(compact) - 1]
    assert isinstance(before, TimelineEvent)
    assert before.compaction is not None
    assert compact.messages()[-1].text.lstrip().startswith("<analysis>")


@pytest.mark.parametrize(
    ("name", "lines", "messages", "humans"),
    [("short.jsonl", 15, 11, 1), ("tool_heavy.jsonl", 39, 24, 2), ("subagent.jsonl", 96, 48, 2)],
)
def test_spotter_small_sessions(name: str, lines: int, messages: int, humans: int) -> None:
    path = SPOTTER / name
    assert sum(1 for _ in path.open("rb")) == lines
    msgs = _read(path).messages()
    assert (len(msgs), sum(m.is_human for m in msgs)) == (messages, humans)


def test_spotter_subagent_without_its_file_keeps_the_task_call() -> None:
    s = _read(SPOTTER / "subagent.jsonl")
    task = next(m for m in s.messages() if m.tool_name == "Task")
    assert task.tool_input is not None
    assert task.tool_input["subagent_type"] == "Plan"
    assert list(s.timeline.root.spans()) == []


def _turn_tools(msgs: list[Message]) -> list[list[str | None]]:
    turns: list[list[str | None]] = []
    for m in msgs:
        if m.is_human:
            turns.append([])
        elif m.type == "tool_use" and turns:
            turns[-1].append(m.tool_name)
    return turns


def test_recorded_tui_compact() -> None:
    s = _read(TUI)
    msgs = s.messages()
    assert [m.text for m in msgs if m.is_human] == [
        "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a test for it.",
        "Also mention the new flag in the README.",
        "Show me the git diff summary and we're done.",
    ]
    assert _turn_tools(msgs) == [
        ["Read", "Bash", "Edit", "Write", "Bash"],
        ["Read", "Edit"],
        ["Bash"],
    ]
    (boundary,) = [m for m in msgs if m.type == "compaction"]
    (summary,) = [m for m in msgs if m.type == "summary"]
    assert boundary.compaction is not None
    assert (boundary.compaction.trigger, boundary.compaction.tokens_before) == ("manual", 24417)
    assert boundary.compaction.tokens_after == 1369
    assert boundary.compaction.summary == summary.text
    assert summary.text.startswith("This session is being continued")
    # the compaction sits between turns 2 and 3; the /compact command lines are not requests
    turn3 = next(i for i, m in enumerate(msgs) if m.text.startswith("Show me the git diff"))
    assert msgs.index(boundary) < turn3
    injected = [m.meta.get("injected") for m in msgs[msgs.index(summary) + 1 : turn3]]
    assert injected == ["meta", "command", "command"]
    assert (s.cwd, s.meta["slug"]) == ("/home/dev/src/greet-cli", "polymorphic-crunching-emerson")


def test_recorded_print_continue() -> None:
    msgs = _read(PRINT).messages()
    assert sum(m.is_human for m in msgs) == 3
    assert _turn_tools(msgs) == [
        ["Read", "Bash", "Edit", "Write", "Bash"],
        ["Read", "Edit"],
        ["Bash"],
    ]
    assert not [m for m in msgs if m.type == "compaction"]
    thinking = [m for m in msgs if m.type == "thinking"]
    assert len(thinking) == 2
    assert all(m.role == "assistant" for m in thinking)
    assert all(m.file_index == 0 and m.entry_index > 0 for m in msgs)


def test_the_log_form_comes_from_one_read_of_the_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert log_form(CC / "headless" / "print-continue-turn3.jsonl") == "stream"
    assert log_form(CC / "simonw" / "sample_session.json") == "web"
    assert log_form(TUI) == "transcript"
    assert log_form(tmp_path / "gone.jsonl") == "transcript"  # the transcript reader reports it
    opened: list[Path] = []
    real_open = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    list(READER.iter_messages([TUI], WarningSink()))
    # The head for both tests, the first pass, the second pass.
    assert opened == [TUI, TUI, TUI]
