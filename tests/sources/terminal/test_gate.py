"""The fast path of the terminal reader: the pattern gate and the block pipeline.

Each shortcut is checked against the slow path it replaces: the gate against every
pattern, block scanning against line-by-line scanning, the block sidebar cut against
the per-line one, the stripper's shortcuts against the full line replay.
"""

from __future__ import annotations

import io
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.sources.terminal.ansi import _emulate, _replay, iter_blocks, iter_lines
from opencode_restore.sources.terminal.gate import _lines_holding, line_gate
from opencode_restore.sources.terminal.layout import cut_sidebar, cut_sidebar_blocks, dedent
from opencode_restore.sources.terminal.lines import LineScanner
from opencode_restore.sources.terminal.patterns import (
    LINE_KEYS,
    TerminalPatterns,
    default_patterns,
)
from opencode_restore.sources.terminal.reader import (
    TerminalReader,
    _batched,
    load_terminal_patterns,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "terminal"
LINE_FIXTURES = sorted(
    p for p in FIXTURES.rglob("*") if p.suffix in (".log", ".txt") and "typescript" not in p.name
)
# Pieces that hit the markers and literals of the packaged patterns, and near misses.
PIECES = [
    "┃",
    "▣",
    "●",
    "•",
    "❯",
    "›",
    ">",
    "⎿",
    "└",
    "→",
    "←",
    "─" * 10,
    "─",
    "╹▀",
    "✻",
    "…",
    "▐▛",
    "⣿",
    "█▀▀█ █▀▀█",
    "⏵⏵",
    "⬝⬝",
    "$ ",
    "# ",
    "Read ",
    "Edit ",
    "Write ",
    "Wrote ",
    "Shell ",
    "Compaction",
    "Build · gpt · 2s",
    "marco (3:41 PM)",
    "Generating",
    "esc interrupt",
    "ctrl+p commands",
    "ctrl+o to expand)",
    "(ctrl+o to expand)",
    "Claude Code v2",
    "Tip: ",
    "+ 3 lines (",
    "Thought for 2s",
    "Worked for ",
    "x default · ",
    "Conversation compacted",
    " Context",
    " 12 tokens",
    "  ",
    " ",
    "a",
    "x.py",
    "Bash(ls)",
    "Ran ls",
    "Explored",
    "\t",
]
line_text = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)


def fixture_lines() -> list[str]:
    out: list[str] = []
    for path in LINE_FIXTURES:
        with path.open("rb") as fh:
            out += [t.rstrip() for _, t in iter_lines(fh)]
    return out


def matching(p: TerminalPatterns, line: str) -> set[str]:
    return {k for k in LINE_KEYS if getattr(p, k).search(line)}


def assert_gate_sound(p: TerminalPatterns, lines: list[str]) -> None:
    assert p.gate is not None
    maybe = dict(p.gate.maybe(lines))
    for i, line in enumerate(lines):
        hit = matching(p, line)
        if hit:
            assert i in maybe, (line, hit)
            assert hit <= maybe[i], (line, hit, maybe[i])


def test_gate_is_sound_on_every_fixture_line() -> None:
    lines = fixture_lines()
    assert len(lines) > 1000
    assert_gate_sound(default_patterns(), lines)


@settings(max_examples=300)
@given(st.lists(line_text, max_size=12))
def test_gate_is_sound_on_marker_soup(lines: list[str]) -> None:
    assert_gate_sound(default_patterns(), lines)


def test_gate_clears_plain_prose_and_names_the_candidates() -> None:
    p = default_patterns()
    assert p.gate is not None
    lines = ["Plain prose.", "  indented prose", "", "  > a quoted line", "● reply", "❯ ask"]
    got = dict(p.gate.maybe(lines))
    assert sorted(got) == [4, 5]
    assert "bullet" in got[4]
    assert "prompt" in got[5]
    assert "rule" not in got[4]


def test_gate_derives_from_custom_patterns(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[terminal]\nprompt = '^\\s*>>>\\s(?P<text>.*)$'\nbanner = 'MyAgent v\\d'\n")
    p = load_terminal_patterns(cfg)
    assert p.gate is not None
    assert "MyAgent v" in p.gate.anywhere
    lines = ["  >>> hi", ">>> there", "MyAgent v2 ready", "> not a prompt here"]
    assert_gate_sound(p, lines)
    assert [i for i, _ in p.gate.maybe(lines)][:3] == [0, 1, 2]


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?i)^read\s+\S+",  # case folding: literals would miss "READ"
        r"\w+ tokens?|\d+",  # an unanchored alternative without any literal
        r"(?a)^\W*x",  # ASCII classes
        r"^(a)?(?(1)b|c)",  # a conditional group
    ],
)
def test_gate_is_off_for_patterns_it_cannot_follow(pattern: str) -> None:
    assert line_gate({"p": re.compile(pattern)}) is None


def test_gate_keeps_all_blank_anchored_matches() -> None:
    # A match may be all blank, so the first non-blank character tells nothing.
    gate = line_gate({"p": re.compile(r"^\s*$")})
    assert gate is not None
    assert [i for i, _ in gate.maybe(["", "  ", "x"])] == [0, 1, 2]


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        (r"^[^x]y", "zy"),
        (r"^.y", "zy"),
        (r"^(?>ab)c", "abc"),
        (r"^a*?[bc]", "c"),
        (r"^[\d\D]x", "9x"),
        (r"^[\s\S]x", "qx"),
        (r"^[\w-]+ \(x\)", "ab (x)"),
        (r"^[^\W\d]+ tail", "ab tail"),
        (r"^[a-c ]z", "bz"),
        (r"^(?:\s|q)z", " z"),
        (r"^─{3,}\s*$", "────"),
        (r"^(?:ab|cd)+e", "cde"),
        (r"^\S+ middle", "word middle"),
        (r"^(?=a)abc", "abc"),
    ],
)
def test_gate_admits_what_a_pattern_matches(pattern: str, line: str) -> None:
    rx = re.compile(pattern)
    assert rx.search(line)
    gate = line_gate({"p": rx})
    assert gate is not None
    assert gate.maybe([line, "unrelated"])[0][0] == 0


LITERALS = {
    "ab": frozenset({"x"}),
    "b": frozenset({"y"}),
    "┃": frozenset({"x", "z"}),
    " c": frozenset(),
}


@given(st.lists(st.lists(st.sampled_from(["ab", "b", "┃", " ", "c", "a"])).map("".join)))
def test_lines_holding_equals_the_plain_definition(lines: list[str]) -> None:
    # The hits of all literals are sorted and counted in one pass; the plain definition
    # looks at each line for each literal.
    expected: dict[int, frozenset[str]] = {}
    for i, line in enumerate(lines):
        held = [names for lit, names in LITERALS.items() if lit in line]
        if held:
            expected[i] = frozenset().union(*held)
    assert _lines_holding("\n".join(lines), LITERALS) == expected


def scan_blocks(p: TerminalPatterns, lines: list[str], size: int) -> list[Message]:
    s = LineScanner(p)
    out: list[Message] = []
    for start in range(0, len(lines), size):
        chunk = lines[start : start + size]
        s.feed_block(range(start + 1, start + 1 + len(chunk)), chunk)
        out += s.drain()
    return out + s.finish()


def scan_lines(p: TerminalPatterns, lines: list[str]) -> list[Message]:
    s = LineScanner(p)
    out: list[Message] = []
    for n, line in enumerate(lines, 1):
        s.feed(n, line)
        out += s.drain()
    return out + s.finish()


@pytest.mark.parametrize("path", LINE_FIXTURES, ids=lambda p: p.name)
def test_block_scan_equals_line_scan_on_fixtures(path: Path) -> None:
    p = default_patterns()
    with path.open("rb") as fh:
        lines = [t.rstrip() for _, t in iter_lines(fh)]
    expected = scan_lines(p, lines)
    for size in (1, 7, 4096):
        assert scan_blocks(p, lines, size) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(line_text.map(str.rstrip), max_size=60), st.integers(1, 20))
def test_block_scan_equals_line_scan_on_marker_soup(lines: list[str], size: int) -> None:
    p = default_patterns()
    assert scan_blocks(p, lines, size) == scan_lines(p, lines)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(fixture_lines()), max_size=80), st.integers(1, 30))
def test_block_scan_equals_ungated_scan_on_shuffled_fixture_lines(
    lines: list[str], size: int
) -> None:
    p = default_patterns()
    assert scan_blocks(p, lines, size) == scan_blocks(replace(p, gate=None), lines, size)


def test_reader_without_gate_reads_the_same(tmp_path: Path) -> None:
    p = default_patterns()
    path = FIXTURES / "real" / "spotter" / "subagent.terminal.txt"
    gated = list(TerminalReader(p).iter_messages([path], WarningSink()))
    plain = list(TerminalReader(replace(p, gate=None)).iter_messages([path], WarningSink()))
    assert len(gated) > 20
    assert gated == plain


# -- sidebar cut ---------------------------------------------------------------------


def sidebar_rows(n: int, at: set[int], col: int) -> list[tuple[int, str]]:
    rows = []
    for i in range(n):
        side = "Context" if i in at else ""
        rows.append((i + 1, (f"  row {i}").ljust(col) + side))
    return rows


def blocks_of(rows: list[tuple[int, str]], size: int) -> list[tuple[list[int], list[str]]]:
    return [
        ([n for n, _ in rows[i : i + size]], [t for _, t in rows[i : i + size]])
        for i in range(0, len(rows), size)
    ]


@pytest.mark.parametrize("size", [1, 5, 64, 100, 1000])
def test_sidebar_block_cut_equals_line_cut(size: int) -> None:
    p = default_patterns()
    # The column is found at row 150 (second marker) and moves at row 260.
    rows = sidebar_rows(200, {10, 150}, 50) + sidebar_rows(200, {60, 70}, 60)
    rows = [(i + 1, t) for i, (_, t) in enumerate(rows)]
    expected = list(cut_sidebar(rows, p))
    got = [
        pair
        for nums, lines in cut_sidebar_blocks(blocks_of(rows, size), p)
        for pair in zip(nums, lines, strict=True)
    ]
    assert got == expected
    assert expected[85][1] == "  row 85"  # within the lookahead of the second marker
    assert expected[84][1] == "  row 84".ljust(50).rstrip()


def test_sidebar_cut_without_gate_is_the_same() -> None:
    p = default_patterns()
    rows = sidebar_rows(100, {3, 9}, 45)
    assert list(cut_sidebar(rows, replace(p, sidebar_gate=None))) == list(cut_sidebar(rows, p))


# -- stripper and layout shortcuts ------------------------------------------------------

EDITS = ["ab", "xyz", " ", "\t", "é", "\r", "\x08", "\x1b[K", "\x1b[0K", "\x1b[1K", "\x1b[2K"]
EDITS += ["\x1b[C", "\x1b[3C", "\x1b[0C", "\x1b[2;5C", "\x1b[D", "\x1b[2D", "\x1b[4G", "\x1b["]


@settings(max_examples=500)
@given(st.lists(st.sampled_from(EDITS), max_size=12).map("".join))
def test_emulate_shortcuts_equal_the_full_replay(line: str) -> None:
    assert _emulate(line) == _replay(line)


def test_emulate_shortcut_shapes() -> None:
    assert _emulate("⠋ Gen\r⠙ Gen\r\x1b[KDone") == "Done"
    assert _emulate("abc\rX") == "Xbc"
    assert _emulate("┃ hi\x1b[3C┃\x1b[2C") == "┃ hi   ┃"


def test_iter_blocks_matches_iter_lines_and_keeps_huge_line_numbers() -> None:
    data = b"one\r\ntwo\n" + b"x" * (3 << 20) + b"y\nlast"
    blocks = list(iter_blocks(io.BytesIO(data)))
    pairs = [pair for nums, lines in blocks for pair in zip(nums, lines, strict=True)]
    assert pairs == list(iter_lines(io.BytesIO(data)))
    numbers = [n for n, _ in pairs]
    assert numbers[:3] == [1, 2, 3]
    assert numbers[-1] == 4
    assert len(numbers) > 4  # the huge line came in pieces that share number 3


def test_batched_groups_replayed_rows() -> None:
    rows = iter([(1, "a"), (1, "b"), (5, "c")])
    assert list(_batched(rows, size=2)) == [([1, 1], ["a", "b"]), ([5], ["c"])]


def reference_dedent(lines: list[str]) -> str:
    cut = min((len(t) - len(t.lstrip()) for t in lines if t.strip()), default=0)
    return "\n".join(t[cut:] if t.strip() else "" for t in lines).strip("\n")


@given(
    st.lists(st.sampled_from(["", "  ", "\t", "a", "  b", "    c", " d ", "\u3000e"]), max_size=8)
)
def test_dedent_equals_the_plain_definition(lines: list[str]) -> None:
    assert dedent(lines) == reference_dedent(lines)


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        (r"^[^x]\d", "z5", "x5"),
        (r"^.\d", "z5", ""),
        (r"^[^xy]\d", "z5", "y5"),
        (r"^\d", "5", "a"),
        (r"^[ -~]", "a", "é"),
        (r"^(?:a|\s*)b", "  b", "c"),
        (r"^(?>\s*)b", " b", "c"),
        (r"^(?i:abc)", "ABC", ""),
        (r"^(?:abc|\d)x", "5x", ""),
        (r"^ab\d", "ab5", "  ab5"),
        (r"^$", "", "x"),
    ],
)
def test_gate_without_literals_goes_by_the_first_character(pattern: str, yes: str, no: str) -> None:
    rx = re.compile(pattern)
    assert rx.search(yes)
    assert not rx.search(no)
    gate = line_gate({"p": rx})
    if gate is None:  # local flags: the gate is off, every line is tried
        assert "(?i" in pattern
        return
    got = [i for i, _ in gate.maybe([yes, no])]
    assert 0 in got
    if pattern in (r"^[^x]\d", r"^\d", r"^ab\d"):
        assert got == [0]


def test_gate_first_character_of_unknown_class_is_admitted() -> None:
    from re import _constants as sc  # type: ignore[attr-defined, unused-ignore]

    from opencode_restore.sources.terminal.gate import _admits

    assert _admits((sc.IN, [(sc.CATEGORY, sc.CATEGORY_LINEBREAK)]), "a")


def test_block_scan_skips_composer_and_ends_long_preamble() -> None:
    p = default_patterns()
    lines = ["shell prompt $ stuff"] + [f"plain {i}" for i in range(450)]
    lines += ["─" * 20, "❯ typed but not sent", "more composer text", "─" * 20, "● after"]
    got = scan_blocks(p, lines, 100)
    assert got == scan_lines(p, lines)
    assert [m.text for m in got][-1] == "after"
    assert not any("composer" in m.text for m in got)


def test_gate_is_off_when_the_regex_parser_gives_an_unexpected_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # re._parser is private: a tree of another shape must turn the gate off, not crash.
    from opencode_restore.sources.terminal import gate

    patterns = {"prompt": re.compile(r"^❯ (?P<text>.*)")}
    assert line_gate(patterns) is not None
    # gate reads patterns apart with re._parser: a parser that returns nonsense
    monkeypatch.setattr(f"{gate.__name__}._parser.parse", lambda pattern, flags: object())
    assert line_gate(patterns) is None
