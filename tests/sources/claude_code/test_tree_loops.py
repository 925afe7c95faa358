"""Parent loops in Claude Code logs: each shape is cut once, reported, and never hangs.

Every read runs under a hard deadline (``claude_tree_helpers.deadline``), so a loop
that comes back fails the test instead of hanging the suite.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.claude_code.scan import NO_PARENT, scan
from opencode_restore.sources.claude_code.tree import build_tree

from .tree_helpers import (
    Hung,
    all_messages,
    boundary,
    deadline,
    entry,
    read_within,
    write,
)

CC = Path(__file__).resolve().parents[3] / "fixtures" / "claude-code"


def warned(sink: WarningSink) -> list[tuple[str, int, str]]:
    return [(Path(w.path).name, w.line, w.message) for w in sink.warnings]


def assert_forest(parent: Sequence[int]) -> None:
    """Every parent chain ends at a root within ``len(parent)`` steps."""
    for start in range(len(parent)):
        node, steps = start, 0
        while node != NO_PARENT:
            node = parent[node]
            steps += 1
            assert steps <= len(parent), f"entry {start} is on a parent loop"


def spin() -> None:
    while True:
        pass


def test_deadline_interrupts_a_pure_python_loop() -> None:
    started = time.monotonic()
    with pytest.raises(Hung), deadline(0.2):
        spin()
    assert time.monotonic() - started < 30  # the loop never ends on its own


def test_nested_deadlines_keep_the_outer_one() -> None:
    def inner_then_spin() -> None:
        with deadline(5):
            pass
        spin()

    with pytest.raises(Hung, match=r"0\.3s"), deadline(0.3):
        inner_then_spin()


def test_self_parent(tmp_path: Path) -> None:
    s, sink = read_within([write(tmp_path / "self.jsonl", [entry("a", "a"), entry("b", "a")])])
    assert [m.id for m in s.messages()] == ["a", "b"]
    assert warned(sink) == [
        ("self.jsonl", 1, "entry a is its own parent; link cut, read as a new start")
    ]


def test_self_parent_reached_through_a_logical_parent(tmp_path: Path) -> None:
    # Hung before: attaching the boundary walked up from its logical parent "a" forever.
    lines = [entry("a", "a"), entry("r", "a", "assistant"), boundary("cb", "a"), entry("c", "cb")]
    s, sink = read_within([write(tmp_path / "sb.jsonl", lines)])
    assert [m.id for m in s.messages()] == ["a", "r", "cb", "c"]
    assert s.messages()[2].type == "compaction"
    assert [(w.line, "own parent" in w.message) for w in sink.warnings] == [(1, True)]


def test_two_entries_pointing_at_each_other(tmp_path: Path) -> None:
    lines = [entry("x", "y"), entry("y", "x"), entry("z", "y", "assistant")]
    s, sink = read_within([write(tmp_path / "two.jsonl", lines)])
    # The loop loses the link of its oldest entry, so the file order survives.
    assert [m.id for m in s.messages()] == ["x", "y", "z"]
    assert list(s.timeline.root.spans()) == []
    assert warned(sink) == [
        (
            "two.jsonl",
            1,
            "parent loop of 2 entries: x -> y leads back to x; link cut, read as a new start",
        )
    ]


def test_long_loop(tmp_path: Path) -> None:
    ring = [entry("e0", "e199")]
    ring += [entry(f"e{i}", f"e{i - 1}", "assistant" if i % 2 else "user") for i in range(1, 200)]
    ring.append(entry("tail", "e199", "assistant"))
    s, sink = read_within([write(tmp_path / "ring.jsonl", ring)])
    assert [m.id for m in s.messages()] == [f"e{i}" for i in range(200)] + ["tail"]
    assert [
        (w.line, w.message.startswith("parent loop of 200 entries")) for w in sink.warnings
    ] == [(1, True)]


def test_loop_off_the_live_path_stays_a_branch(tmp_path: Path) -> None:
    lines = [
        entry("u1", None),
        entry("a1", "u1", "assistant"),
        entry("r1", "r2"),  # an abandoned prompt whose reply names it as its child too
        entry("r2", "r1", "assistant"),
        entry("u2", "a1"),
        entry("a2", "u2", "assistant"),
    ]
    s, sink = read_within([write(tmp_path / "off.jsonl", lines)])
    assert [m.id for m in s.messages()] == ["u1", "a1", "u2", "a2"]
    assert all_messages(s) == ["u1", "a1", "u2", "a2", "r1", "r2"]
    assert [w.line for w in sink.warnings] == [3]


def test_parent_written_after_its_child_without_a_loop(tmp_path: Path) -> None:
    # x names y, written after it, inside an abandoned branch: a forward link, not a loop.
    lines = [
        entry("u1", None),
        entry("a1", "u1", "assistant"),
        entry("r1", "a1"),
        entry("x", "y"),
        entry("y", "r1", "assistant"),
        entry("u2", "a1"),
        entry("a2", "u2", "assistant"),
    ]
    s, sink = read_within([write(tmp_path / "fw.jsonl", lines)])
    assert [m.id for m in s.messages()] == ["u1", "a1", "u2", "a2"]
    [branch] = s.timeline.root.spans()
    assert (branch.branched_from, [m.id for m in branch.messages()]) == ("a1", ["r1", "y"])
    [inner] = branch.spans()  # y is the branch's newest entry, so x is a prompt left behind
    assert (inner.branched_from, [m.id for m in inner.messages()]) == ("y", ["x"])
    assert sink.warnings == []


def test_boundary_whose_logical_parent_is_written_later(tmp_path: Path) -> None:
    # cb -> r (logical parent) -> x, and x restarts after cb: the restart closes the loop.
    lines = [boundary("cb", "r"), entry("x", None), entry("r", "x", "assistant")]
    s, sink = read_within([write(tmp_path / "bf.jsonl", lines)])
    assert [m.id for m in s.messages()] == ["cb", "x", "r"]
    assert warned(sink) == [
        (
            "bf.jsonl",
            1,
            "parent loop of 3 entries: cb -> r leads back to cb; link cut, read as a new start",
        )
    ]


def test_parent_written_later_that_restarts_after_its_child(tmp_path: Path) -> None:
    lines = [entry("x", "y"), entry("y", None, "assistant"), entry("z", "y")]
    s, sink = read_within([write(tmp_path / "pr.jsonl", lines)])
    assert [m.id for m in s.messages()] == ["x", "y", "z"]
    assert [w.line for w in sink.warnings] == [1]


def test_preserved_tail_under_its_own_boundary_is_not_a_loop(tmp_path: Path) -> None:
    # The real shape of a partial compaction: the logical parent a2 hangs under the summary.
    lines = [
        entry("u1", None),
        entry("a1", "u1", "assistant"),
        entry("u2", "a1"),
        boundary("cb", "a2", ["a2"]),
        entry("cs", "cb", isCompactSummary=True),
        entry("a2", "cs", "assistant"),
        entry("u3", "a2"),
    ]
    s, sink = read_within([write(tmp_path / "po.jsonl", lines)])
    assert [m.id for m in s.messages()] == ["u1", "a1", "u2", "cb", "cs", "a2", "u3"]
    assert sink.warnings == []


def test_preserved_list_naming_a_looping_entry(tmp_path: Path) -> None:
    lines = [
        entry("q", "q"),
        boundary("cb", "p", ["q", "p"]),
        entry("p", "cb", "assistant"),
        entry("n", "p"),
    ]
    s, sink = read_within([write(tmp_path / "pl.jsonl", lines)])
    assert [m.id for m in s.messages()] == ["q", "cb", "p", "n"]
    assert [w.line for w in sink.warnings] == [1]


def test_loop_inside_an_interleaved_side_chain(tmp_path: Path) -> None:
    lines = [
        entry("u1", None),
        entry("a1", "u1", "assistant"),
        entry("s1", "s2", side=True, agentId="ag"),
        entry("s2", "s1", "assistant", side=True),
        entry("s3", "s2", side=True),
        entry("u2", "a1"),
    ]
    s, sink = read_within([write(tmp_path / "sl.jsonl", lines)])
    assert [m.id for m in s.messages()] == ["u1", "a1", "u2"]
    [agent] = s.timeline.root.spans()
    assert (agent.id, [m.id for m in agent.messages()]) == ("agent-ag", ["s1", "s2", "s3"])
    assert [w.line for w in sink.warnings] == [3]


def test_loop_in_a_sub_agent_file_names_that_file(tmp_path: Path) -> None:
    session = write(
        tmp_path / "S.jsonl",
        [entry("u1", None), entry("a1", "u1", "assistant"), entry("u2", "a1")],
    )
    folder = tmp_path / "S" / "subagents"
    folder.mkdir(parents=True)
    agent_lines = [
        entry("s1", "s3", side=True),
        entry("s2", "s1", "assistant", side=True),
        entry("s3", "s2", side=True),
    ]
    write(folder / "agent-x1.jsonl", agent_lines)
    s, sink = read_within([session])
    [agent] = s.timeline.root.spans()
    assert [m.id for m in agent.messages()] == ["s1", "s2", "s3"]
    assert warned(sink) == [
        (
            "agent-x1.jsonl",
            1,
            "parent loop of 3 entries: s1 -> s3 leads back to s1; link cut, read as a new start",
        )
    ]


def test_loop_across_files_and_repeated_uuids(tmp_path: Path) -> None:
    # The repeated "a" (now claiming "b" as parent) is ignored: the first copy wins.
    first = write(tmp_path / "1.jsonl", [entry("a", None), entry("b", "a"), entry("x", "y")])
    second = write(tmp_path / "2.jsonl", [entry("a", "b"), entry("y", "x"), entry("c", "y")])
    s, sink = read_within([first, second])
    assert [m.id for m in s.messages()] == ["a", "b", "x", "y", "c"]
    assert [(Path(w.path).name, w.line) for w in sink.warnings] == [("1.jsonl", 3)]


def test_real_logs_have_no_loops() -> None:
    files = sorted(f for f in CC.rglob("*.jsonl"))
    assert len(files) > 20
    for f in files:
        sink = WarningSink()
        with deadline(10):
            s = scan([f], sink)
            build_tree(s, [f], sink)
        assert_forest(s.parent)
        assert not [w for w in sink.warnings if "loop" in w.message or "own parent" in w.message]


ids = st.sampled_from("abcdef")
links = st.none() | ids | st.just("zz")  # "zz" is never written: a parent from elsewhere
row = st.tuples(
    ids,
    links,
    links,
    st.sampled_from(["user", "assistant", "progress", "boundary"]),
    st.booleans(),
    st.none() | st.lists(ids, max_size=3),
)


def _line(
    uid: str, parent: str | None, logical: str | None, kind: str, side: bool, kept: list[str] | None
) -> dict[str, Any]:
    if kind == "boundary":
        line = boundary(uid, logical, kept)
        line["parentUuid"] = parent
    else:
        line = entry(uid, parent, kind, side)
    if side:
        line["isSidechain"] = True
    return line


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row, min_size=1, max_size=14), split=st.integers(0, 14))
def test_random_parent_graphs_with_loops(
    rows: list[tuple[str, str | None, str | None, str, bool, list[str] | None]], split: int
) -> None:
    lines = [_line(*r) for r in rows]
    with deadline(5), tempfile.TemporaryDirectory() as tmp:
        chunks = [lines[:split], lines[split:]] if 0 < split < len(lines) else [lines]
        files = [write(Path(tmp) / f"{k}.jsonl", c) for k, c in enumerate(chunks)]
        sink = WarningSink()
        s = scan(files, sink)
        build_tree(s, files, sink)
        assert_forest(s.parent)
        session, read_sink = read_within(files)
        sizes = {str(f): len(c) for f, c in zip(files, chunks, strict=True)}
    everything = all_messages(session)
    assert len(set(everything)) == len(everything)  # no message is shown twice
    assert set(everything) <= set("abcdef")
    for w in read_sink.warnings:
        assert 1 <= w.line <= sizes[w.path], w
        assert "loop" in w.message or "own parent" in w.message, w
    assert len(read_sink.warnings) == len(sink.warnings)
