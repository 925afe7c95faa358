"""The terminal-capture reader on real recordings and the seed-sketch fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.sources import detect
from opencode_restore.sources.terminal import screen
from opencode_restore.sources.terminal.reader import READER

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "terminal"
REAL = FIX / "real"


def read(path: Path) -> list[Message]:
    sink = WarningSink()
    msgs = list(READER.iter_messages([path], sink))
    assert sink.warnings == []
    return msgs


def humans(msgs: list[Message]) -> list[str]:
    return [m.text for m in msgs if m.is_human]


def jsonl_human_prompts(path: Path) -> int:
    """Count what a person typed in a Claude Code JSONL: real prompts and slash commands
    that sent a prompt; tool results, meta (skill expansions), interruptions, local command
    output and local commands (``/model``, ``/mcp``) are not requests."""
    count = 0
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("type") != "user" or obj.get("isMeta") or obj.get("isCompactSummary"):
            continue
        content = obj["message"]["content"]
        if isinstance(content, list):
            if any(b.get("type") == "tool_result" for b in content):
                continue
            content = "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
        if content.startswith(("[Request interrupted", "<local-command")):
            continue
        if "<command-name>" in content:
            name = content.partition("<command-name>")[2].partition("</command-name>")[0]
            if name in ("/model", "/mcp"):
                continue
        count += 1
    return count


# -- Claude Code spotter captures (the same sessions as the JSONL beside them) -------------


@pytest.mark.parametrize(("name", "expected"), [("short", 1), ("tool_heavy", 2), ("subagent", 2)])
def test_spotter_capture_has_the_jsonl_user_turns(name: str, expected: int) -> None:
    msgs = read(REAL / "spotter" / f"{name}.terminal.txt")
    assert jsonl_human_prompts(REAL / "spotter" / f"{name}.jsonl") == expected
    assert len(humans(msgs)) == expected


def test_spotter_short_drops_shell_preamble_and_slash_commands() -> None:
    msgs = read(REAL / "spotter" / "short.terminal.txt")
    assert humans(msgs) == ["mix phx.server doesnt seem to start"]
    first = msgs[0]
    assert (first.id, first.entry_index, first.role) == ("0:10", 10, "user")
    model_cmd = next(m for m in msgs if m.text == "/model")
    assert model_cmd.meta == {"command": "/model", "synthetic": True}
    assert not model_cmd.is_human
    assert not any("claude --resume" in m.text for m in msgs)
    assert not any('Try "edit' in m.text or "bypass permissions" in m.text for m in msgs)


def test_spotter_tool_heavy_tools_and_results() -> None:
    msgs = read(REAL / "spotter" / "tool_heavy.terminal.txt")
    bash = next(m for m in msgs if m.type == "tool_use" and m.tool_name == "Bash")
    assert bash.tool_input == {"command": "mix phx.server"}
    assert bash.id == "0:12"
    result = msgs[msgs.index(bash) + 1]
    assert result.type == "tool_result"
    assert result.role == "tool"
    assert result.tool_call_id == bash.id
    assert result.text == "Running in the background (↓ to manage)"
    search = next(m for m in msgs if m.type == "tool_use" and m.tool_name == "WebSearch")
    assert search.tool_input == {
        "query": "xterm.js scroll not working embedded page captures scroll events"
    }
    fetch = next(m for m in msgs if m.type == "tool_use" and m.tool_name == "WebFetch")
    assert fetch.tool_input == {"url": "https://github.com/xtermjs/xterm.js/issues/1343"}
    mcp_out = next(m for m in msgs if m.text == "Reconnected to tidewave.")
    assert mcp_out.meta.get("command_output") is True


def test_spotter_subagent_skill_expansion_is_synthetic() -> None:
    msgs = read(REAL / "spotter" / "subagent.terminal.txt")
    users = [m for m in msgs if m.role == "user"]
    assert users[0].meta["command"] == "/handgemacht:create-beads"
    assert users[0].text.endswith("Maybe there are igniter scripts?")
    assert users[1].meta["synthetic"] is True
    assert users[1].meta["expansion_of"] == "/handgemacht:create-beads"
    assert users[1].text.startswith("Create beads (epic + tasks + dependencies)")
    assert humans(msgs)[1] == "create the beads"
    write = next(m for m in msgs if m.type == "tool_use" and m.tool_name == "Write")
    assert write.tool_input == {"file_path": "plan.md"}
    wrote = msgs[msgs.index(write) + 1]
    assert wrote.text.startswith("Wrote 104 lines to plan.md")
    assert "## Problem" in wrote.text  # output continues across blank lines
    bash = [m for m in msgs if m.type == "tool_use" and m.tool_name == "Bash"]
    assert len(bash) == 3
    assert bash[0].tool_input is not None
    assert "Spotter has no automated code quali" in bash[0].tool_input["command"]
    plan = next(m for m in msgs if m.type == "tool_use" and m.tool_name == "Plan")
    assert plan.tool_input == {"args": "Draft beads for linting setup"}


# -- recorded Claude Code 2.1 TUI -----------------------------------------------------------


def test_claude_tui_snapshot_turns_tools_and_compaction() -> None:
    msgs = read(REAL / "claude-tui" / "04_after_turn3.txt")
    assert humans(msgs) == [
        "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a test for it.",
        "Also mention the new flag in the README.",
        "Show me the git diff summary and we're done.",
    ]
    tools = [(m.tool_name, m.tool_input) for m in msgs if m.type == "tool_use"]
    assert ("Edit", {"file_path": "greet.py"}) in tools
    assert ("Write", {"file_path": "tests/test_greet.py"}) in tools
    assert ("Bash", {"command": "git diff --stat && git status --short"}) in tools
    assert ("Read", {}) in tools  # "Read 1 file (ctrl+o to expand)"
    comp = [m for m in msgs if m.type == "compaction"]
    assert len(comp) == 1
    assert comp[0].role == "system"
    assert comp[0].compaction is not None
    assert comp[0].compaction.kind == "summary"
    assert not any(m.text.startswith("Added a --shout") and m.type == "tool_use" for m in msgs)


def test_claude_tui_composer_and_slash_menu_are_dropped() -> None:
    msgs = read(REAL / "claude-tui" / "03a_compact_typed.txt")
    assert len(humans(msgs)) == 2
    assert not any("Free up context" in m.text for m in msgs)


def test_claude_typescript_is_replayed_with_scrollback() -> None:
    msgs = read(REAL / "claude-tui" / "tui.typescript")
    assert len(humans(msgs)) == 3
    assert sum(m.type == "compaction" for m in msgs) == 1
    assert len({m.id for m in msgs}) == len(msgs)


# -- recorded opencode 1.18 TUI -------------------------------------------------------------


def test_opencode_snapshot_turn2_with_sidebar_cut() -> None:
    msgs = read(REAL / "opencode-tui" / "02_after_turn2.txt")
    assert humans(msgs) == ["Also mention the new flag in the README."]
    user = next(m for m in msgs if m.is_human)
    assert user.id == "0:17"
    tools = [(m.tool_name, m.tool_input, m.entry_index) for m in msgs if m.type == "tool_use"]
    assert tools == [
        ("Read", {"file_path": "README.md"}, 24),
        ("Edit", {"file_path": "README.md"}, 29),
    ]
    edit_out = next(m for m in msgs if m.type == "tool_result" and m.tool_name == "Edit")
    assert "--shout" in edit_out.text
    assert not any("Context" in m.text or "LSP" in m.text or "9,606" in m.text for m in msgs)
    assert not any("Build · Coder 1 FakeAI" in m.text for m in msgs)  # the composer
    # The top block is the tail of a tool output whose header scrolled off.
    assert msgs[0].type == "tool_result"
    assert msgs[0].meta == {"orphan": True}


def test_opencode_snapshot_with_escapes_reads_the_same() -> None:
    plain = read(REAL / "opencode-tui" / "02_after_turn2.txt")
    ansi = read(REAL / "opencode-tui" / "02_after_turn2.ansi.txt")
    assert [(m.id, m.type, m.text) for m in plain] == [(m.id, m.type, m.text) for m in ansi]


def test_opencode_compaction_divider() -> None:
    msgs = read(REAL / "opencode-tui" / "03_after_compact.txt")
    comp = [m for m in msgs if m.type == "compaction"]
    assert len(comp) == 1
    c = comp[0]
    assert (c.role, c.id, c.entry_index) == ("system", "0:5", 5)
    assert c.compaction is not None
    assert c.compaction.kind == "summary"
    assert c.compaction.summary is not None
    assert c.compaction.summary.startswith("Objective")
    assert "Next Move" in c.compaction.summary


def test_opencode_snapshot_turn3_shell_tool() -> None:
    msgs = read(REAL / "opencode-tui" / "04_after_turn3.txt")
    assert humans(msgs) == ["Show me the git diff summary and we're done."]
    bash = next(m for m in msgs if m.type == "tool_use" and m.tool_name == "Bash")
    assert bash.tool_input == {"command": "git diff --stat && git status --short"}
    out = msgs[msgs.index(bash) + 1]
    assert out.tool_call_id == bash.id
    assert "2 files changed" in out.text
    assert READER.read([REAL / "opencode-tui" / "04_after_turn3.txt"], WarningSink()).model == (
        "Coder 1"
    )


def test_opencode_snapshots_popup_and_startup() -> None:
    typed = read(REAL / "opencode-tui" / "03a_compact_typed.txt")
    assert not any("/review" in m.text or "/compact" in m.text for m in typed)
    assert read(REAL / "opencode-tui" / "00_startup.txt") == []


def test_opencode_typescript_full_screen_replay() -> None:
    msgs = read(REAL / "opencode-tui" / "tui.typescript")
    assert humans(msgs) == [
        "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a test for it.",
        "Also mention the new flag in the README.",
        "Show me the git diff summary and we're done.",
    ]
    comp = [m for m in msgs if m.type == "compaction"]
    assert len(comp) == 1
    assert comp[0].compaction is not None
    assert comp[0].compaction.kind == "summary"
    assert "Work State" in (comp[0].compaction.summary or "")
    tools = [(m.tool_name, m.tool_input) for m in msgs if m.type == "tool_use"]
    assert tools == [
        ("Read", {"file_path": "greet.py"}),
        ("Bash", {"command": "python3 greet.py --name Ada && git status --short"}),
        ("Edit", {"file_path": "greet.py"}),
        ("Write", {"file_path": "tests/test_greet.py"}),
        ("Bash", {"command": "python3 -m unittest discover -s tests -t . -v"}),
        ("Read", {"file_path": "README.md"}),
        ("Edit", {"file_path": "README.md"}),
        ("Bash", {"command": "git diff --stat && git status --short"}),
    ]
    assert len({m.id for m in msgs}) == len(msgs)
    assert all(m.id.startswith(f"0:{m.entry_index}") for m in msgs)
    # Human turn order: compaction sits between turn 2 and turn 3.
    order = [
        m.type if m.type == "compaction" else m.text for m in msgs if m.is_human or m.compaction
    ]
    assert order[2] == "compaction"


# -- recorded Codex TUI (same markers family) -------------------------------------------------


def test_codex_snapshot_and_typescript() -> None:
    snap = read(REAL / "codex-tui" / "04_after_turn3.txt")
    assert humans(snap) == [
        "Also mention the new flag in the README.",
        "Show me the git diff summary and we're done.",
    ]
    assert sum(m.type == "compaction" for m in snap) == 1
    tools = [(m.tool_name, m.tool_input) for m in snap if m.type == "tool_use"]
    assert ("Read", {"file_path": "README.md"}) in tools
    assert ("Edit", {"file_path": "README.md"}) in tools
    assert ("Bash", {"command": "git diff --stat && git status --short"}) in tools
    full = read(REAL / "codex-tui" / "tui.typescript")
    assert len(humans(full)) == 3
    assert sum(m.type == "compaction" for m in full) == 1


# -- the seed sketch (old opencode TUI), generated with escapes ------------------------------


def test_seed_single_turn() -> None:
    msgs = read(FIX / "seed_single.log")
    assert [(m.id, m.role, m.type) for m in msgs] == [
        ("0:2", "user", "text"),
        ("0:6", "assistant", "text"),
        ("0:7", "assistant", "tool_use"),
        ("0:9", "assistant", "text"),
    ]
    assert msgs[0].text == "What does greet.py print without arguments?"
    assert msgs[1].text == "Let me look at the entry point."  # the spinner redraw is gone
    assert msgs[2].tool_input == {"file_path": "greet.py"}
    assert msgs[3].text == "It prints Hello, world! (the default name is world)."


def test_seed_multi_turn_tools() -> None:
    msgs = read(FIX / "seed_multi.log")
    assert humans(msgs) == [
        "Add a --shout flag to greet.py and a test for it.",
        "Also document it in\nthe README, please.",
    ]
    assert not any("Generating" in m.text or "marco (" in m.text for m in msgs)
    tools = [(m.tool_name, m.tool_input, m.entry_index) for m in msgs if m.type == "tool_use"]
    assert tools == [
        ("Read", {"file_path": "greet.py"}, 7),
        ("Edit", {"file_path": "greet.py"}, 9),
        ("Write", {"file_path": "tests/test_greet.py"}, 12),
        ("Bash", {"command": "python3 -m unittest -q"}, 14),
        ("Edit", {"file_path": "README.md"}, 27),
        ("Bash", {"command": "git diff --stat"}, 28),
    ]
    result = next(m for m in msgs if m.type == "tool_result")
    assert (result.id, result.text) == ("0:15", "..\nRan 2 tests in 0.001s\nOK")
    assert any(m.text == "Now the flag." for m in msgs)


def test_read_builds_a_session() -> None:
    session = READER.read([FIX / "seed_multi.log", FIX / "seed_single.log"], WarningSink())
    msgs = session.messages()
    assert session.agent == "terminal"
    assert len(humans(msgs)) == 3
    assert {m.file_index for m in msgs} == {0, 1}
    assert msgs[-1].id == "1:9"


# -- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        REAL / "opencode-tui" / "tui.typescript",
        REAL / "opencode-tui" / "02_after_turn2.txt",
        REAL / "claude-tui" / "04_after_turn3.txt",
        REAL / "spotter" / "tool_heavy.terminal.txt",
        FIX / "seed_multi.log",
    ],
)
def test_sniff_claims_captures(path: Path) -> None:
    head = path.read_bytes()[:65536]
    assert READER.sniff(path, head) >= 0.7


def test_sniff_never_claims_json(tmp_path: Path) -> None:
    jsonl = REAL / "spotter" / "short.jsonl"
    assert READER.sniff(jsonl, jsonl.read_bytes()[:65536]) == 0.0
    assert READER.sniff(tmp_path / "x.json", b'  [{"a": 1}]') == 0.0
    assert READER.sniff(tmp_path / "b", b"\x00\x01binary") == 0.0
    # No agent's transcript marker: not claimed, escapes or not.
    assert READER.sniff(tmp_path / "t.txt", b"just some notes\n") == 0.0
    assert READER.sniff(tmp_path / "t.txt", b"\x1b[1mbold\x1b[0m notes\n") == 0.0
    assert READER.sniff(tmp_path / "t.txt", b"\x1b[1m\xe2\x9d\xaf \x1b[0m fix it\n") == 0.9
    assert READER.sniff(tmp_path / "t.txt", "❯ fix it\n".encode()) == 0.3


@pytest.mark.parametrize(
    "text",
    [
        "build-host-7\n",  # /etc/hostname
        "# My project\n\nRun `make` to build.\n",  # a README
        "\x1b[01;34msrc\x1b[0m  \x1b[01;32mrun.sh\x1b[0m\n",  # ls --color
    ],
)
def test_any_text_file_is_no_terminal_log_unless_forced(tmp_path: Path, text: str) -> None:
    from click.testing import CliRunner

    from opencode_restore.cli import cli

    path = tmp_path / "notes.txt"
    path.write_text(text)
    runner = CliRunner()
    for command in (["restore", str(path)], ["messages", str(path)]):
        result = runner.invoke(cli, command)
        assert result.exit_code == 2, result.output
        assert "unknown log format" in result.output
    forced = runner.invoke(cli, ["messages", str(path), "--agent", "terminal"])
    assert forced.exit_code == 0, forced.output


def test_detect_picks_terminal_for_a_capture() -> None:
    assert detect(FIX / "seed_multi.log").name == "terminal"


# -- a capture too long to replay whole --------------------------------------------------


@pytest.mark.parametrize("tui", ["opencode-tui", "claude-tui"])
def test_a_long_capture_replays_its_end_and_says_what_it_left_out(
    tui: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pyte replays about 1 MB/s: a capture of hours would take minutes. Only its last
    # MAX_REPLAY_BYTES are replayed; the lines keep their numbers in the file.
    path = REAL / tui / "tui.typescript"
    full = read(path)
    size = path.stat().st_size
    monkeypatch.setattr(screen, "MAX_REPLAY_BYTES", size // 3)
    sink = WarningSink()
    tail = list(READER.iter_messages([path], sink))
    [warning] = [str(w) for w in sink.warnings]
    assert "only its last" in warning
    assert f"{size / 1e6:,.1f} MB screen capture" in warning
    assert humans(tail)[-1] == humans(full)[-1]
    assert len(humans(tail)) < len(humans(full))
    # The raw line a message cites is counted from the file's start, not the replay's.
    [last] = [m for m in tail if m.is_human and m.text == humans(full)[-1]]
    [same] = [m for m in full if m.is_human and m.text == humans(full)[-1]]
    assert last.id.split(".")[0] == same.id.split(".")[0]


def test_a_capture_is_named_by_its_content_and_keeps_its_name_as_it_grows(
    tmp_path: Path,
) -> None:
    streams = sorted(REAL.glob("*/tui.typescript"))
    ids = [READER.read([p], WarningSink()).id for p in streams]
    # One file name, three agents' sessions: three ids (by name alone all were "tui").
    assert len(set(ids)) == 3
    assert all(i.startswith("tui-") for i in ids)
    live = tmp_path / "tui.typescript"
    live.write_bytes(streams[0].read_bytes())
    with live.open("ab") as fh:
        fh.write(b"\r\n> one more prompt\r\n")
    assert READER.read([live], WarningSink()).id == ids[0]
