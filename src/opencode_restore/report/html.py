"""The HTML report: one self-contained page with the session tree, the log and the summary.

The page is ``templates/report.html`` with its CSS and JS inlined and the session
embedded as JSON in a ``<script type="application/json">`` block. Log text never
becomes markup: every ``<``, ``>`` and ``&`` in the JSON is written as a ``\\u`` escape
(so nothing in a log can close the script block), and the page's script builds the
DOM with ``textContent`` only. A Content-Security-Policy forbids any network access.

The script renders lazily (a window of the shown path, the sidebar in pages), so a
20,000-message session opens as fast as a small one.
"""

from __future__ import annotations

import html
import re
from importlib import resources
from typing import Any

import orjson

from ..llm.usage import OFFLINE_NOTE, is_offline
from ..model import Message, Session
from ..pipeline.restoration import Restoration
from ..redact import Redactor
from ..tree import SessionTree, TreeNode, tree_of
from .summary import summary_markdown

#: Longest text kept per block; a longer one is cut in the middle, with a marker.
MAX_BLOCK_CHARS = 60_000

_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}
_PLACEHOLDER = re.compile(r"\{\{(TITLE|CSS|JS|DATA)\}\}")


def _cap(text: str) -> str:
    if len(text) <= MAX_BLOCK_CHARS:
        return text
    half = MAX_BLOCK_CHARS // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[… {cut} characters omitted from this report …]\n{text[-half:]}"


def _iso(node: TreeNode | Message) -> str | None:
    return node.timestamp.isoformat() if node.timestamp is not None else None


class _Payload:
    """Turns tree nodes into the compact JSON the page reads."""

    def __init__(self, redactor: Redactor | None) -> None:
        self.redactor = redactor

    def text(self, text: str) -> str:
        text = _cap(text)
        return self.redactor.redact(text) if self.redactor is not None else text

    def block(self, m: Message) -> dict[str, Any]:
        b: dict[str, Any] = {"m": m.id, "r": m.role, "t": m.type, "x": self.text(m.text)}
        if m.tool_name:
            b["n"] = m.tool_name
        if m.is_error:
            b["e"] = 1
        if m.meta.get("synthetic"):
            b["s"] = 1
        if m.compaction is not None and m.compaction.tokens_before:
            b["tb"] = m.compaction.tokens_before
        if m.timestamp is not None:
            b["ts"] = m.timestamp.isoformat()
        return b

    def note(self, node: TreeNode) -> str | None:
        """A one-line description of an entry that is not conversation (pi settings)."""
        d = node.data or {}
        if node.kind == "model_change":
            return f"model → {d.get('provider') or ''}/{d.get('modelId') or ''}"
        if node.kind == "thinking_level_change":
            return f"thinking level → {d.get('thinkingLevel')}"
        if node.kind == "label":
            label = d.get("label")
            return f"label {label!r} on {d.get('targetId')}" if label else "label cleared"
        if node.kind == "session_info":
            return f"session name → {d.get('name')}"
        if node.kind == "custom":
            return f"extension state ({d.get('customType')})"
        return None

    def node(self, node: TreeNode, parent: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": node.id,
            "p": parent,
            "k": node.kind,
            "o": node.order,
            "b": [self.block(m) for m in node.messages],
        }
        if node.label:
            out["l"] = node.label
        if node.timestamp is not None:
            out["ts"] = _iso(node)
        note = self.note(node)
        if note:
            out["x"] = self.text(note)
        if node.spans:
            out["sa"] = [{"name": s.name, "n": len(s.messages())} for s in node.spans]
        return out


def report_data(
    session: Session,
    tree: SessionTree | None = None,
    restoration: Restoration | None = None,
    *,
    redact: bool = True,
) -> dict[str, Any]:
    """The page's data: session facts, the tree in depth-first order, the summary.

    Nodes are listed parents first; ``p`` is the parent's position (-1 for a root).
    """
    tree = tree if tree is not None else tree_of(session)
    payload = _Payload(Redactor() if redact else None)
    nodes: list[dict[str, Any]] = []
    last_at_depth: list[int] = []
    for node, depth in tree.iter_dfs():
        del last_at_depth[depth:]
        nodes.append(payload.node(node, last_at_depth[-1] if last_at_depth else -1))
        last_at_depth.append(len(nodes) - 1)
    selected = session.meta.get("selected_leaf")
    leaf = selected if isinstance(selected, str) and selected in tree.nodes else tree.leaf_id
    data: dict[str, Any] = {
        "title": payload.text(session.title or session.id),
        "agent": session.agent,
        "session": session.id,
        "cwd": session.cwd,
        "started": session.started_at.isoformat() if session.started_at else None,
        "files": session.files,
        "leaf": leaf,
        "nodes": nodes,
        "warnings": [str(w) for w in session.warnings[:200]],
        "summary": None,
        "refs": {},
        "redacted": payload.redactor.count if payload.redactor is not None else None,
    }
    if restoration is not None:
        data["summary"] = summary_markdown(restoration, references=True)
        data["refs"] = {r.label: r.message_id for r in restoration.references}
        data["provider"] = restoration.provider
        # What the page's header says: the model, or that none was called.
        data["summarized_by"] = (
            OFFLINE_NOTE if is_offline(restoration.provider) else restoration.provider
        )
    return data


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def markdown_script() -> str:
    """The summary's markdown renderer (``templates/markdown.js``): one script defining
    ``renderMarkdown``, inlined in this report and served to the web viewer."""
    return _asset("markdown.js")


def embed_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` appears raw."""
    return orjson.dumps(data).decode().translate(_ESCAPES)


def render_html(data: dict[str, Any]) -> str:
    """The self-contained page for ``report_data``'s output."""
    parts = {
        "TITLE": html.escape(str(data.get("title") or "session"), quote=True),
        "CSS": _asset("report.css"),
        "JS": markdown_script() + "\n" + _asset("report.js"),
        "DATA": embed_json(data),
    }
    # One pass: text put in by a placeholder is never scanned for more placeholders.
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _asset("report.html"))


def session_html(
    session: Session,
    restoration: Restoration | None = None,
    *,
    tree: SessionTree | None = None,
    redact: bool = True,
) -> str:
    """The HTML report of ``session``, with the SESSION SUMMARY when ``restoration`` is given."""
    return render_html(report_data(session, tree, restoration, redact=redact))
