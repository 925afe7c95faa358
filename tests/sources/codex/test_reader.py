"""The Codex reader against real and peer sample rollouts (fixtures/codex)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, Session, TimelineEvent, TimelineSpan
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources import detect
from opencode_restore.sources.base import SNIFF_BYTES
from opencode_restore.sources.codex import READER

CCL = "claude-code-log"
ONE = f"{CCL}/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
PARENT = f"{CCL}/rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl"
CHILD = f"{CCL}/rollout-2026-01-03T04-05-10-33333333-3333-4333-8333-333333333333.jsonl"
LEGACY = f"{CCL}/legacy/rollout-44444444-4444-4444-8444-444444444444.jsonl"
EXEC = "recorded/exec-resume/rollout-2026-11-21T11-41-29-01a1fde9-539c-77f2-9e0a-d405fab49546.jsonl"
TUI = "recorded/tui-compact/rollout-2026-11-21T11-38-37-01a1fde6-b303-7f63-b067-d32dfaddcad9.jsonl"

PROMPTS = [
    "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a test for it.",
    "Also mention the new flag in the README.",
    "Show me the git diff summary and we're done.",
]


@pytest.fixture
def codex(fixtures: Path) -> Path:
    return fixtures / "codex"


def read(path: Path, sink: WarningSink | None = None) -> Session:
    return READER.read([path], sink if sink is not None else WarningSink())


def of_type(messages: list[Message], type_: str) -> list[Message]:
    return [m for m in messages if m.type == type_]


def humans(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.is_human]


# -- sniffing -----------------------------------------------------------------------------------


def test_sniff_claims_every_codex_fixture(codex: Path) -> None:
    files = [p for p in codex.rglob("*.jsonl") if "not-codex" not in p.parts]
    assert len(files) == 15  # 14 rollouts and one `codex exec --json` output
    for path in files:
        score = READER.sniff(path, path.read_bytes()[:SNIFF_BYTES])
        assert score >= 0.9, path
        assert detect(path).name == "codex"


def test_sniff_legacy_pre_envelope(codex: Path) -> None:
    path = codex / LEGACY
    assert READER.sniff(path, path.read_bytes()) == pytest.approx(0.9)


def test_sniff_rejects_claude_code_transcript(codex: Path) -> None:
    path = codex / "not-codex" / "scout__simple_conversation.jsonl"
    assert READER.sniff(path, path.read_bytes()) == 0.0


def test_sniff_first_line_longer_than_the_window(codex: Path) -> None:
    # 0.169's session_meta carries the whole system prompt; cut it inside that line.
    path = codex / EXEC
    head = path.read_bytes()[:2000]
    assert b"\n" not in head
    assert READER.sniff(path, head) == pytest.approx(0.9)


# -- claude-code-log samples (EXPECTATIONS.md, Codex rows) --------------------------------------


def test_prompt_and_answer_logged_twice_are_read_once(codex: Path) -> None:
    sink = WarningSink()
    session = read(codex / ONE, sink)
    msgs = session.messages()
    texts = of_type(msgs, "text")
    assert [(m.role, m.text) for m in texts] == [
        ("user", "List the synthetic files."),
        ("assistant", "The synthetic files are alpha.txt and beta.txt."),
    ]
    assert [m.entry_index for m in texts] == [4, 13]  # the response items, not the events
    assert sink.warnings == []


def test_three_tool_calls_with_parsed_inputs_and_paired_results(codex: Path) -> None:
    msgs = read(codex / ONE).messages()
    calls = of_type(msgs, "tool_use")
    assert [m.tool_name for m in calls] == ["exec_command", "apply_patch", "mcp__synthetic__lookup"]
    assert calls[0].tool_input == {"cmd": "find . -maxdepth 1 -type f"}
    assert calls[1].tool_input == {
        "input": "*** Begin Patch\n*** Add File: gamma.txt\n+synthetic\n*** End Patch"
    }
    assert calls[2].tool_input == {"query": "fixture"}
    results = of_type(msgs, "tool_result")
    assert [(r.tool_call_id, r.tool_name, r.text) for r in results] == [
        ("call-structured-001", "exec_command", "./alpha.txt\n./beta.txt"),
        ("call-custom-001", "apply_patch", "Done!"),
        ("call-mcp-001", "mcp__synthetic__lookup", '{"status":"ok"}'),
    ]
    assert all(r.role == "tool" and not r.is_error for r in results)


def test_reasoning_summary_shown_encrypted_content_never(codex: Path) -> None:
    session = read(codex / ONE)
    thinking = of_type(session.messages(), "thinking")
    assert [m.text for m in thinking] == ["I will inspect the synthetic directory."]
    dump = repr(session)
    assert "SYNTHETIC_ENCRYPTED_CONTENT_MUST_NOT_RENDER" not in dump


def test_unknown_last_line_is_ignored_silently(codex: Path) -> None:
    sink = WarningSink()
    msgs = read(codex / ONE, sink).messages()
    assert max(m.entry_index for m in msgs) == 13
    assert sink.warnings == []


def test_header_facts(codex: Path) -> None:
    session = read(codex / ONE)
    assert session.id == "11111111-1111-4111-8111-111111111111"
    assert session.agent == "codex"
    assert session.cwd == "/workspace/synthetic-project"
    assert session.model == "synthetic-model"
    assert session.started_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert session.meta["cli_version"] == "0.0.0-test"
    assert session.files == [str(codex / ONE)]


def test_child_thread_skips_the_replayed_parent_prefix(codex: Path) -> None:
    session = read(codex / CHILD)
    assert session.id == "33333333-3333-4333-8333-333333333333"
    assert session.meta["parent_thread_id"] == "22222222-2222-4222-8222-222222222222"
    assert [(m.role, m.text) for m in session.messages()] == [
        ("user", "Inspect fixtures."),
        ("assistant", "The fixtures are fully synthetic."),
    ]
    streamed = list(READER.iter_messages([codex / CHILD], WarningSink()))
    assert [m.id for m in streamed] == [m.id for m in session.messages()]


def test_parent_read_attaches_the_child_span_after_the_spawn_call(codex: Path) -> None:
    session = read(codex / PARENT)
    root = session.timeline.root
    assert [(m.role, m.type) for m in session.messages()] == [
        ("user", "text"),
        ("assistant", "tool_use"),
        ("tool", "tool_result"),
    ]
    kinds = ["span" if isinstance(i, TimelineSpan) else i.message.type for i in root.content]  # type: ignore[union-attr]
    assert kinds == ["text", "tool_use", "span", "tool_result"]
    (child,) = list(root.spans())
    assert child.id == "33333333-3333-4333-8333-333333333333"
    assert child.span_type == "agent"
    assert child.name == "synthetic_researcher"
    assert child.meta["spawn_call_id"] == "call-spawn-001"
    assert [m.text for m in child.messages()] == [
        "Inspect fixtures.",
        "The fixtures are fully synthetic.",
    ]
    assert session.meta["child_files"] == [str(codex / CHILD)]


def test_legacy_pre_envelope_session(codex: Path) -> None:
    sink = WarningSink()
    session = read(codex / LEGACY, sink)
    assert session.id == "44444444-4444-4444-8444-444444444444"
    assert session.started_at == datetime(2026, 1, 4, 5, 6, 7, tzinfo=UTC)
    assert [(m.role, m.type, m.text, m.entry_index) for m in session.messages()] == [
        ("user", "text", "Open the synthetic legacy session.", 2),
        ("assistant", "text", "The synthetic legacy session is open.", 3),
    ]
    assert sink.warnings == []


# -- opensession and agentsview samples ---------------------------------------------------------


def test_web_search_actions_and_compaction_event(codex: Path) -> None:
    msgs = read(codex / "opensession" / "web-search-actions.jsonl").messages()
    searches = of_type(msgs, "tool_use")
    assert [m.tool_name for m in searches] == ["web_search"] * 3
    assert [m.tool_input["type"] for m in searches] == ["search", "open_page", "find_in_page"]  # type: ignore[index]
    assert searches[0].tool_input["query"] == "rust serde flatten"  # type: ignore[index]
    assert searches[0].tool_call_id == "ws_fixture_1"
    assert searches[2].text == "find_in_page: flatten in https://serde.rs/attr-flatten.html"
    (marker,) = of_type(msgs, "compaction")
    assert marker.role == "system"
    assert marker.compaction is not None
    assert marker.compaction.summary is None
    assert searches[2].usage is not None
    assert searches[2].usage.total == 26
    assert len(msgs) == 4  # the item_completed Plan event is not conversation


def test_desktop_rollout_falls_back_to_events(codex: Path) -> None:
    session = read(codex / "opensession" / "rollout-desktop.jsonl")
    msgs = session.messages()
    assert [(m.role, m.type, m.text) for m in msgs] == [
        ("user", "text", "inspect this session"),
        ("assistant", "thinking", "checking project structure"),
        ("assistant", "text", "done"),
    ]
    assert msgs[0].is_human
    assert msgs[2].usage is not None
    assert (msgs[2].usage.input, msgs[2].usage.output) == (12, 7)
    assert session.usage().total == 19


def test_agentsview_messages_without_item_type(codex: Path) -> None:
    session = read(codex / "agentsview" / "standard_session.jsonl")
    assert session.id == "abc-123"
    assert session.cwd == "/Users/alice/code/my-api"
    assert [(m.role, m.text) for m in session.messages()] == [
        ("user", "Add rate limiting"),
        ("assistant", "I'll add rate limiting to the API."),
    ]


@pytest.mark.parametrize(
    ("name", "tool", "tool_input"),
    [
        ("fc_args_1.jsonl", "exec_command", {"cmd": "rg --files", "workdir": "/tmp"}),
        (
            "fc_args_2.jsonl",
            "apply_patch",
            {
                "patch": "*** Begin Patch\n*** Update File: internal/parser/codex.go\n"
                "*** Update File: internal/parser/parser_test.go\n*** End Patch"
            },
        ),
        ("fc_stdin.jsonl", "write_stdin", {"chars": "yes\n", "session_id": "sess-42"}),
    ],
)
def test_agentsview_function_call_arguments(
    codex: Path, name: str, tool: str, tool_input: dict[str, str]
) -> None:
    msgs = read(codex / "agentsview" / name).messages()
    assert [m.type for m in msgs] == ["text", "tool_use"]
    assert msgs[1].tool_name == tool
    assert msgs[1].tool_call_id == "call_test"
    assert msgs[1].tool_input == tool_input


def test_agentsview_function_calls_without_arguments(codex: Path) -> None:
    calls = of_type(read(codex / "agentsview" / "function_calls.jsonl").messages(), "tool_use")
    assert [(m.tool_name, m.tool_input, m.meta["summary"]) for m in calls] == [
        ("shell_command", {}, "Running tests"),
        ("apply_patch", {}, "Fixing typo"),
    ]


# -- recorded Codex 0.169 rollouts --------------------------------------------------------------


@pytest.mark.parametrize("name", [EXEC, TUI])
def test_recorded_three_human_turns(codex: Path, name: str) -> None:
    sink = WarningSink()
    session = read(codex / name, sink)
    msgs = session.messages()
    assert [m.text for m in humans(msgs)] == PROMPTS
    assert sink.warnings == []
    assert session.model == "gpt-5-codex"
    assert session.cwd == "/home/dev/src/greet-cli"
    assert session.meta["cli_version"] == "0.169.0"
    assert len({m.id for m in msgs}) == len(msgs)
    injected = [m for m in msgs if m.role == "user" and m.meta.get("synthetic")]
    assert len(injected) == 1
    assert injected[0].text.startswith("<environment_context>")
    system = [m for m in msgs if m.role == "system" and m.type == "text"]
    assert len(system) == 1
    assert system[0].text.startswith("<skills_instructions>")
    assert system[0].meta["source_role"] == "developer"
    assert len(of_type(msgs, "thinking")) == 2


@pytest.mark.parametrize("name", [EXEC, TUI])
def test_recorded_tool_calls_keep_commands_and_patches(codex: Path, name: str) -> None:
    msgs = read(codex / name).messages()
    calls = of_type(msgs, "tool_use")
    assert [m.tool_name for m in calls] == ["exec_command"] * 8
    commands = [str(m.tool_input["cmd"]) for m in calls]  # type: ignore[index]
    assert commands[0] == "sed -n '1,200p' greet.py"
    assert commands[1] == "python3 greet.py --name Ada && git status --short"
    patches = [c for c in commands if c.startswith("apply_patch <<'EOF'\n*** Begin Patch\n")]
    assert len(patches) == 3
    assert all(c.endswith("*** End Patch\nEOF") for c in patches)
    assert "*** Add File: tests/test_greet.py" in patches[1]
    results = of_type(msgs, "tool_result")
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls]
    assert all(r.meta["exit_code"] == 0 and not r.is_error for r in results)
    assert "OK" in results[4].text
    assert "Ran 2 tests" in results[4].text


@pytest.mark.parametrize("name", [EXEC, TUI])
def test_recorded_turns_through_the_turn_parser(codex: Path, name: str) -> None:
    turns = parse_turns(read(codex / name))
    assert [t.user_text for t in turns] == PROMPTS
    first = {(a.file_path, a.action) for a in turns[0].artifacts}
    assert {
        ("greet.py", "read"),
        ("greet.py", "edited"),
        ("tests/test_greet.py", "created"),
    } <= first
    assert {(a.file_path, a.action) for a in turns[1].artifacts} == {
        ("README.md", "read"),
        ("README.md", "edited"),
    }
    assert [c.command for c in turns[2].commands] == ["git diff --stat && git status --short"]


def test_recorded_usage_matches_the_final_token_count(codex: Path) -> None:
    exec_session = read(codex / EXEC)
    assert exec_session.usage().total == 128335
    assert exec_session.usage().cache_read == 63242
    tui = read(codex / TUI)
    assert tui.usage().total == 156304 + 2047
    calls = [m for m in tui.messages() if m.usage is not None]
    assert all(m.role in ("assistant", "system") for m in calls)


def test_tui_compact_has_one_marker_between_turns_two_and_three(codex: Path) -> None:
    session = read(codex / TUI)
    msgs = session.messages()
    (marker,) = of_type(msgs, "compaction")
    position = msgs.index(marker)
    human_positions = [msgs.index(m) for m in humans(msgs)]
    assert human_positions[1] < position < human_positions[2]
    assert marker.role == "system"
    assert marker.entry_index == 83
    assert marker.compaction is not None
    assert marker.compaction.kind == "summary"
    summary = marker.compaction.summary or ""
    assert "## Goal" in summary
    assert "Show the git diff summary" in summary
    assert marker.text == summary
    assert marker.meta["replacement_history_items"] == 5
    # The summary the model wrote for the compaction is not repeated as an answer.
    assert not [m for m in msgs if m.role == "assistant" and m.text.startswith("<analysis>")]
    events = [e for e in session.timeline.root.content if isinstance(e, TimelineEvent)]
    assert [e.kind for e in events].count("compaction") == 1


def test_exec_resume_has_no_compaction_and_ordered_timestamps(codex: Path) -> None:
    msgs = read(codex / EXEC).messages()
    assert of_type(msgs, "compaction") == []
    stamps = [m.timestamp for m in msgs]
    assert all(s is not None for s in stamps)
    assert stamps == sorted(stamps)  # type: ignore[type-var]
    assert [m.entry_index for m in msgs] == sorted(m.entry_index for m in msgs)


def test_iter_messages_equals_read(codex: Path) -> None:
    path = codex / TUI
    streamed = list(READER.iter_messages([path], WarningSink()))
    assert [(m.id, m.text) for m in streamed] == [(m.id, m.text) for m in read(path).messages()]
