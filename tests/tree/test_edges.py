"""Edge cases of the Tree API, the writers and branch summaries: odd ids, odd lines, odd spans."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.model import Message, TimelineEvent, TimelineSpan
from opencode_restore.pipeline.run import make_context
from opencode_restore.pipeline.stages.branch_summarizer import MAX_BRANCH_CHARS, summarize_branches
from opencode_restore.sources import open_session
from opencode_restore.sources.pi.migrate import branch_lines, export_pi_branch
from opencode_restore.sources.pi.tree import PiEntry
from opencode_restore.tree import SessionTree, TreeNode, resolve_leaf, timeline_tree, tree_of
from opencode_restore.tree.export import export_branch

from ..pipeline.helpers import make_session
from .test_tree import PiWriter


def test_repeated_ids_across_a_fork_chain_and_within_a_file(tmp_path: Path) -> None:
    w = PiWriter(tmp_path / "a.jsonl")
    u1 = w.user("one")
    a1 = w.assistant("two")
    fork = PiWriter(tmp_path / "b.jsonl")
    fork.lines += w.lines[1:]  # a fork repeats its parent's path
    fork.leaf, fork.count = a1, w.count
    u2 = fork.user("three")
    fork.label("missing", "ghost")  # a label on an unknown entry is ignored
    session = open_session([w.path, fork.path], WarningSink())
    tree = tree_of(session)
    assert [n.id for n in tree.path()] == [u1, a1, u2, tree.leaf_id]
    assert tree.labels == {}
    # within one file a repeated id: the later entry wins, as in pi's index
    w.lines.append({**w.lines[1], "message": {"role": "user", "content": "one, rewritten"}})
    w.flush()
    sink = WarningSink()
    tree = tree_of(open_session([w.path], WarningSink()), sink)
    assert tree.get(u1).messages[0].text == "one, rewritten"  # type: ignore[union-attr]
    assert any("duplicate entry id" in x.message for x in sink.warnings)


def test_timeline_tree_of_hand_built_spans() -> None:
    sub = TimelineSpan("sub", "helper", "agent", [])
    lone = TimelineSpan("first", "early agent", "agent", [])
    branch = TimelineSpan(
        "br",
        "branch x",
        "branch",
        [TimelineEvent("b1", "message", Message("b1", "user", "text", "other"))],
        branched_from="not-a-message",
    )
    m1 = Message("m1", "user", "text", "hi")
    dup = Message("m1", "assistant", "text", "same id")
    summary = Message("s1", "user", "summary", "left A", meta={"summary_of": "branchSummary"})
    session = make_session([m1])
    session.timeline.root.content = [
        lone,
        TimelineEvent("m1", "message", m1),
        TimelineEvent("x", "info", text="no message"),
        sub,
        TimelineEvent("m1", "message", dup),
        branch,
        TimelineEvent("s1", "message", summary),
    ]
    tree = timeline_tree(session)
    assert tree.head_spans == [lone]
    assert tree.get("m1").spans == [sub]  # type: ignore[union-attr]
    assert [n.id for n in tree.path()] == ["m1", "m1~1", "s1"]
    assert tree.get("b1").parent_id == "m1~1"  # type: ignore[union-attr]  # fork unknown: prev
    assert [n.id for n in tree.branch_summaries()] == ["s1"]
    assert tree.latest_leaf("nope") is None


def test_resolve_leaf_defaults_and_empty_trees() -> None:
    tree = SessionTree([TreeNode("a", None, "message", 0), TreeNode("b", "a", "message", 1)], None)
    assert tree.leaf_id == "b"
    assert resolve_leaf(tree).id == "b"
    empty = SessionTree([], None)
    assert empty.leaf is None
    assert empty.path() == []
    with pytest.raises(Exception, match="no entries"):
        resolve_leaf(empty)


def test_parent_loop_through_a_reached_entry_is_cut() -> None:
    # r -> a -> b -> a: "a" is reached from r, b's child link back to a must not loop
    nodes = [
        TreeNode("r", None, "message", 0),
        TreeNode("a", "b", "message", 1),
        TreeNode("b", "a", "message", 2),
    ]
    tree = SessionTree(nodes, "b")
    assert {n.id for n, _ in tree.iter_dfs()} == {"r", "a", "b"}
    assert tree.path("b")[-1].id == "b"


def test_claude_export_keeps_side_chains_and_skips_bad_lines(
    fixtures: Path, tmp_path: Path
) -> None:
    src = fixtures / "claude-code" / "claude-code-log" / "dag_compact_after_rewind.jsonl"
    odd = tmp_path / "odd.jsonl"
    side = {
        "type": "user",
        "uuid": "side-1",
        "isSidechain": True,
        "parentUuid": None,
        "message": {"role": "user", "content": "sub"},
    }
    odd.write_bytes(src.read_bytes() + b"{not json\n[1, 2]\n" + json.dumps(side).encode())
    dest = tmp_path / "out.jsonl"
    export_branch(odd, "claude-code", "b1a", dest)
    lines = dest.read_text().splitlines()
    assert json.loads(lines[-1])["uuid"] == "side-1"
    assert all(line.startswith("{") for line in lines)


def test_branch_lines_skip_labels_off_the_path(fixtures: Path, tmp_path: Path) -> None:
    path = [PiEntry({"type": "message", "id": "a", "parentId": None}, 2, 1)]
    _, lines = branch_lines({"cwd": "/w"}, path, {"a": "keep", "zz": "drop"}, tmp_path / "s.jsonl")
    labels = [json.loads(x) for x in lines if b'"label"' in x]
    assert [(x["targetId"], x["label"]) for x in labels] == [("a", "keep")]
    taken = tmp_path / "t.jsonl"
    taken.write_text("x")
    with pytest.raises(Exception, match="exists"):
        export_pi_branch(fixtures / "pi" / "own" / "tree-v3.jsonl", "a1000001", taken)


def test_llm_branch_summary_of_a_long_branch_is_cut(tmp_path: Path) -> None:
    w = PiWriter(tmp_path / "s.jsonl")
    w.user("start")
    fork = w.assistant("ok")
    w.user("x" * (MAX_BRANCH_CHARS * 2))
    w.branch(fork)
    w.user("other way")
    session = open_session([w.path], WarningSink())
    provider = ScriptedProvider([{"summary": "   "}])  # an empty answer: fall back
    ctx = make_context(session, load_config(env={}), provider)
    (row,) = anyio.run(lambda: summarize_branches(session, ctx))
    assert row.source == "generated"
    assert row.summary.startswith("1 message. The user asked")
    sent = provider.requests[0].messages[-1].content
    assert "middle of the branch omitted" in sent
    assert len(sent) < MAX_BRANCH_CHARS + 500
