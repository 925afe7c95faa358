"""Units of the terminal reader: patterns config, sidebar cut, screen replay, fuzzing."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.terminal import screen as terminal_screen
from opencode_restore.sources.terminal.layout import cut_sidebar
from opencode_restore.sources.terminal.lines import LineScanner
from opencode_restore.sources.terminal.patterns import default_patterns
from opencode_restore.sources.terminal.reader import READER, TerminalReader, load_terminal_patterns
from opencode_restore.sources.terminal.screen import Stitcher, screen_size, viewport


def scan(lines: list[str]) -> list[tuple[str, str, str]]:
    s = LineScanner(default_patterns())
    out = []
    for n, line in enumerate(lines, 1):
        s.feed(n, line)
        out += s.drain()
    out += s.finish()
    return [(m.role, m.type, m.text) for m in out]


def test_patterns_come_from_the_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[terminal]\nagent_working = 'Thinking'\nnoise = ['^BANNER']\n")
    p = load_terminal_patterns(cfg)
    assert p.agent_working.pattern == "Thinking"
    assert p.is_noise("Thinking hard")
    assert p.is_noise("BANNER x")
    assert not p.is_noise("Generating")
    # keys the user file leaves out keep the packaged defaults
    assert p.read_file.match("→ Read greet.py") is not None


def test_invalid_pattern_names_its_key(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[terminal]\nshell = '(['\n")
    with pytest.raises(re.error, match=r"\[terminal\] shell"):
        load_terminal_patterns(cfg)


def test_empty_noise_list_matches_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[terminal]\nnoise = []\n")
    assert not load_terminal_patterns(cfg).noise.search("ctrl+p commands")


def test_reader_with_custom_patterns(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[terminal]\nnoise = ['^SECRET']\n")
    log = tmp_path / "x.log"
    log.write_text("❯ hello\n\n● visible\nSECRET row\n")
    reader = TerminalReader(load_terminal_patterns(cfg))
    texts = [m.text for m in reader.iter_messages([log], WarningSink())]
    assert texts == ["hello", "visible"]


def test_sidebar_cut_needs_two_markers_right_of_the_minimum_column() -> None:
    rows = [
        (1, "  text" + " " * 60 + "Context"),
        (2, "  more" + " " * 60 + "12 tokens"),
        (3, "  Context"),  # conversation text, not a sidebar
    ]
    assert [t for _, t in cut_sidebar(rows, default_patterns())] == [
        "  text",
        "  more",
        "  Context",
    ]
    single = [(1, "  text" + " " * 60 + "Context")]
    assert list(cut_sidebar(single, default_patterns())) == single


def test_scanner_claude_multiline_tool_args_and_plain_prompt() -> None:
    got = scan(
        [
            "> fix it",
            "",
            "● Bash(echo one",
            "      two)",
            "  ⎿  one two",
            "",
            "● Read(a.py)",
            "  ⎿  Read 3 lines",
            "",
            "● done",
        ]
    )
    assert got == [
        ("user", "text", "fix it"),
        ("assistant", "tool_use", "Bash echo one\ntwo"),
        ("tool", "tool_result", "one two"),
        ("assistant", "tool_use", "Read a.py"),
        ("tool", "tool_result", "Read 3 lines"),
        ("assistant", "text", "done"),
    ]


def test_scanner_multiline_args_closed_by_output_marker() -> None:
    got = scan(["● Bash(echo a", "  ⎿  a"])
    assert got == [("assistant", "tool_use", "Bash echo a"), ("tool", "tool_result", "a")]


def test_scanner_rail_blocks() -> None:
    got = scan(
        [
            "  ┃",
            "  ┃  → Glob **/*.py",
            "  ┃",
            "",
            "  ┃  tail of an output",
            "",
            "┃ boxed prompt ┃",
            "",
            "  ┃",
            "  ┃  ← Write notes.md",
            "  ┃",
            "",
            "  ┃",
            "  ┃",
            "",
            "     ▣  Build · Big Model · 1.0s",
        ]
    )
    assert got == [
        ("assistant", "tool_use", "Glob **/*.py"),
        ("tool", "tool_result", "tail of an output"),
        ("user", "text", "boxed prompt"),
        ("assistant", "tool_use", "Write notes.md"),
    ]


def test_scanner_unclosed_rail_and_summary_at_end() -> None:
    assert scan(["  ┃", "  ┃  last prompt"]) == [("user", "text", "last prompt")]
    assert scan(["  ──── Compaction ────", "", "  the summary"]) == [
        ("system", "compaction", "the summary")
    ]


def test_scanner_long_preamble_is_released() -> None:
    got = scan(["shell output"] * 401 + ["● hi"])
    assert got[0] == ("assistant", "text", "\n".join(["shell output"] * 401))
    assert got[-1] == ("assistant", "text", "hi")


def test_screen_size() -> None:
    assert screen_size(b'Script started [COLUMNS="120" LINES="40"]') == (120, 40)
    assert screen_size(b"\x1b[30;100Hx\x1b[5Gy") == (101, 30)
    assert screen_size(b"\x1b[40A\x1b[130G") == (131, 41)
    assert screen_size(b"") == (80, 24)


def test_viewport_cuts_composers() -> None:
    p = default_patterns()
    oc = ["", "  ┃", "  ┃  hi", "  ┃", "", "  ┃", "  ┃  Build · m", "  ╹▀▀▀", " status"]
    assert viewport(oc, p) == ["  ┃", "  ┃  hi", "  ┃"]
    cc = ["● hi", "", "─" * 20, "❯ ", "─" * 20, "  ⏵⏵ bypass"]
    assert viewport(cc, p) == ["● hi"]
    codex = ["• hi", "", "› Ask Codex to do anything", "", "  ? for shortcuts"]
    assert viewport(codex, p) == ["• hi"]
    assert viewport(["just text", "› not last", "more text"], p) == [
        "just text",
        "› not last",
        "more text",
    ]


def test_stitcher_aligns_scrolls_and_pinned_headers() -> None:
    s = Stitcher(keep=100)
    s.add(["a", "b", "c"], 1)
    s.add(["a", "b", "c"], 2)  # unchanged frame
    s.add(["b", "c", "d", "e"], 3)  # scrolled by one, grew by two
    s.add(["PIN", "c", "d", "e", "f"], 4)  # a pinned header row over the scrolled view
    assert s.finish() == [("a", 1), ("b", 1), ("c", 1), ("d", 3), ("e", 3), ("f", 4)]
    s.add(["x"], 5)
    s.add(["unrelated", "screen"], 6)
    assert [t for t, _ in s.finish()] == ["x", "unrelated", "screen"]
    small = Stitcher(keep=2)
    assert small.add(["1", "2", "3"], 1) == [("1", 1)]
    assert small.add([], 2) == []


def test_frames_without_sync_markers_and_alt_screen_exit() -> None:
    body = b"\x1b[?1049h" + b"".join(
        f"\x1b[1;1H\x1b[2K\xe2\x97\x8f line {i}\r\n".encode("latin-1") for i in range(3)
    )
    filler = b"\x1b[0m" * (terminal_screen.FRAME_BYTES // 4 + 1)  # draws nothing
    data = body + filler + b"\x1b[?1049lexit text\n"
    rows = list(terminal_screen.iter_screen_lines(io.BytesIO(data), default_patterns()))
    assert [(n, t) for n, t in rows] == [(4, "● line 2")]


def test_alt_screen_without_pyte_warns_and_reads_lines(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(terminal_screen, "available", lambda: False)
    log = tmp_path / "t.typescript"
    log.write_bytes(b"\x1b[?1049h\x1b[1;1H\xe2\x9d\xaf hello\n\xe2\x97\x8f hi\n")
    sink = WarningSink()
    msgs = list(READER.iter_messages([log], sink))
    assert [m.text for m in msgs] == ["hello", "hi"]
    assert "install pyte" in sink.warnings[0].message


def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    sink = WarningSink()
    assert list(READER.iter_messages([tmp_path], sink)) == []
    assert sink.warnings[0].message.startswith("cannot read")


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2000))
def test_random_bytes_never_raise(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.log"
    path.write_bytes(data)
    for m in READER.iter_messages([path], WarningSink()):
        assert m.id.startswith("0:")
        assert m.entry_index >= 1


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(
        st.sampled_from(
            [
                "❯ ask",
                "● say",
                "● Read(a)",
                "● Bash(x",
                "  ⎿  out",
                "",
                "  ┃",
                "  ┃  $ ls",
                "┃ box ┃",
                "marco (3:41 PM)",
                "     ▣  Build · m",
                "── Compaction ──",
                "─" * 20,
                "  ╹▀▀",
                "• Ran ls",
                "• Explored",
                "  └ Read b",
                "› /cmd arg",
                "✻ Conversation compacted",
                "Read x",
                "$ make",
                "Claude Code v2",
                "text",
            ]
        ),
        max_size=40,
    )
)
def test_random_marker_soup_never_raises(tmp_path: Path, parts: list[str]) -> None:
    path = tmp_path / "soup.log"
    path.write_text("\n".join(parts))
    ids = [m.id for m in READER.iter_messages([path], WarningSink())]
    assert len(ids) == len(set(ids))
