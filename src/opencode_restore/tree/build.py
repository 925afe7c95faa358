"""Building a ``SessionTree``: from pi's entries, or from any session's timeline.

pi files hold the real tree (every entry, labels and settings included), so a pi
session is re-read through ``sources.pi.tree``. Other agents' readers already resolved their
trees into the timeline: the root span is the active path and each ``branch`` span
an abandoned branch hanging off ``branched_from``; one message becomes one node.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..diagnostics import WarningSink
from ..fields import parse_timestamp
from ..model import Message, Session, TimelineEvent, TimelineSpan
from ..sources.pi import reader as pi_source
from ..sources.pi import tree as pi_tree
from .core import SessionTree, TreeNode


def tree_of(session: Session, sink: WarningSink | None = None) -> SessionTree:
    """The tree of ``session``: pi's own entries for pi, the timeline's branches otherwise."""
    if session.agent == "pi" and session.files:
        return pi_file_tree([Path(f) for f in session.files], sink or WarningSink())
    return timeline_tree(session)


def pi_file_tree(files: Sequence[Path], sink: WarningSink) -> SessionTree:
    """Every entry of a pi chain (forks repeat their parent's path: first copy wins).

    The leaf is the last file's leaf; labels are replayed across the whole chain.
    """
    nodes: dict[str, TreeNode] = {}
    label_entries: list[pi_tree.PiEntry] = []
    leaf_id: str | None = None
    order = 0
    for file_index, path in enumerate(files):
        pi = pi_tree.load(path, sink)
        by_id = pi_tree.index_by_id(pi, sink)
        for entry in pi.entries:
            order += 1
            if by_id.get(entry.id) is not entry or entry.id in nodes:
                continue
            if entry.type == "label":
                label_entries.append(entry)
            nodes[entry.id] = TreeNode(
                id=entry.id,
                parent_id=entry.parent_id,
                kind=entry.type,
                order=order,
                messages=pi_source.entry_messages(entry, file_index, sink, path),
                timestamp=parse_timestamp(entry.data.get("timestamp")),
                data=entry.data,
            )
        leaf = pi_tree.leaf_of(pi, by_id)
        leaf_id = leaf.id if leaf is not None else leaf_id
    for target, label in pi_tree.resolve_labels(label_entries).items():
        node = nodes.get(target)
        if node is not None:
            node.label = label
            for m in node.messages[:1]:
                m.meta["label"] = label
    return SessionTree(list(nodes.values()), leaf_id)


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
