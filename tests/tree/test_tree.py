"""The Tree API over seed 002's phases: append, path, tree, branching, labels, compaction.

``PiWriter`` appends entries the way pi's ``SessionManager`` does (each new entry a
child of the current leaf; ``branch(id)`` moves the leaf), so each phase is tested on
a file built step by step; the bundled fixtures cover v1/v2/v3 and Claude rewinds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import UsageError
from opencode_restore.sources import open_session
from opencode_restore.tree import (
    BranchNotFoundError,
    SessionTree,
    TreeNode,
    resolve_leaf,
    select_branch,
    tree_of,
)


class PiWriter:
    """Appends entries as children of the current leaf (``appendXXX``), ``branch`` moves it."""

    def __init__(self, path: Path, session_id: str = "sess-test") -> None:
        self.path = path
        self.leaf: str | None = None
        self.count = 0
        self.lines: list[dict[str, Any]] = [
            {
                "type": "session",
                "version": 3,
                "id": session_id,
                "timestamp": "2026-01-05T10:00:00.000Z",
                "cwd": "/work/demo",
            }
        ]

    def _append(self, entry: dict[str, Any]) -> str:
        self.count += 1
        entry_id = f"e{self.count:07x}"
        stamp = f"2026-01-05T10:{self.count // 60:02d}:{self.count % 60:02d}.000Z"
        self.lines.append({"id": entry_id, "parentId": self.leaf, "timestamp": stamp, **entry})
        self.leaf = entry_id
        self.flush()
        return entry_id

    def user(self, text: str) -> str:
        return self._append({"type": "message", "message": {"role": "user", "content": text}})

    def assistant(self, text: str) -> str:
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "stopReason": "stop",
        }
        return self._append({"type": "message", "message": message})

    def label(self, target: str, label: str | None) -> str:
        entry: dict[str, Any] = {"type": "label", "targetId": target}
        if label is not None:
            entry["label"] = label
        return self._append(entry)

    def compaction(self, summary: str, first_kept: str, tokens: int) -> str:
        return self._append(
            {
                "type": "compaction",
                "summary": summary,
                "firstKeptEntryId": first_kept,
                "tokensBefore": tokens,
            }
        )

    def branch_summary(self, from_id: str, summary: str) -> str:
        return self._append({"type": "branch_summary", "fromId": from_id, "summary": summary})

    def branch(self, entry_id: str | None) -> None:
        """pi's ``branch(id)``: the next entry becomes a child of ``entry_id``."""
        self.leaf = entry_id

    def flush(self) -> None:
        self.path.write_text("".join(json.dumps(x) + "\n" for x in self.lines), encoding="utf-8")


def _tree(path: Path) -> tuple[SessionTree, Any]:
    session = open_session([path], WarningSink())
    return tree_of(session), session


def _ids(nodes: list[TreeNode]) -> list[str]:
    return [n.id for n in nodes]


# -- phase 1: append, path, tree ------------------------------------------------------


def test_append_advances_the_leaf_and_path_walks_to_the_root(tmp_path: Path) -> None:
    w = PiWriter(tmp_path / "s.jsonl")
    u1 = w.user("first")
    a1 = w.assistant("reply one")
    u2 = w.user("second")
    a2 = w.assistant("reply two")
    tree, session = _tree(w.path)
    assert tree.leaf_id == a2
    assert tree.leaf is not None
    assert tree.leaf.id == a2
    assert _ids(tree.path()) == [u1, a1, u2, a2]
    assert _ids(tree.path(u2)) == [u1, a1, u2]
    assert tree.path("nope") == []
    node = tree.get(a1)
    assert node is not None
    assert node.kind == "message"
    assert [m.id for m in session.messages()] == [u1, a1, u2, a2]
    assert len(tree) == 4
    assert _ids(tree.roots) == [u1]
    assert [(n.id, d) for n, d in tree.iter_dfs()] == [(u1, 0), (a1, 1), (u2, 2), (a2, 3)]
    assert tree.branch_points() == []
    assert _ids(tree.leaves()) == [a2]


# -- phase 3: branching ---------------------------------------------------------------


def test_branch_moves_the_leaf_and_the_old_path_becomes_a_branch(tmp_path: Path) -> None:
    w = PiWriter(tmp_path / "s.jsonl")
    u1 = w.user("fix the bug")
    a1 = w.assistant("which approach?")
    ua = w.user("approach A")
    aa = w.assistant("A failed")
    w.branch(a1)
    summary = w.branch_summary(aa, "A failed on import order.")
    ub = w.user("approach B")
    ab = w.assistant("B works")
    tree, session = _tree(w.path)

    assert tree.leaf_id == ab
    assert _ids(tree.path()) == [u1, a1, summary, ub, ab]
    assert _ids(tree.branch_points()) == [a1]
    assert _ids(tree.get(a1).children) == [ua, summary]  # type: ignore[union-attr]
    assert _ids(tree.leaves()) == [aa, ab]
    assert _ids(tree.branch_summaries()) == [summary]
    (branch,) = tree.abandoned()
    assert branch.from_id == a1
    assert _ids(branch.nodes) == [ua, aa]
    assert branch.leaf.id == aa
    assert tree.latest_leaf(a1).id == ab  # type: ignore[union-attr]
    # the reader lays the same tree out: active path in the root, the rest as a branch span
    spans = [s for s in session.timeline.root.walk() if s.span_type == "branch"]
    assert [(s.branched_from, [m.id for m in s.messages()]) for s in spans] == [(a1, [ua, aa])]


def test_select_branch_relays_the_session_along_another_leaf(tmp_path: Path) -> None:
    w = PiWriter(tmp_path / "s.jsonl")
    u1 = w.user("fix the bug")
    a1 = w.assistant("which approach?")
    ua = w.user("approach A")
    aa = w.assistant("A failed")
    w.branch(a1)
    ub = w.user("approach B")
    ab = w.assistant("B works")
    _, session = _tree(w.path)

    picked = select_branch(session, leaf=aa)
    assert [m.id for m in picked.messages()] == [u1, a1, ua, aa]
    spans = [s for s in picked.timeline.root.walk() if s.span_type == "branch"]
    assert [(s.id, s.branched_from, s.meta["leaf_id"]) for s in spans] == [(f"branch:{ub}", a1, ab)]
    assert [m.id for m in spans[0].messages()] == [ub, ab]
    assert picked.meta["leaf_id"] == aa
    assert picked.meta["session_leaf"] == ab
    # the original is untouched, and no choice means the session as read
    assert [m.id for m in session.messages()] == [u1, a1, ub, ab]
    assert select_branch(session) is session
    same = select_branch(session, leaf=ab)
    assert [m.id for m in same.messages()] == [u1, a1, ub, ab]
    assert "selected_leaf" not in same.meta
    # a leaf mid-conversation is taken exactly (pi's branch(id))
    assert [m.id for m in select_branch(session, leaf=a1).messages()] == [u1, a1]
    with pytest.raises(BranchNotFoundError, match="no entry or message with id 'zzz'"):
        select_branch(session, leaf="zzz")


def test_second_roots_and_parent_loops_stay_reachable(tmp_path: Path) -> None:
    w = PiWriter(tmp_path / "s.jsonl")
    u1 = w.user("one")
    w.assistant("two")
    w.branch(None)  # pi's resetLeaf: re-edit the first message
    r2 = w.user("one, again")
    a2 = w.assistant("better")
    # a loop no root reaches: x -> y -> x
    w.lines.append(
        {"type": "message", "id": "x", "parentId": "y", "message": {"role": "user", "content": "x"}}
    )
    w.lines.append(
        {"type": "message", "id": "y", "parentId": "x", "message": {"role": "user", "content": "y"}}
    )
    w.flush()
    tree, session = _tree(w.path)
    assert _ids(tree.roots)[:2] == [u1, r2]
    assert {n.id for n, _ in tree.iter_dfs()} == set(tree.nodes)  # nothing lost in the loop
    assert "x" in _ids(tree.roots)
    assert _ids(tree.path("y")) == ["x", "y"]
    picked = select_branch(session, leaf=a2, tree=tree)
    roots = [s for s in picked.timeline.root.spans() if s.branched_from is None]
    assert roots
    assert next(m.id for m in roots[0].messages()) == u1


# -- labels -----------------------------------------------------------------------------


def test_labels_set_clear_and_select_by_label(tmp_path: Path) -> None:
    w = PiWriter(tmp_path / "s.jsonl")
    u1 = w.user("start")
    a1 = w.assistant("ok")
    ua = w.user("try A")
    aa = w.assistant("A done")
    w.label(ua, "approach-a")
    w.branch(a1)
    ub = w.user("try B")
    w.label(ub, "tmp")
    w.label(ub, None)  # cleared
    ab = w.assistant("B done")
    tree, session = _tree(w.path)
    assert tree.labels == {ua: "approach-a"}
    assert tree.find_label("approach-a").id == ua  # type: ignore[union-attr]
    assert tree.find_label("tmp") is None
    # the label names a branch: restore follows it to the branch's end
    end = resolve_leaf(tree, label="approach-a")
    assert end.kind == "label"
    assert _ids(tree.path(end.id))[-3:] == [ua, aa, end.id]
    picked = select_branch(session, label="approach-a")
    assert [m.id for m in picked.messages()][-2:] == [ua, aa]
    labelled = next(m for m in picked.messages() if m.id == ua)
    assert labelled.meta["label"] == "approach-a"
    with pytest.raises(UsageError, match=r"no entry is labelled 'nope' \(labels: approach-a\)"):
        select_branch(session, label="nope")
    assert tree.leaf_id == ab
    assert u1 in tree.nodes


def test_tree_of_the_v3_fixture(fixtures: Path) -> None:
    tree, _ = _tree(fixtures / "pi" / "own" / "tree-v3.jsonl")
    assert len(tree) == 22
    assert tree.leaf_id == "c300000f"
    assert tree.labels == {"b2000001": "approach-a"}
    assert _ids(tree.branch_points()) == ["a1000004", "b2000001"]
    assert _ids(tree.branch_summaries()) == ["c3000001"]
    assert tree.get("a1000002.2").id == "a1000002"  # type: ignore[union-attr]  # by message id
    kinds = {n.kind for n in tree.nodes.values()}
    assert {"label", "custom", "model_change", "session_info", "compaction"} <= kinds
    (branch,) = tree.abandoned()
    assert _ids(branch.nodes) == ["b2000001", "b2000003"]
    assert [_ids(b.nodes) for b in branch.branches] == [["b2000002"]]
    assert [b.from_id for b in branch.walk()] == ["a1000004", "b2000001"]


# -- phase 4: compaction with ids -------------------------------------------------------


def test_compaction_entries_keep_from_an_entry_id(tmp_path: Path) -> None:
    w = PiWriter(tmp_path / "s.jsonl")
    w.user("one")
    w.assistant("two")
    kept = w.user("three")
    w.assistant("four")
    comp = w.compaction("## Goal\nthings", kept, 50_000)
    w.user("five")
    tree, session = _tree(w.path)
    (c,) = tree.compactions()
    assert c.id == comp
    assert c.messages[0].compaction is not None
    first_kept = c.messages[0].compaction.first_kept_id
    assert first_kept == kept
    assert first_kept in _ids(tree.path())
    assert c.messages[0].compaction.tokens_before == 50_000
    # the compaction is a marker in the full history, not a cut
    assert [m.type for m in session.messages()].count("compaction") == 1
    assert len(session.messages()) == 6


def test_v1_fixture_compactions_get_entry_ids(fixtures: Path) -> None:
    # EXPECTATIONS: 2 compactions at line indexes 359 and 628, firstKeptEntryIndex 293/551,
    # tokensBefore 175004/185014, both kept-from entries are user messages.
    tree, _ = _tree(fixtures / "pi" / "pi-mono" / "before-compaction.jsonl")
    comps = tree.compactions()
    assert [c.id for c in comps] == ["00000167", "00000274"]  # 359, 628 in hex
    kept = [c.messages[0].compaction.first_kept_id for c in comps]  # type: ignore[union-attr]
    assert kept == ["00000125", "00000227"]  # 293, 551
    assert [c.messages[0].compaction.tokens_before for c in comps] == [175004, 185014]  # type: ignore[union-attr]
    for k in kept:
        node = tree.get(k)
        assert node is not None
        assert node.messages[0].role == "user"
    assert tree.branch_points() == []
    assert len(tree.roots) == 1


# -- other agents: the timeline's branch spans ----------------------------------------------


CLAUDE = Path("claude-code") / "claude-code-log" / "dag_compact_after_rewind.jsonl"


def test_claude_rewind_tree(fixtures: Path) -> None:
    tree, session = _tree(fixtures / CLAUDE)
    # EXPECTATIONS: trunk u1,a1; abandoned rewind branch b1u,b1a; live branch to p1a
    assert tree.leaf_id == "p1a"
    assert _ids(tree.path()) == ["u1", "a1", "b2u", "b2a", "b2u2", "b2a2", "cb", "cs", "p1u", "p1a"]
    assert _ids(tree.branch_points()) == ["a1"]
    (branch,) = tree.abandoned()
    assert branch.from_id == "a1"
    assert _ids(branch.nodes) == ["b1u", "b1a"]
    assert _ids(tree.compactions()) == ["cb"]
    picked = select_branch(session, leaf="b1a")
    assert [m.id for m in picked.messages()] == ["u1", "a1", "b1u", "b1a"]
    (live,) = [s for s in picked.timeline.root.walk() if s.span_type == "branch"]
    assert live.branched_from == "a1"
    assert [m.id for m in live.messages()][-1] == "p1a"


def test_gemini_tree_is_linear(fixtures: Path) -> None:
    files = sorted((fixtures / "gemini").rglob("*.json*"))
    assert files
    session = open_session([files[0]], WarningSink())
    tree = tree_of(session)
    ids = [m.id for m in session.messages()]
    assert [n.id for n in tree.path()] == ids
    assert tree.branch_points() == []
    assert tree.leaf_id == ids[-1]
