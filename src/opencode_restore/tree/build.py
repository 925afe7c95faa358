"""Building a ``SessionTree``: from a format's own entries, or from any session's timeline.

Some formats (pi) hold the real tree in their files (every entry, labels and settings
included): their reader is a ``TreeReader`` and the session is re-read through it. Other
agents' readers already resolved their trees into the timeline: the root span is the
active path and each ``branch`` span an abandoned branch hanging off ``branched_from``;
one message becomes one node.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..diagnostics import WarningSink
from ..model import Message, Session, TimelineEvent, TimelineSpan
from ..sources import get_reader, reader_names
from ..sources.base import TreeReader
from .core import SessionTree, TreeNode


def tree_of(session: Session, sink: WarningSink | None = None) -> SessionTree:
    """The tree of ``session``: its files' own entries where the format keeps them.

    Otherwise the tree its timeline holds.
    """
    reader = get_reader(session.agent) if session.agent in reader_names() else None
    if isinstance(reader, TreeReader) and session.files:
        return file_tree(reader, [Path(f) for f in session.files], sink or WarningSink())
    return timeline_tree(session)


def file_tree(reader: TreeReader, files: Sequence[Path], sink: WarningSink) -> SessionTree:
    """Every entry of a chain whose files keep the whole tree, as ``reader`` reads them."""
    entries, leaf_id = reader.entry_tree(files, sink)
    nodes = [
        TreeNode(
            id=e.id,
            parent_id=e.parent_id,
            kind=e.kind,
            order=e.order,
            messages=e.messages,
            timestamp=e.timestamp,
            label=e.label,
            data=e.data,
        )
        for e in entries
    ]
    return SessionTree(nodes, leaf_id)


def _kind(m: Message) -> str:
    if m.type == "compaction":
        return "compaction"
    if m.type == "summary" and (
        m.meta.get("from_id") or m.meta.get("summary_of") == "branchSummary"
    ):
        return "branch_summary"
    return "message"


def timeline_tree(session: Session) -> SessionTree:
    """The tree held by a session's timeline: one node per message.

    A branch span's first message hangs off ``branched_from`` when that is a known
    message, else off the message before the span. Other child spans (sub-agents,
    side chains) ride along with the message before them.
    """
    nodes: dict[str, TreeNode] = {}
    head_spans: list[TimelineSpan] = []
    leaf_id: str | None = None
    work: list[tuple[TimelineSpan, str | None]] = [(session.timeline.root, None)]
    first = True
    while work:
        span, prev = work.pop()
        pending: list[tuple[TimelineSpan, str | None]] = []
        for item in span.content:
            if isinstance(item, TimelineEvent):
                if item.message is None:
                    continue
                node = _node(item.message, prev, len(nodes), nodes)
                nodes[node.id] = node
                prev = node.id
            elif item.span_type == "branch":
                fork = item.branched_from if item.branched_from in nodes else prev
                pending.append((item, fork))
            elif prev is not None:
                nodes[prev].spans.append(item)
            else:
                head_spans.append(item)
        if first:
            leaf_id, first = prev, False
        work.extend(reversed(pending))
    tree = SessionTree(list(nodes.values()), leaf_id)
    tree.head_spans = head_spans
    return tree


def _node(m: Message, parent: str | None, order: int, nodes: dict[str, TreeNode]) -> TreeNode:
    node_id = m.id
    n = 1
    while node_id in nodes:  # ids are unique per reader; never let a repeat merge two nodes
        node_id = f"{m.id}~{n}"
        n += 1
    return TreeNode(
        id=node_id,
        parent_id=parent,
        kind=_kind(m),
        order=order,
        messages=[m],
        timestamp=m.timestamp,
        label=m.meta.get("label") if isinstance(m.meta.get("label"), str) else None,
    )
