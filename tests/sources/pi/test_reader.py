"""pi reader: full-history messages, compaction markers, branches as spans, context."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message, TimelineSpan, Usage
from opencode_restore.sources import detect
from opencode_restore.sources.base import SNIFF_BYTES
from opencode_restore.sources.pi import tree as pi_tree
from opencode_restore.sources.pi.reader import READER, context_messages, entry_messages
from opencode_restore.sources.pi.tree import PiEntry

PI = Path(__file__).resolve().parents[3] / "fixtures" / "pi"
LARGE = PI / "pi-mono" / "large-session.jsonl"
BEFORE = PI / "pi-mono" / "before-compaction.jsonl"
TREE = PI / "own" / "tree-v3.jsonl"
V2 = PI / "own" / "hook-v2.jsonl"


def _messages(*paths: Path) -> list[Message]:
    sink = WarningSink()
    msgs = READER.read(list(paths), sink).messages()
    assert sink.warnings == []
    return msgs


@pytest.mark.parametrize("path", sorted(PI.rglob("*.jsonl")), ids=lambda p: p.name)
def test_every_session_fixture_is_detected_as_pi(path: Path) -> None:
    assert READER.sniff(path, path.read_bytes()[:SNIFF_BYTES]) == 0.95
    assert detect(path).name == "pi"


def test_large_session_messages() -> None:
    session = READER.read([LARGE], WarningSink())
    assert session.id == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    assert session.cwd == "/Users/badlogic/workspaces/pi-mono"
    assert session.started_at == datetime(2025, 11, 20, 23, 33, 50, 805000, tzinfo=UTC)
    assert session.model == "claude-sonnet-4-5"
    assert session.meta["version"] == 1
    assert session.meta["provider"] == "anthropic"
    assert session.meta["model_changes"] == [
        {"entry_id": "00000003", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    ]
    msgs = session.messages()
    counts = Counter((m.role, m.type) for m in msgs)
    assert counts[("user", "text")] == 88
    assert counts[("tool", "tool_result")] == 373
    assert counts[("assistant", "tool_use")] == 391
    # every message entry is there: one group per entry
    groups = {m.group for m in msgs}
    assert len(groups) == 88 + 373 + len({m.group for m in msgs if m.role == "assistant"})
    assert len({m.id for m in msgs}) == len(msgs)
    # tool results pair with a tool call
    calls = {m.tool_call_id for m in msgs if m.type == "tool_use"}
    assert {m.tool_call_id for m in msgs if m.type == "tool_result"} <= calls
    # message timestamps are unix ms
    assert msgs[0].timestamp == datetime.fromtimestamp(1763681581.544, UTC)
    assert msgs[0].text == "/mode"
    assert msgs[0].entry_index == 2


def test_aborted_empty_assistant_reply_keeps_its_error() -> None:
    msgs = _messages(LARGE)
    aborted = next(m for m in msgs if m.id == "00000002")
    assert (aborted.role, aborted.text, aborted.is_error) == (
        "assistant",
        "Request was aborted",
        True,
    )
    assert aborted.meta == {"error": "Request was aborted", "stop_reason": "aborted"}
    assert aborted.model == "gpt-5.1-codex"


def test_usage_is_counted_once_per_reply() -> None:
    msgs = _messages(LARGE)
    raw = [orjson.loads(x) for x in LARGE.read_bytes().splitlines()[1:]]
    expected = Usage()
    for r in raw:
        u = r.get("message", {}).get("usage") if r["type"] == "message" else None
        if u:
            expected.add(Usage(u["input"], u["output"], u["cacheRead"], u["cacheWrite"]))
    total = READER.read([LARGE], WarningSink()).usage()
    assert total == expected
    assert sum(1 for m in msgs if m.usage is not None) == sum(
        1 for g in {m.group for m in msgs if m.role == "assistant"}
    )


def test_before_compaction_full_history_with_two_markers() -> None:
    session = READER.read([BEFORE], WarningSink())
    msgs = session.messages()
    markers = [m for m in msgs if m.type == "compaction"]
    assert [m.id for m in markers] == [pi_tree.v1_entry_id(359), pi_tree.v1_entry_id(628)]
    assert [m.entry_index for m in markers] == [360, 629]
    assert all(m.role == "system" for m in markers)
    comps = [m.compaction for m in markers]
    assert [(c.kind, c.tokens_before, c.first_kept_id) for c in comps if c] == [
        ("summary", 175004, pi_tree.v1_entry_id(293)),
        ("summary", 185014, pi_tree.v1_entry_id(551)),
    ]
    assert markers[0].text.startswith("# Context Checkpoint: Coding Agent Refactoring")
    assert markers[0].text == comps[0].summary if comps[0] else False
    # the full history keeps what came before each compaction, in file order
    lines = [m.entry_index for m in msgs]
    assert lines == sorted(lines)
    assert lines[0] == 2
    kept = [m for m in msgs if m.id == pi_tree.v1_entry_id(293)]
    assert [(m.role, m.type) for m in kept] == [("user", "text")]
    assert kept[0].text == "i reviwed what we have, it's good. continue"
    events = list(session.timeline.root.events())
    assert [e.kind for e in events].count("compaction") == 2
    assert session.meta["parent_session"].endswith("d97339c6-6c10-4827-846b-9ff1d9c3dc37.jsonl")


def test_bash_executions_are_synthetic_tool_pairs() -> None:
    msgs = _messages(BEFORE)
    uses = [m for m in msgs if m.meta.get("user_bash") and m.type == "tool_use"]
    results = [m for m in msgs if m.meta.get("user_bash") and m.type == "tool_result"]
    assert len(uses) == len(results) == 3
    for use, result in zip(uses, results, strict=True):
        assert (use.role, use.tool_name, result.role) == ("user", "bash", "tool")
        assert use.tool_input == {"command": use.text}
        assert result.tool_call_id == use.tool_call_id == use.group
        assert not use.is_human
        assert "exit_code" in result.meta


def test_context_messages_of_before_compaction() -> None:
    pi = pi_tree.load(BEFORE, WarningSink())
    ctx = context_messages(pi)
    assert ctx[0].type == "compaction"
    assert ctx[0].compaction is not None
    assert ctx[0].compaction.tokens_before == 185014
    assert ctx[1].id == pi_tree.v1_entry_id(551)
    assert sum(1 for m in ctx if m.type == "compaction") == 1
    assert len(ctx) < len(_messages(BEFORE))


def test_tree_session_root_and_branch_spans() -> None:
    session = READER.read([TREE], WarningSink())
    assert session.id == "sess-tree-0001"
    assert session.title == "Shout flag"
    assert session.model == "gpt-5.1-codex"
    assert session.meta["labels"] == {"b2000001": "approach-a"}
    assert session.meta["leaf_id"] == "c300000f"
    root = session.timeline.root
    shape = [
        (type(x).__name__, x.id if isinstance(x, TimelineSpan) else x.uuid) for x in root.content
    ]
    assert shape == [
        ("TimelineEvent", "a1000001"),
        ("TimelineEvent", "a1000002"),
        ("TimelineEvent", "a1000002.1"),
        ("TimelineEvent", "a1000002.2"),
        ("TimelineEvent", "a1000003"),
        ("TimelineEvent", "a1000004"),
        ("TimelineSpan", "branch:b2000001"),
        ("TimelineEvent", "c3000001"),
        ("TimelineEvent", "c3000002"),
        ("TimelineEvent", "c3000003"),
        ("TimelineEvent", "c3000007"),
        ("TimelineEvent", "c300000c"),
        ("TimelineEvent", "c300000c.1"),
        ("TimelineEvent", "c300000d"),
        ("TimelineEvent", "c300000e"),
        ("TimelineEvent", "c300000f"),
    ]
    (branch,) = root.spans()
    assert (branch.span_type, branch.name, branch.branched_from) == (
        "branch",
        "approach-a",
        "a1000004",
    )
    assert [m.text for m in branch.messages()] == ["try approach A", "A failed: argparse conflict"]
    assert branch.messages()[0].meta == {"label": "approach-a"}
    (nested,) = branch.spans()
    assert (nested.name, nested.branched_from, nested.meta) == (
        "branch b2000002",
        "b2000001",
        {"leaf_id": "b2000002"},
    )
    assert [s.id for s in root.walk()] == ["sess-tree-0001", "branch:b2000001", "branch:b2000002"]


def test_tree_session_message_kinds() -> None:
    msgs = {m.id: m for m in _messages(TREE)}
    assert (msgs["a1000002"].type, msgs["a1000002"].text) == ("thinking", "Read the file first.")
    call = msgs["a1000002.2"]
    assert (call.tool_name, call.tool_call_id, call.tool_input) == (
        "read",
        "tc-1",
        {"path": "greet.py"},
    )
    assert msgs["a1000003"].tool_call_id == "tc-1"
    summary = msgs["c3000001"]
    assert (summary.role, summary.type, summary.is_human) == ("user", "summary", False)
    assert summary.meta == {"synthetic": True, "from_id": "b2000003"}
    custom = msgs["c3000007"]
    assert (custom.role, custom.text, custom.is_human) == ("user", "Lint: 0 problems", False)
    assert custom.meta == {
        "synthetic": True,
        "injected": "custom",
        "custom_type": "lint-hook",
        "display": False,
    }
    bash = msgs["c300000c.1"]
    assert (bash.text, bash.is_error, bash.meta["exit_code"]) == ("1 failed", True, 1)
    marker = msgs["c300000d"]
    assert marker.compaction is not None
    assert (marker.compaction.first_kept_id, marker.compaction.tokens_before) == ("c3000002", 5000)
    # labels, custom state and settings changes are not messages
    assert not {"c3000004", "c3000005", "c3000006", "c3000008", "c3000009"} & set(msgs)
    assert msgs["a1000001"].timestamp == datetime(2026, 1, 5, 10, 0, 1, tzinfo=UTC)
    assert [m.text for m in msgs.values() if m.is_human] == [
        "add a --shout flag to greet.py",
        "use approach B",
        "fix the failing test",
    ]


def test_context_messages_of_the_tree_and_of_a_chosen_leaf() -> None:
    pi = pi_tree.load(TREE, WarningSink())
    assert [m.id for m in context_messages(pi)] == [
        "c300000d", "c3000002", "c3000003", "c3000007", "c300000c", "c300000c.1",
        "c300000e", "c300000f",
    ]  # fmt: skip
    assert [m.text for m in context_messages(pi, leaf="b2000002")][-2:] == [
        "try approach A",
        "A, first attempt",
    ]


def test_v2_file_hook_message_and_two_compactions() -> None:
    session = READER.read([V2], WarningSink())
    msgs = session.messages()
    assert msgs[1].meta == {"synthetic": True, "injected": "custom", "custom_type": "greeter"}
    assert msgs[1].text == "Hook says hi"
    assert [m.id for m in msgs if m.type == "compaction"] == ["d4000005", "d4000008"]
    last = next(m for m in msgs if m.id == "d4000008")
    assert last.compaction is not None
    assert last.compaction.trigger == "hook"
    assert session.meta["version"] == 2
    pi = pi_tree.load(V2, WarningSink())
    assert [m.id for m in context_messages(pi)] == ["d4000008", "d4000007", "d4000009"]


def test_iter_messages_matches_read() -> None:
    for path in (TREE, V2, BEFORE):
        assert list(READER.iter_messages([path], WarningSink())) == _messages(path)


def test_a_fork_file_does_not_repeat_its_parents_messages(tmp_path: Path) -> None:
    lines = TREE.read_bytes().splitlines()
    fork = tmp_path / "fork.jsonl"
    header = orjson.loads(lines[0]) | {"id": "sess-fork", "parentSession": str(TREE)}
    extra = {
        "type": "message",
        "id": "f0000001",
        "parentId": "a1000004",
        "timestamp": "2026-01-06T00:00:00.000Z",
        "message": {"role": "user", "content": "forked question"},
    }
    fork.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:5], orjson.dumps(extra)]) + b"\n")
    session = READER.read([TREE, fork], WarningSink())
    msgs = session.messages()
    assert [m.id for m in msgs][-1] == "f0000001"
    assert msgs[-1].file_index == 1
    assert len({m.id for m in msgs}) == len(msgs)
    assert session.id == "sess-tree-0001"
    alone = READER.read([fork], WarningSink())
    assert alone.meta["parent_session"] == str(TREE)


def test_the_pi_assistant_message_fixture_converts() -> None:
    raw = orjson.loads((PI / "pi-mono" / "assistant-message-with-thinking-code.json").read_bytes())
    entry = PiEntry({"type": "message", "id": "e1", "parentId": None, "message": raw}, 2, 1)
    msgs = entry_messages(entry, 0, WarningSink(), Path("x"))
    assert [(m.id, m.type) for m in msgs] == [("e1", "thinking"), ("e1.1", "text")]
    assert msgs[0].text.startswith("So `findModel` just looks up a model")
    assert "```typescript" in msgs[0].text
    assert msgs[0].usage == Usage(input=8, output=1211, cache_read=89775, cache_write=611)
    assert msgs[1].usage is None
    assert {m.model for m in msgs} == {"claude-opus-4-5"}
    assert msgs[0].timestamp == datetime.fromtimestamp(1766357372.971, UTC)


def _one(entry: dict[str, Any]) -> tuple[list[Message], WarningSink]:
    sink = WarningSink()
    base = {"id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:00Z"}
    msgs = entry_messages(PiEntry(base | entry, 3, 2), 0, sink, Path("f.jsonl"))
    return msgs, sink


def test_odd_entries_are_reported_not_raised() -> None:
    msgs, sink = _one({"type": "message", "message": "nope"})
    assert (msgs, [str(w) for w in sink.warnings]) == (
        [],
        ["f.jsonl:3: message entry without a message object; skipped"],
    )
    msgs, sink = _one({"type": "message", "message": {"role": "robot"}})
    assert [w.message for w in sink.warnings] == ["unknown message role 'robot'; skipped"]
    msgs, sink = _one({"type": "future_thing"})
    assert [w.message for w in sink.warnings] == ["unknown entry type 'future_thing'; skipped"]
    msgs, sink = _one({"type": "branch_summary", "summary": ""})
    assert (msgs, sink.warnings) == ([], [])


def test_odd_assistant_content() -> None:
    msgs, _ = _one(
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": ["plain", 7, {"type": "toolCall", "name": "t", "arguments": [1]},
                            {"type": "toolCall", "id": "c"}, {"type": "image"}],
                "usage": {"input": True, "output": 3},
                "stopReason": "length",
            },
        }
    )  # fmt: skip
    assert [(m.type, m.text, m.tool_input) for m in msgs] == [
        ("text", "plain", None),
        ("tool_use", "[1]", {"arguments": [1]}),
        ("tool_use", "", {"arguments": None}),
    ]
    assert msgs[0].usage == Usage(output=3)
    assert msgs[0].meta == {"stop_reason": "length"}
    empty, _ = _one({"type": "message", "message": {"role": "assistant", "content": []}})
    assert empty == []


def test_summary_roles_and_bash_variants() -> None:
    msgs, _ = _one({"type": "message", "message": {"role": "compactionSummary", "summary": "s"}})
    assert [(m.role, m.type, m.meta) for m in msgs] == [
        ("user", "summary", {"synthetic": True, "summary_of": "compactionSummary"})
    ]
    msgs, _ = _one(
        {
            "type": "message",
            "message": {
                "role": "bashExecution", "command": "sleep 9", "output": "", "exitCode": None,
                "cancelled": True, "truncated": True, "excludeFromContext": True,
            },
        }
    )  # fmt: skip
    assert msgs[0].meta == {"synthetic": True, "user_bash": True, "exclude_from_context": True}
    assert msgs[1].meta == {
        "synthetic": True,
        "user_bash": True,
        "cancelled": True,
        "truncated": True,
    }
    assert msgs[1].is_error


@pytest.mark.parametrize(
    ("head", "score"),
    [
        (b'{"type":"session","id":"x","cwd":"/"}\n', 0.95),
        (b'{"type":"session","version":3}\n', 0.0),
        (b'{"type":"session","id":"' + b"x" * 100, 0.5),
        (b'{"type":"message","timestamp":"t","message":{"role":"toolResult"}}\n', 0.4),
        (b'{"type":"user","message":{"role":"user"}}\n', 0.0),
        (b"", 0.0),
    ],
)
def test_sniff(head: bytes, score: float) -> None:
    assert READER.sniff(Path("x.jsonl"), head) == score


def test_read_of_a_headerless_file_falls_back_to_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "2026-01-01_abc.jsonl"
    path.write_text('{"type":"message","message":{"role":"user","content":"hi"}}\n')
    sink = WarningSink()
    session = READER.read([path], sink)
    assert session.id == "2026-01-01_abc"
    assert [m.text for m in session.messages()] == ["hi"]
    assert [w.message for w in session.warnings] == ["first line is not a pi session header"]


def test_a_v1_header_alone_still_names_the_model(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type":"session","id":"s","timestamp":"2025-11-20T23:33:50.805Z","provider":"anthropic",'
        '"modelId":"claude-sonnet-4-5"}\n'
    )
    session = READER.read([path], WarningSink())
    assert (session.model, session.meta) == (
        "claude-sonnet-4-5",
        {"version": 1, "provider": "anthropic"},
    )
    assert session.messages() == []


def test_read_needs_a_file() -> None:
    with pytest.raises(ValueError, match="at least one file"):
        READER.read([], WarningSink())


def test_deeply_nested_branches_do_not_exhaust_the_stack(tmp_path: Path) -> None:
    # n1 -> n2 -> … each written first; every n_k also gets a leaf l_k written later than
    # all of n_k's subtree, so each n_{k+1} hangs off the branch above it as a new level.
    depth = 1200

    def msg(id_: str, parent: str | None) -> bytes:
        entry = {"type": "message", "id": id_, "parentId": parent, "message": {"role": "user"}}
        return orjson.dumps(entry)

    lines = [orjson.dumps({"type": "session", "version": 3, "id": "deep"}), msg("r", None)]
    lines += [msg(f"n{k}", "r" if k == 1 else f"n{k - 1}") for k in range(1, depth + 1)]
    lines += [msg(f"l{k}", f"n{k}") for k in range(depth, 0, -1)]
    lines.append(msg("active", "r"))
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    session = READER.read([path], WarningSink())
    assert [m.id for m in session.messages()] == ["r", "active"]
    levels, span = 0, next(session.timeline.root.spans(), None)
    while span is not None:
        levels += 1
        assert [m.id for m in span.messages()] == [f"n{levels}", f"l{levels}"]
        span = next(span.spans(), None)
    assert levels == depth
