"""Claude Code reader on hand-made logs: forks, restarts, chains, side chains, blocks."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Session, TimelineEvent, TimelineSpan
from opencode_restore.sources.base import SNIFF_BYTES
from opencode_restore.sources.claude_code.reader import READER

TUI = (
    Path(__file__).resolve().parents[3]
    / "fixtures/claude-code/recorded/tui-compact/e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"
)


def user(uid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    line = {"type": "user", "uuid": uid, "parentUuid": parent, "sessionId": "S"}
    return line | {"message": {"role": "user", "content": content}} | extra


def assistant(
    uid: str, parent: str | None, blocks: list[Any], mid: str | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"id": mid or f"msg-{uid}", "model": "claude-x", "content": blocks}
    message["usage"] = {"input_tokens": 10, "output_tokens": 1}
    return {
        "type": "assistant",
        "uuid": uid,
        "parentUuid": parent,
        "sessionId": "S",
        "message": message,
    }


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(call: str, name: str = "Bash", **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": inp}


def result(call: str, out: Any = "ok", **extra: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": call, "content": out} | extra]


def progress(uid: str, parent: str | None) -> dict[str, Any]:
    data = {"type": "hook_progress", "hookEvent": "PostToolUse"}
    return {"type": "progress", "uuid": uid, "parentUuid": parent, "sessionId": "S", "data": data}


def write(path: Path, lines: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def read(*paths: Path) -> Session:
    sink = WarningSink()
    s = READER.read(list(paths), sink)
    assert sink.warnings == []
    streamed = [m.id for m in READER.iter_messages(list(paths), WarningSink())]
    assert streamed == [m.id for m in s.messages()]
    return s


def ids(s: Session) -> list[str]:
    return [m.id for m in s.messages()]


def test_parallel_tool_results_are_not_rewinds(tmp_path: Path) -> None:
    s = read(
        write(
            tmp_path / "p.jsonl",
            [
                user("u1", None, "list and count"),
                assistant("a1", "u1", [tool_use("t1", command="ls")], mid="m1"),
                assistant("a2", "a1", [tool_use("t2", command="wc")], mid="m1"),
                progress("p1", "a1"),
                progress("p2", "p1"),
                user("r1", "a1", result("t1", [text("a.py")])),
                user("r2", "a2", result("t2", "3", is_error=True)),
                assistant("a3", "r2", [text("done")]),
            ],
        )
    )
    assert ids(s) == ["u1", "a1", "a2", "r1", "r2", "a3"]
    assert list(s.timeline.root.spans()) == []
    a1, a2 = s.messages()[1:3]
    assert (a1.group, a2.group) == ("m1", "m1")
    assert a1.usage is not None
    assert a2.usage is None
    r1, r2 = s.messages()[3:5]
    assert (r1.text, r1.is_error, r2.is_error) == ("a.py", False, True)


def test_nested_rewinds_become_nested_branch_spans(tmp_path: Path) -> None:
    s = read(
        write(
            tmp_path / "r.jsonl",
            [
                user("u1", None, "start"),
                assistant("a1", "u1", [text("ready")]),
                user("b1u", "a1", "first try"),
                assistant("b1a", "b1u", [text("first answer")]),
                user("c1u", "b1a", "deeper try"),
                user("c2u", "b1a", "deeper retry"),
                user("b2u", "a1", "second try"),
                assistant("b2a", "b2u", [text("second answer")]),
            ],
        )
    )
    assert ids(s) == ["u1", "a1", "b2u", "b2a"]
    (b1,) = s.timeline.root.spans()
    assert (b1.branched_from, b1.messages()[0].id) == ("a1", "b1u")
    assert [m.id for m in b1.messages()] == ["b1u", "b1a", "c2u"]
    (c1,) = b1.spans()
    assert (c1.branched_from, [m.id for m in c1.messages()]) == ("b1a", ["c1u"])
    assert b1.content.index(c1) == 2  # right after its fork point b1a


def test_interrupts_and_notices_do_not_open_branches(tmp_path: Path) -> None:
    s = read(
        write(
            tmp_path / "i.jsonl",
            [
                user("u1", None, "run it"),
                assistant("a1", "u1", [tool_use("t1")]),
                user("r1", "a1", result("t1", "interrupted", is_error=True)),
                user("i1", "a1", [text("[Request interrupted by user for tool use]")]),
                user("n1", "i1", "<task-notification>\n<task-id>x</task-id>"),
                user("u2", "n1", "try again"),
            ],
        )
    )
    assert ids(s) == ["u1", "a1", "r1", "i1", "n1", "u2"]
    assert [m.id for m in s.messages() if m.is_human] == ["u1", "u2"]
    assert [m.meta.get("injected") for m in s.messages()[3:5]] == ["interrupt", "notice"]


def test_restarts_and_missing_parents_continue_the_story(tmp_path: Path) -> None:
    s = read(
        write(
            tmp_path / "s.jsonl",
            [
                progress("p0", None),
                user("u1", "p0", "one"),
                assistant("a1", "u1", [text("1")]),
                user("u2", None, "two"),  # a restart
                assistant("a2", "gone", [text("2")]),  # its parent is not in the file
                {"type": "user", "sessionId": "S", "message": {"content": "three"}},
                {"type": "assistant", "message": {"content": "3"}},
            ],
        )
    )
    assert ids(s) == ["u1", "a1", "u2", "a2", "0:6", "0:7"]
    assert [m.text for m in s.messages()[-2:]] == ["three", "3"]


def test_boundary_whose_logical_parent_is_elsewhere_is_a_restart(tmp_path: Path) -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "cb",
        "parentUuid": None,
        "logicalParentUuid": "in-an-older-file",
        "compactMetadata": {"trigger": "auto", "preTokens": 150000},
        "content": "Conversation compacted",
    }
    s = read(
        write(
            tmp_path / "c.jsonl",
            [
                user("u1", None, "one"),
                assistant("a1", "u1", [text("1")]),
                boundary,
                user("cs", "cb", "summary text", isCompactSummary=True),
                user("u2", "cs", "two"),
            ],
        )
    )
    assert ids(s) == ["u1", "a1", "cb", "cs", "u2"]
    events = [e for e in s.timeline.root.events() if e.kind == "compaction"]
    assert len(events) == 1
    assert events[0].compaction is not None
    assert events[0].compaction.tokens_before == 150000
    assert events[0].compaction.summary == "summary text"


def test_chain_of_files_with_repeated_entries(tmp_path: Path) -> None:
    lines = TUI.read_bytes().splitlines(keepends=True)
    old = tmp_path / "old.jsonl"
    new = tmp_path / "new.jsonl"
    old.write_bytes(b"".join(lines[:40]))
    new.write_bytes(b"".join(lines[30:]))  # a resume repeats lines 31-40
    whole = read(TUI)
    chain = read(old, new)
    assert ids(chain) == ids(whole)
    assert len(set(ids(chain))) == len(ids(chain))
    by_id = {m.id: m for m in chain.messages()}
    late = by_id[whole.messages()[-1].id]
    assert (late.file_index, late.entry_index) == (1, 63 - 30)  # line 63 of the whole file
    early = by_id[whole.messages()[0].id]
    assert (early.file_index, early.entry_index) == (0, 4)
    assert chain.files == [str(old), str(new)]


def test_interleaved_side_chains_become_agent_spans(tmp_path: Path) -> None:
    side = {"isSidechain": True}
    s = read(
        write(
            tmp_path / "old.jsonl",
            [
                user("m1", None, "explore twice"),
                assistant(
                    "m2",
                    "m1",
                    [
                        tool_use("ta", "Task", subagent_type="Explore", prompt="A"),
                        tool_use("tb", "Task", subagent_type="Plan", prompt="B"),
                    ],
                ),
                user("s1", None, "A", **side),
                assistant("s2", "s1", [text("A done")]) | side,
                user("k1", None, "B", agentId="agent-b", **side),
                assistant("k2", "k1", [text("B done")]) | side | {"agentId": "agent-b"},
                user("m3", "m2", result("ta", "A done") + result("tb", "B done")),
            ],
        )
    )
    assert ids(s) == ["m1", "m2#0", "m2#1", "m3#0", "m3#1"]
    content = s.timeline.root.content
    kinds = [c.name if isinstance(c, TimelineSpan) else c.uuid for c in content]
    assert kinds == ["m1", "m2#0", "Explore", "m2#1", "Plan", "m3#0", "m3#1"]
    plan = content[4]
    assert isinstance(plan, TimelineSpan)
    assert (plan.id, plan.meta["tool_use_id"]) == ("agent-agent-b", "tb")
    assert [m.text for m in plan.messages()] == ["B", "B done"]


def test_new_layout_sub_agents_with_meta_json(tmp_path: Path) -> None:
    session = write(
        tmp_path / "S.jsonl",
        [
            user("u1", None, "research"),
            assistant("a1", "u1", [tool_use("toolu_1", "Agent", prompt="go")]),
            user("r1", "a1", result("toolu_1", [text("found it"), text("agentId: abc (resume)")])),
        ],
    )
    folder = tmp_path / "S" / "subagents"
    folder.mkdir(parents=True)
    side = {"isSidechain": True, "agentId": "abc"}
    write(
        folder / "agent-abc.jsonl",
        [user("x1", None, "go", **side), assistant("x2", "x1", [text("found it")]) | side],
    )
    (folder / "agent-abc.meta.json").write_text(
        '{"agentType": "researcher", "toolUseId": "toolu_1"}'
    )
    write(folder / "agent-orphan.jsonl", [user("o1", None, "lost", isSidechain=True)])
    s = read(session)
    spans = list(s.timeline.root.spans())
    assert [(sp.name, sp.meta.get("tool_use_id")) for sp in spans] == [
        ("researcher", "toolu_1"),
        ("agent-orphan", None),
    ]
    assert s.timeline.root.content[2] is spans[0]  # right after the Agent call
    assert s.timeline.root.content[-1] is spans[1]  # unlinked: at the end


def test_blocks_of_every_shape(tmp_path: Path) -> None:
    s = read(
        write(
            tmp_path / "b.jsonl",
            [
                user("u1", None, [text("look"), {"type": "image", "source": {}}, "plain", 7]),
                assistant(
                    "a1",
                    "u1",
                    [
                        {"type": "redacted_thinking", "data": "xx"},
                        {"type": "thinking", "thinking": "hmm"},
                        {"type": "tool_use", "id": "t1", "name": "Odd", "input": "raw"},
                        "not a block",
                    ],
                ),
                {
                    "type": "assistant",
                    "uuid": "a2",
                    "parentUuid": "a1",
                    "message": {"content": "plain"},
                },
                {
                    "type": "system",
                    "subtype": "local_command",
                    "uuid": "s1",
                    "parentUuid": "a2",
                    "content": "<local-command-stdout>ok</local-command-stdout>",
                },
                {"type": "system", "subtype": "turn_duration", "uuid": "s2", "parentUuid": "s1"},
                {"type": "custom-title", "customTitle": "My title", "sessionId": "S"},
                {
                    "type": "user",
                    "uuid": "u9",
                    "parentUuid": "s2",
                    "isMeta": True,
                    "message": {"content": "<system-reminder>x</system-reminder>"},
                },
            ],
        )
    )
    got = [(m.id, m.role, m.type, m.text) for m in s.messages()]
    assert got == [
        ("u1#0", "user", "text", "look"),
        ("u1#1", "user", "text", "<image />"),
        ("u1#2", "user", "text", "plain"),
        ("a1#1", "assistant", "thinking", "hmm"),
        ("a1#2", "assistant", "tool_use", '{"input":"raw"}'),
        ("a2", "assistant", "text", "plain"),
        ("s1", "system", "text", "<local-command-stdout>ok</local-command-stdout>"),
        ("u9", "user", "text", "<system-reminder>x</system-reminder>"),
    ]
    assert s.title == "My title"
    assert [m.is_human for m in s.messages()] == [True, True, True] + [False] * 5
    assert s.messages()[4].tool_input == {"input": "raw"}


@pytest.mark.parametrize(
    ("head", "score"),
    [
        (b'{"type":"summary","summary":"t","leafUuid":"x"}\n', 0.6),
        (b'{"type":"queue-operation","operation":"enqueue","sessionId":"S"}\n', 0.6),
        (b'{"type":"user","uuid":"u","sessionId":"S","message":{}}\n', 0.8),
        (b'{"type":"user","parentUuid":null,"uuid":"u","sessionId":"S"}\n', 0.95),
        (b'{"parentUuid":null,"sessionId":"S","message":{"content":"' + b"x" * SNIFF_BYTES, 0.5),
        (
            b'{"type":"session","id":"x"}\n{"timestamp":"t","type":"response_item","payload":{}}\n',
            0.0,
        ),
        (b"not json\n[1]\n", 0.0),
    ],
)
def test_sniff(head: bytes, score: float) -> None:
    assert READER.sniff(Path("x.jsonl"), head[:SNIFF_BYTES]) == score


def test_unreadable_files_are_reported(tmp_path: Path) -> None:
    sink = WarningSink()
    s = READER.read([tmp_path], sink)
    assert s.messages() == []
    assert sink.warnings[0].line == 0
    assert "cannot read" in sink.warnings[0].message
    assert list(READER.iter_messages([tmp_path / "missing.jsonl"], WarningSink())) == []


def test_iter_messages_streams_without_holding_the_text(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    filler = "x" * 5000
    with path.open("wb") as fh:
        parent = None
        for i in range(2000):
            uid = f"u{i}"
            if i % 2:
                fh.write(orjson.dumps(assistant(uid, parent, [text(filler)])) + b"\n")
            else:
                fh.write(orjson.dumps(user(uid, parent, filler)) + b"\n")
            parent = uid
    tracemalloc.start()
    count = sum(1 for m in READER.iter_messages([path], WarningSink()) if m.text == filler)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 2000
    assert path.stat().st_size > 10_000_000
    assert peak < 2_000_000  # ids only: the 10 MB of text never stays in memory


def test_compaction_event_wraps_the_message(tmp_path: Path) -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "cb",
        "parentUuid": "a1",
        "compactMetadata": {"preTokens": "many", "trigger": 3},
    }
    s = read(
        write(
            tmp_path / "c.jsonl",
            [user("u1", None, "x"), assistant("a1", "u1", [text("y")]), boundary],
        )
    )
    (event,) = [
        e
        for e in s.timeline.root.content
        if isinstance(e, TimelineEvent) and e.kind == "compaction"
    ]
    assert event.message is not None
    assert event.compaction is event.message.compaction
    assert event.compaction is not None
    assert (event.compaction.tokens_before, event.compaction.trigger, event.compaction.summary) == (
        None,
        None,
        None,
    )
