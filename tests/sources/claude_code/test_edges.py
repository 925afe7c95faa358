"""Claude Code reader: rare tree shapes, sub-agent links and lines that change under the reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import TimelineSpan
from opencode_restore.sources.claude_code.convert import injected_reason
from opencode_restore.sources.claude_code.reader import READER
from opencode_restore.sources.claude_code.scan import scan
from opencode_restore.sources.claude_code.session import read_entries
from opencode_restore.sources.claude_code.tree import build_tree

from .test_tree import assistant, ids, read, result, text, tool_use, user, write


def test_children_written_before_their_parents(tmp_path: Path) -> None:
    s = read(
        write(
            tmp_path / "back.jsonl",
            [
                user("u1", None, "start"),
                assistant("a1", "u1", [text("ready")]),
                assistant("late-child", "late-parent", [text("answer to the old try")]),
                user("late-parent", "a1", "old try"),
                user("u2", "a1", "new try"),
            ],
        )
    )
    assert ids(s) == ["u1", "a1", "u2"]
    (branch,) = s.timeline.root.spans()
    assert [m.id for m in branch.messages()] == ["late-child", "late-parent"]


def test_a_main_line_entry_never_hangs_off_a_side_chain(tmp_path: Path) -> None:
    s = read(
        write(
            tmp_path / "mixed.jsonl",
            [
                user("u1", None, "go"),
                user("s1", None, "side prompt", isSidechain=True),
                assistant("a1", "s1", [text("main answer")]),
            ],
        )
    )
    assert ids(s) == ["u1", "a1"]


def test_preserved_list_naming_unknown_entries(tmp_path: Path) -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "cb",
        "parentUuid": None,
        "logicalParentUuid": "tail",
        "compactMetadata": {"preservedSegment": {"headUuid": "nowhere", "tailUuid": "tail"}},
    }
    s = read(
        write(
            tmp_path / "pres.jsonl",
            [
                user("u1", None, "one"),
                boundary,
                user("cs", "cb", "summary", isCompactSummary=True),
                assistant("tail", "cs", [text("kept")]),
            ],
        )
    )
    assert ids(s) == ["u1", "cb", "cs", "tail"]


def test_very_deep_rewind_nesting_is_folded(tmp_path: Path) -> None:
    depth = 70
    lines: list[Any] = [user("n0", None, "root")]
    lines += [user(f"n{k + 1}", f"n{k}", f"try {k}") for k in range(depth)]
    lines += [user(f"q{k}", f"n{k}", f"retry {k}") for k in reversed(range(depth))]
    s = read(write(tmp_path / "deep.jsonl", lines))
    assert ids(s) == ["n0", "q0"]
    level, span = 0, s.timeline.root
    while list(span.spans()):
        (span,) = span.spans()
        level += 1
    assert level == 64
    total = {m.id for sp in s.timeline.root.walk() for m in sp.messages()}
    assert len(total) == 1 + 2 * depth


def test_nested_and_doubled_sub_agents(tmp_path: Path) -> None:
    session = write(
        tmp_path / "S.jsonl",
        [
            user("u1", None, "research"),
            assistant("a1", "u1", [tool_use("t1", "Task", subagent_type="Lead")]),
            user("r1", "a1", result("t1", "done"), toolUseResult={"agentId": "lead"}),
        ],
    )
    folder = tmp_path / "S" / "subagents"
    folder.mkdir(parents=True)
    side = {"isSidechain": True}
    write(
        folder / "agent-lead.jsonl",
        [
            user("l1", None, "lead", **side),
            assistant("l2", "l1", [tool_use("t2", "Task", subagent_type="Helper")]) | side,
            user("l3", "l2", result("t2", "ok"), toolUseResult={"agentId": "helper"}, **side),
        ],
    )
    write(folder / "agent-helper.jsonl", [user("h1", None, "help", **side)])
    write(folder / "agent-twin.jsonl", [user("w1", None, "twin", **side)])
    (folder / "agent-twin.meta.json").write_text('{"toolUseId": "t1"}')
    write(folder / "agent-self.jsonl", [assistant("z1", None, [tool_use("tz", "Task")]) | side])
    (folder / "agent-self.meta.json").write_text('{"toolUseId": "tz"}')
    (folder / "agent-helper.meta.json").write_text("[1, 2]")
    sink = WarningSink()
    s = READER.read([session], sink)
    assert [w.message for w in sink.warnings] == ["no JSON object found"]
    root = s.timeline.root
    names = [c.id if isinstance(c, TimelineSpan) else c.uuid for c in root.content]
    assert names == ["u1", "a1", "agent-lead", "agent-twin", "r1", "agent-self"]
    assert [sp.name for sp in root.spans()] == ["Lead", "Lead", "agent-self"]
    lead = next(sp for sp in root.spans() if sp.name == "Lead")
    assert [sp.name for sp in lead.spans()] == ["Helper"]


def test_lines_that_change_between_the_passes(tmp_path: Path) -> None:
    path = write(
        tmp_path / "live.jsonl", [user("u1", None, "hi"), assistant("a1", "u1", [text("yo")])]
    )
    sink = WarningSink()
    s = scan([path], sink)
    tree = build_tree(s, [path], sink)
    first, second = path.read_bytes().splitlines(keepends=True)
    # Appended lines change nothing; a line rewritten in place is skipped.
    path.write_bytes(b"x" * (len(first) - 1) + b"\n" + second + first)
    got = [nid for nid, _, _ in read_entries([path], s, tree.main.active, sink)]
    assert got == [1]
    assert [(w.line, w.message) for w in sink.warnings] == [
        (1, "line changed while reading; skipped")
    ]
    # Lines moved by an edit before them: valid JSON at the old place is not taken
    # for the entry that was there.
    path.write_bytes(second + first)
    assert list(read_entries([path], s, tree.main.active, sink)) == []
    assert [w.line for w in sink.warnings[1:]] == [1, 2]
    path.unlink()
    assert list(read_entries([path], s, tree.main.active, sink)) == []
    assert "cannot re-read" in sink.warnings[-1].message


def test_malformed_messages_give_no_blocks(tmp_path: Path) -> None:
    lines = [
        user("u1", None, "fine"),
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": {"content": {"x": 1}}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"content": 5}},
        {"type": "system", "subtype": "api_error", "uuid": "e1", "parentUuid": "u2", "error": {}},
        {"type": "progress", "uuid": "p1", "parentUuid": "e1", "data": {"type": 5, "agentId": 1}},
        user("u3", "p1", "<system-reminder>a</system-reminder> and a real question"),
    ]
    s = read(write(tmp_path / "m.jsonl", lines))
    assert ids(s) == ["u1", "u3"]
    assert s.messages()[1].is_human


def test_injected_reasons() -> None:
    assert injected_reason("  <command-name>/clear</command-name>") == "command"
    assert injected_reason(
        "<system-reminder>x</system-reminder>\n<system-reminder>y</system-reminder>"
    )
    assert injected_reason("<system-reminder>x</system-reminder> hello") is None
    assert injected_reason("[Request interrupted by user]") == "interrupt"
    assert injected_reason("please fix it") is None


def test_duplicate_uuid_prefers_the_copy_with_content(tmp_path: Path) -> None:
    first = {"type": "user", "uuid": "u1", "sessionId": "S", "message": "broken"}
    sink = WarningSink()
    path = write(
        tmp_path / "d.jsonl", [first, user("u1", None, "good copy"), user("u1", None, "third")]
    )
    s = READER.read([path], sink)
    assert [(m.id, m.text, m.entry_index) for m in s.messages()] == [("u1", "good copy", 2)]
    assert orjson.loads(path.read_bytes().splitlines()[0])["message"] == "broken"


def test_parent_loop_off_the_live_path_terminates(tmp_path: Path) -> None:
    # Found by hypothesis: repeated uuids made a parent loop away from the spine, and the
    # side-root walk never ended (memory grew until the process was killed).
    lines = [
        {"uuid": "c", "parentUuid": "c", "logicalParentUuid": "b", "subtype": "compact_boundary"},
        {
            "type": "assistant",
            "uuid": "b",
            "parentUuid": None,
            "message": {"content": "K", "id": 7},
        },
        {"type": "progress", "uuid": "b", "parentUuid": "a", "isSidechain": True},
        {"type": "summary", "uuid": "c", "parentUuid": [], "logicalParentUuid": "a"},
        {"type": "assistant", "uuid": "a", "parentUuid": None, "message": "error"},
    ]
    path = tmp_path / "loop.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    session = READER.read([path], WarningSink())
    streamed = list(READER.iter_messages([path], WarningSink()))
    assert [m.id for m in streamed] == [m.id for m in session.messages()]


def test_entry_that_is_its_own_parent_terminates(tmp_path: Path) -> None:
    line = {"type": "assistant", "uuid": "a", "parentUuid": "a", "logicalParentUuid": "b"}
    path = tmp_path / "self.jsonl"
    path.write_bytes(orjson.dumps(line | {"subtype": "compact_boundary"}) + b"\n")
    session = READER.read([path], WarningSink())
    streamed = list(READER.iter_messages([path], WarningSink()))
    assert [m.id for m in streamed] == [m.id for m in session.messages()]
