"""Slash commands: a prompt command is the user's request, a local one is not (issue 20 item 2).

Checked on the Claude Code JSONL reader (which sees the expanded prompt or the local
output after a command) and on the terminal reader (which sees only the typed line).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources.claude_code.reader import READER as CLAUDE
from opencode_restore.sources.slash import is_local_command
from opencode_restore.sources.terminal.reader import READER as TERMINAL

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SPOTTER = FIXTURES / "claude-code" / "spotter"
COMMANDS = FIXTURES / "claude-code" / "commands" / "prompt_and_local_commands.jsonl"
TUI = FIXTURES / "claude-code" / "recorded" / "tui-compact"
CAPTURES = FIXTURES / "terminal" / "real" / "spotter"


def _claude(path: Path) -> list[Message]:
    sink = WarningSink()
    msgs = CLAUDE.read([path], sink).messages()
    streamed = list(CLAUDE.iter_messages([path], sink))
    assert [(m.id, m.text, m.meta) for m in streamed] == [(m.id, m.text, m.meta) for m in msgs]
    return msgs


def _terminal(path: Path) -> list[Message]:
    sink = WarningSink()
    msgs = list(TERMINAL.iter_messages([path], sink))
    assert sink.warnings == []
    return msgs


def _requests(msgs: list[Message]) -> list[str]:
    return [m.text for m in msgs if m.is_human]


def test_skill_command_with_arguments_starts_a_turn() -> None:
    msgs = _claude(SPOTTER / "subagent.jsonl")
    turns = parse_turns(msgs)
    assert [t.user_text.split()[0] for t in turns] == ["/handgemacht:create-beads", "create"]
    first = turns[0].user_text
    assert first.startswith("/handgemacht:create-beads websearch to learn how to fastest setup")
    assert first.endswith("Maybe there are igniter scripts?")
    command = next(m for m in msgs if m.is_human)
    assert (command.entry_index, command.meta) == (
        4,
        {"command": "/handgemacht:create-beads", "args": first.partition(" ")[2]},
    )
    body = msgs[msgs.index(command) + 1]  # the expanded prompt: in the turn, not a request
    assert body.meta["expansion_of"] == "/handgemacht:create-beads"
    assert not body.is_human
    assert body.text.startswith("Create beads (epic + tasks + dependencies)")
    assert body in turns[0].messages


@pytest.mark.parametrize("name", ["short", "tool_heavy", "subagent"])
def test_jsonl_and_terminal_capture_of_one_session_agree(name: str) -> None:
    jsonl = _requests(_claude(SPOTTER / f"{name}.jsonl"))
    capture = _requests(_terminal(CAPTURES / f"{name}.terminal.txt"))
    assert len(jsonl) == len(capture)
    assert [" ".join(t.split())[:60] for t in jsonl] == [" ".join(t.split())[:60] for t in capture]


def test_prompt_commands_are_requests_local_commands_are_not() -> None:
    msgs = _claude(COMMANDS)
    assert [t.user_text for t in parse_turns(msgs)] == [
        "/changelog",  # no arguments, but its expanded prompt went to the model
        "Now bump the version to 0.3.0 in pyproject.toml.",
        "/review:pr 42 focus on the tests",  # its prompt was never written: the name decides
    ]
    model = next(m for m in msgs if m.meta.get("command") == "/model")
    assert (model.meta["args"], model.is_human) == ("sonnet", False)  # arguments, still local
    assert model.text.lstrip().startswith("<command-name>/model</command-name>")
    cost = next(m for m in msgs if m.meta.get("command") == "/cost")
    assert not cost.is_human


def test_unknown_command_followed_by_its_output_is_local() -> None:
    msgs = _claude(FIXTURES / "claude-code" / "claude-code-log" / "edge_cases.jsonl")
    command = next(m for m in msgs if m.meta.get("command") == "/test-command")
    assert command.meta["args"] == "--verbose --output /tmp/test.log"
    assert not command.is_human  # `<local-command-stdout>` came back, no prompt


def test_compact_is_a_compaction_not_a_turn() -> None:
    msgs = _claude(next(TUI.glob("*.jsonl")))
    compact = next(m for m in msgs if m.meta.get("command") == "/compact")
    assert not compact.is_human
    assert any(m.type == "compaction" for m in msgs)
    assert len(parse_turns(msgs)) == 3


def test_terminal_prompt_command_without_arguments_is_a_request(tmp_path: Path) -> None:
    text = (CAPTURES / "subagent.terminal.txt").read_text()
    head, sep, rest = text.partition("❯ /handgemacht:create-beads ")
    typed = rest.partition("\n\n❯ Create beads")  # drop the arguments the user typed
    capture = tmp_path / "no-args.terminal.txt"
    capture.write_text(head + sep.rstrip() + "\n\n❯ Create beads" + typed[2])
    msgs = _terminal(capture)
    assert _requests(msgs) == ["/handgemacht:create-beads", "create the beads"]
    body = next(m for m in msgs if m.meta.get("expansion_of"))
    assert body.text.startswith("Create beads (epic + tasks + dependencies)")


def test_terminal_local_command_with_arguments_is_no_request(tmp_path: Path) -> None:
    text = (CAPTURES / "short.terminal.txt").read_text()
    assert "❯ /model\n" in text
    capture = tmp_path / "model-opus.terminal.txt"
    capture.write_text(text.replace("❯ /model\n", "❯ /model opus\n"))
    msgs = _terminal(capture)
    model = next(m for m in msgs if m.meta.get("command") == "/model")
    assert (model.meta["args"], model.is_human) == ("opus", False)
    assert _requests(msgs) == ["mix phx.server doesnt seem to start"]


@pytest.mark.parametrize(
    ("name", "local"),
    [("/model", True), ("compact", True), ("/MCP", True), ("/init", False), ("/x:y", False)],
)
def test_local_command_names(name: str, local: bool) -> None:
    assert is_local_command(name) is local
