"""Thousands of sibling branches: a tree walk without quadratic cost, and a bounded
number of model calls (issue 31: 10,000 branches took ~100 s and 9,999 calls)."""

from __future__ import annotations

from pathlib import Path

import anyio

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.pipeline.run import make_context
from opencode_restore.pipeline.stages import branch_summarizer
from opencode_restore.pipeline.stages.branch_summarizer import (
    MAX_LLM_BRANCHES,
    summarize_branches,
)
from opencode_restore.sources import open_session
from opencode_restore.tree import TreeNode, tree_of
from tests.security.hostile_corpus import claude_branches


def test_tree_nodes_compare_by_identity() -> None:
    # Field-by-field equality made each `node in parent.children` cost every sibling's
    # messages: two entries are never the same because their fields are.
    a, b = TreeNode("x", None, "message", 0), TreeNode("x", None, "message", 0)
    assert a != b
    assert a == a


def test_only_the_longest_branches_cost_a_model_call(tmp_path: Path) -> None:
    count = MAX_LLM_BRANCHES + 5
    args = claude_branches(tmp_path, count / 10_000)
    session = open_session([Path(args[1])], WarningSink())
    tree = tree_of(session)
    assert len(tree.branch_points()[0].children) == count
    provider = ScriptedProvider([{"summary": "Tried it [M1]."}] * count)
    ctx = make_context(session, load_config(env={}), provider)
    rows = anyio.run(lambda: summarize_branches(session, ctx, tree))
    assert len(rows) == count - 1
    assert len(provider.requests) == MAX_LLM_BRANCHES
    digests = [r for r in rows if r.source == "generated"]
    assert len(digests) == count - 1 - MAX_LLM_BRANCHES
    note = branch_summarizer._NOT_BY_MODEL.format(n=MAX_LLM_BRANCHES)
    assert all(r.summary.endswith(note) for r in digests)


def test_offline_every_branch_gets_the_digest_without_a_note(tmp_path: Path) -> None:
    args = claude_branches(tmp_path, 0.003)
    session = open_session([Path(args[1])], WarningSink())
    ctx = make_context(session, load_config(env={}), OfflineProvider())
    rows = anyio.run(lambda: summarize_branches(session, ctx))
    assert len(rows) == 29
    assert all(r.source == "generated" and "A digest" not in r.summary for r in rows)
