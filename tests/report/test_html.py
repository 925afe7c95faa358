"""The HTML report's data and page, without a browser: structure, escaping, redaction."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Message
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.report.html import MAX_BLOCK_CHARS, embed_json, report_data, session_html
from opencode_restore.sources import open_session
from opencode_restore.tree import select_branch

from ..pipeline.helpers import make_session

TREE_V3 = Path("pi") / "own" / "tree-v3.jsonl"
EVIL = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> & <!--'


def _data(page: str) -> dict[str, Any]:
    block = re.search(
        r'<script type="application/json" id="session-data">(.*?)</script>', page, re.S
    )
    assert block is not None
    return json.loads(block.group(1))  # type: ignore[no-any-return]


def test_nodes_come_parents_first_with_kinds_labels_and_notes(fixtures: Path) -> None:
    session = open_session([fixtures / TREE_V3], WarningSink())
    data = report_data(session)
    nodes = data["nodes"]
    assert len(nodes) == 22
    assert data["leaf"] == "c300000f"
    pos = {n["id"]: i for i, n in enumerate(nodes)}
    for i, n in enumerate(nodes):
        assert n["p"] < i
    assert nodes[pos["b2000001"]]["p"] == pos["a1000004"]
    assert nodes[pos["b2000001"]]["l"] == "approach-a"
    assert nodes[pos["c300000d"]]["k"] == "compaction"
    assert nodes[pos["c300000d"]]["b"][0]["tb"] == 5000
    assert nodes[pos["c3000009"]]["x"] == "model → openai/gpt-5.1-codex"
    assert nodes[pos["c3000006"]]["x"] == "label cleared"
    assert nodes[pos["c3000004"]]["x"] == "label 'approach-a' on b2000001"
    assert [b["t"] for b in nodes[pos["a1000002"]]["b"]] == ["thinking", "text", "tool_use"]
    assert nodes[pos["a1000002"]]["b"][2]["n"] == "read"
    assert nodes[pos["c300000c"]]["b"][1]["e"] == 1  # exit 1
    assert data["summary"] is None
    assert data["refs"] == {}


def test_selected_leaf_and_restoration_refs(fixtures: Path) -> None:
    session = select_branch(open_session([fixtures / TREE_V3], WarningSink()), leaf="b2000002")
    config = load_config(env={})
    opts = RestoreOptions(skip_evidence_search=True)
    r = anyio.run(lambda: restore_session(session, config, OfflineProvider(), options=opts))
    data = report_data(session, restoration=r)
    assert data["leaf"] == "b2000002"
    assert data["summary"].startswith("# SESSION SUMMARY")
    assert data["refs"]
    assert all(re.fullmatch(r"M\d+", k) for k in data["refs"])
    ids = {b["m"] for n in data["nodes"] for b in n["b"]}
    assert set(data["refs"].values()) <= ids  # every citation has a message to scroll to
    assert data["provider"] == "offline:rules"
    assert data["summarized_by"] == "offline rules: no model called"


def test_log_text_cannot_close_the_data_block() -> None:
    session = make_session([Message("u1", "user", "text", EVIL)], title=EVIL)
    page = session_html(session)
    assert page.count("</script>") == 2  # the data block's and the code block's own
    assert "<img" not in page
    assert "<!--" not in page
    assert "&lt;/script&gt;" in page.split("<title>")[1]  # the title is escaped markup
    data = _data(page)
    assert data["nodes"][0]["b"][0]["x"] == EVIL  # and the text survives exactly
    assert embed_json({"a": "<&>"}) == '{"a":"\\u003c\\u0026\\u003e"}'


def test_the_page_is_self_contained() -> None:
    page = session_html(make_session([Message("u1", "user", "text", "hi")]))
    assert "Content-Security-Policy" in page
    assert "default-src 'none'" in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "{{" not in page.split('id="session-data">')[0]


def test_placeholders_in_log_text_are_not_expanded() -> None:
    page = session_html(
        make_session([Message("u1", "user", "text", "{{CSS}} {{JS}}")], title="{{DATA}}")
    )
    assert "<title>{{DATA}}</title>" in page
    assert _data(page)["nodes"][0]["b"][0]["x"] == "{{CSS}} {{JS}}"


def test_secrets_are_redacted_unless_asked_and_huge_blocks_are_cut() -> None:
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
    msgs = [
        Message("u1", "user", "text", f"my key is {key}"),
        Message("t1", "tool", "tool_result", "x" * (MAX_BLOCK_CHARS + 500)),
    ]
    session = make_session(msgs)
    data = _data(session_html(session))
    assert key not in data["nodes"][0]["b"][0]["x"]
    assert data["redacted"] == 1
    assert key in _data(session_html(session, redact=False))["nodes"][0]["b"][0]["x"]
    cut = data["nodes"][1]["b"][0]["x"]
    assert len(cut) < MAX_BLOCK_CHARS + 100
    assert "500 characters omitted" in cut


def test_claude_sub_agent_spans_are_noted(fixtures: Path) -> None:
    session = open_session(
        [fixtures / "claude-code" / "scout" / "agent_session.jsonl"], WarningSink()
    )
    noted = [n for n in report_data(session)["nodes"] if "sa" in n]
    assert [(n["id"], n["sa"]) for n in noted] == [("agent-002#1", [{"name": "Explore", "n": 5}])]
