"""Choosing a branch: the session as it would read with another leaf active.

``select_branch`` re-lays the timeline around the chosen leaf: the root span holds
the path to it, and every other subtree becomes a ``branch`` span right after the
entry it forked from (as the readers lay out the default leaf), so the restore
pipeline needs no knowledge of trees.
"""

from __future__ import annotations

from dataclasses import replace

from ..diagnostics import WarningSink
from ..errors import UsageError
from ..model import EventKind, Session, TimelineEvent, TimelineSpan
from .build import tree_of
from .core import Branch, SessionTree, TreeNode


class BranchNotFoundError(UsageError):
    """``--leaf`` or ``--label`` named nothing in the session."""


def resolve_leaf(tree: SessionTree, leaf: str | None = None, label: str | None = None) -> TreeNode:
    """The entry named by ``leaf`` (an entry or message id) or ``label``; default the leaf.

    ``leaf`` is taken exactly (it may be mid-conversation, like pi's ``branch(id)``);
    a label names a branch, so ``label`` follows it down to its latest entry.
    """
    if label is not None:
        node = tree.find_label(label)
        if node is None:
            known = ", ".join(sorted(set(tree.labels.values()))) or "none"
            raise BranchNotFoundError(f"no entry is labelled {label!r} (labels: {known})")
        latest = tree.latest_leaf(node.id)
        assert latest is not None  # node is in the tree
        return latest
    if leaf is not None:
        node = tree.get(leaf)
        if node is None:
            raise BranchNotFoundError(f"no entry or message with id {leaf!r} in the session")
        return node
    if tree.leaf is None:
        raise BranchNotFoundError("the session has no entries")
    return tree.leaf


def _events(node: TreeNode) -> list[TimelineEvent | TimelineSpan]:
    out: list[TimelineEvent | TimelineSpan] = []
    for m in node.messages:
        kind: EventKind = "compaction" if m.type == "compaction" else "message"
        out.append(TimelineEvent(m.id, kind, m, compaction=m.compaction, timestamp=m.timestamp))
    out.extend(node.spans)
    return out


def _branch_span(tree: SessionTree, branch: Branch) -> TimelineSpan:
    first = branch.nodes[0]
    return TimelineSpan(
        id=f"branch:{first.id}",
        name=first.label or f"branch {first.id}",
        span_type="branch",
        branched_from=branch.from_id,
        meta={"leaf_id": branch.leaf.id},
    )


def layout(tree: SessionTree, path: list[TreeNode]) -> list[TimelineEvent | TimelineSpan]:
    """Timeline content for ``path`` with every other subtree as a nested branch span."""
    top: list[TimelineEvent | TimelineSpan] = list(tree.head_spans)
    work: list[tuple[list[TreeNode], list[Branch], list[TimelineEvent | TimelineSpan]]] = [
        (path, tree.abandoned(path[-1].id) if path else [], top)
    ]
    while work:
        nodes, branches, out = work.pop()
        forks: dict[str | None, list[Branch]] = {}
        for b in branches:
            forks.setdefault(b.from_id, []).append(b)
        for node in (None, *nodes):
            if node is not None:
                out.extend(_events(node))
            for b in forks.get(node.id if node is not None else None, ()):
                span = _branch_span(tree, b)
                out.append(span)
                work.append((b.nodes, b.branches, span.content))
    return top


def session_at(session: Session, tree: SessionTree, node: TreeNode) -> Session:
    """``session`` re-laid with ``node`` as its leaf."""
    root = session.timeline.root
    new_root = TimelineSpan(
        id=root.id,
        name=root.name,
        span_type=root.span_type,
        content=layout(tree, tree.path(node.id)),
        utility=root.utility,
        meta=dict(root.meta),
    )
    meta = dict(session.meta)
    meta["leaf_id"] = node.id
    if node.id != tree.leaf_id:
        meta["selected_leaf"] = node.id
        meta["session_leaf"] = tree.leaf_id
    return replace(session, timeline=replace(session.timeline, root=new_root), meta=meta)


def select_branch(
    session: Session,
    leaf: str | None = None,
    label: str | None = None,
    tree: SessionTree | None = None,
) -> Session:
    """The session read along another branch: to entry ``leaf`` or the one labelled ``label``.

    With neither, the session is returned as read (the active branch).
    Raises ``BranchNotFoundError`` when the id or label names nothing.
    """
    if leaf is None and label is None:
        return session
    tree = tree if tree is not None else tree_of(session, WarningSink())
    return session_at(session, tree, resolve_leaf(tree, leaf, label))
