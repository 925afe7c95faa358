"""Branch-aware restore: abandoned branches become branch summaries in the restoration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import ProviderError
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.model import Message
from opencode_restore.pipeline.run import RestoreOptions, make_context, restore_session
from opencode_restore.pipeline.stages.branch_summarizer import digest, summarize_branches
from opencode_restore.report.summary import summary_markdown
from opencode_restore.sources import open_session
from opencode_restore.tree import select_branch
from tests.tree.test_tree import PiWriter

TREE_V3 = Path("pi") / "own" / "tree-v3.jsonl"


def _restore(session: Any, provider: Any) -> Any:
    config = load_config(env={})
    options = RestoreOptions(skip_evidence_search=True)
    return anyio.run(lambda: restore_session(session, config, provider, options=options))


def test_offline_restore_uses_the_sessions_own_branch_summary(fixtures: Path) -> None:
    session = open_session([fixtures / TREE_V3], WarningSink())
    r = _restore(session, OfflineProvider())
    rows = [(b.branch_id, b.from_id, b.source, b.messages) for b in r.branch_summaries]
    assert rows == [
        ("branch:b2000001", "a1000004", "session", 2),
        ("branch:b2000002", "b2000001", "generated", 1),
    ]
    own, nested = r.branch_summaries
    assert own.summary == "Tried approach A; it failed on an argparse conflict."
    assert own.label == "approach-a"
    assert own.leaf_id == "b2000003"
    assert own.from_citation is not None  # the fork point was shown to the summarizer
    assert nested.summary == "1 message. Last reply: “A, first attempt”."
    md = summary_markdown(r)
    assert "## Abandoned branches" in md
    assert f"- branch “approach-a” after [{own.from_citation}] (2 messages, session)" in md
    assert "- branch after entry `b2000001` (1 message, generated)" in md
    assert any(ref.label == own.from_citation for ref in r.references)


def test_restore_along_a_label_summarizes_the_branch_left(fixtures: Path) -> None:
    session = select_branch(open_session([fixtures / TREE_V3], WarningSink()), label="approach-a")
    assert [m.id for m in session.messages()][-2:] == ["b2000001", "b2000003"]
    r = _restore(session, OfflineProvider())
    main = r.branch_summaries[0]
    assert main.branch_id == "branch:c3000001"
    assert main.source == "generated"
    assert "The user asked: “use approach B”" in main.summary
    assert "Tools: bash ×1" in main.summary
    assert "Last reply: “Fixed; all tests pass.”" in main.summary


def test_pi_branch_summary_hanging_off_the_fork_point(tmp_path: Path) -> None:
    # Today's pi writes the summary as a child of the fork point with fromId = the fork.
    w = PiWriter(tmp_path / "s.jsonl")
    w.user("start")
    fork = w.assistant("ok")
    w.user("try A")
    w.assistant("A failed")
    w.branch(fork)
    w.branch_summary(fork, "A was a dead end.")
    w.user("try B")
    w.assistant("B works")
    r = _restore(open_session([w.path], WarningSink()), OfflineProvider())
    (row,) = r.branch_summaries
    assert (row.source, row.summary) == ("session", "A was a dead end.")


def test_one_llm_call_per_branch_without_its_own_summary(fixtures: Path) -> None:
    session = open_session([fixtures / TREE_V3], WarningSink())
    provider = ScriptedProvider([{"summary": "Tried a first attempt at A [M1]."}])
    ctx = make_context(session, load_config(env={}), provider)
    rows = anyio.run(lambda: summarize_branches(session, ctx))
    assert [b.source for b in rows] == ["session", "llm"]
    assert rows[1].summary == "Tried a first attempt at A [M1]."
    assert len(provider.requests) == 1
    request = provider.requests[0]
    assert request.stage == "branch_summary"
    assert "A, first attempt" in request.messages[-1].content
    assert ctx.numbering.label_for("b2000002") == "M1"  # citable in the report


def test_a_failed_llm_call_falls_back_to_the_digest(fixtures: Path) -> None:
    session = open_session([fixtures / TREE_V3], WarningSink())
    provider = ScriptedProvider([ProviderError("scripted", "x", "down")])
    ctx = make_context(session, load_config(env={}), provider)
    rows = anyio.run(lambda: summarize_branches(session, ctx))
    assert rows[1].source == "generated"
    assert rows[1].summary.startswith("1 message.")


def test_a_summary_that_states_nothing_gives_way_to_the_digest(fixtures: Path) -> None:
    session = open_session([fixtures / TREE_V3], WarningSink())
    provider = ScriptedProvider([{"summary": "[M1]"}])
    ctx = make_context(session, load_config(env={}), provider)
    rows = anyio.run(lambda: summarize_branches(session, ctx))
    assert rows[1].source == "generated"
    assert rows[1].summary.startswith("1 message.")


def test_linear_sessions_have_no_branch_summaries(fixtures: Path) -> None:
    session = open_session([fixtures / "pi" / "own" / "small-v1.jsonl"], WarningSink())
    assert _restore(session, OfflineProvider()).branch_summaries == []


def test_digest_counts_requests_tools_and_errors() -> None:
    msgs = [
        Message("1", "user", "text", "first ask"),
        Message("2", "assistant", "tool_use", "{}", tool_name="bash"),
        Message("3", "tool", "tool_result", "boom", is_error=True),
        Message("4", "user", "text", "second ask"),
        Message("5", "assistant", "text", "gave up"),
    ]
    assert digest(msgs) == (
        "5 messages. The user asked: “first ask”. Then 1 more request, the last: "
        "“second ask”. Tools: bash ×1. Errors: 1, the last: “boom”. Last reply: “gave up”."
    )
