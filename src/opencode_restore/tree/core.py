"""The session tree: every entry of a branched session, by id, with its children.

A session is a tree when the agent can rewind or branch (pi's ``/tree``, Claude
Code's rewind). The conversation a person saw last is the path from a root to the
*leaf*; the other subtrees are abandoned branches. ``SessionTree`` answers the
questions seed 002 asks of pi's ``SessionManager`` (``getEntry``, ``getLeafEntry``,
``getBranch``, ``getTree``, ``getLabel``) for any agent, read-only.

Walks are iterative: a tree is as deep as its session is long.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..model import Message, TimelineSpan


@dataclass(slots=True, eq=False)
class TreeNode:
    """One entry of the tree: a pi entry, or one message of another agent's log.

    Compared by identity: an entry is one place in one tree, and a field-by-field
    comparison made every ``node in parent.children`` test cost the siblings' messages
    (10,000 sibling branches took minutes to print).
    """

    id: str
    parent_id: str | None
    #: ``message``, ``compaction``, ``branch_summary``, or a pi entry type.
    kind: str
    #: Position in the session's files, for "written last" decisions.
    order: int
    messages: list[Message] = field(default_factory=list)
    timestamp: datetime | None = None
    label: str | None = None
    children: list[TreeNode] = field(default_factory=list)
    #: Sub-agent or side-chain spans that followed this entry in the timeline.
    spans: list[TimelineSpan] = field(default_factory=list)
    #: The raw entry (pi only), for writing it back to a session file.
    data: dict[str, Any] | None = None

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(slots=True)
class Branch:
    """A subtree off a path: its own path (to its latest leaf) and nested branches."""

    #: The entry on the parent path it forked from (None: a second root).
    from_id: str | None
    nodes: list[TreeNode]
    branches: list[Branch] = field(default_factory=list)

    @property
    def leaf(self) -> TreeNode:
        return self.nodes[-1]

    def walk(self) -> Iterator[Branch]:
        """This branch and every nested one, depth first."""
        stack = [self]
        while stack:
            b = stack.pop()
            yield b
            stack.extend(reversed(b.branches))


class SessionTree:
    """All entries of a session, indexed by id, with the active leaf."""

    def __init__(self, nodes: list[TreeNode], leaf_id: str | None) -> None:
        self.nodes: dict[str, TreeNode] = {}
        for n in nodes:
            self.nodes[n.id] = n
        self.roots: list[TreeNode] = []
        #: Entries whose link to their parent was cut to break a parent loop.
        self._cut: set[str] = set()
        for n in self.nodes.values():
            parent = self.nodes.get(n.parent_id) if n.parent_id is not None else None
            if parent is None or parent is n:
                self.roots.append(n)
            else:
                parent.children.append(n)
        self._break_cycles()
        self.leaf_id = leaf_id if leaf_id in self.nodes else self._last_id()
        #: Sub-agent spans that came before any message (carried over on re-layout).
        self.head_spans: list[TimelineSpan] = []
        self._by_message: dict[str, str] | None = None

    def _last_id(self) -> str | None:
        return max(self.nodes.values(), key=lambda n: n.order).id if self.nodes else None

    def _break_cycles(self) -> None:
        # Entries in a parent loop are nobody's descendants from a root: make the
        # loop's earliest-written entry a root so every entry stays reachable.
        reached = {n.id for n, _ in self.iter_dfs()}
        for n in sorted(self.nodes.values(), key=lambda n: n.order):
            if n.id in reached:
                continue
            parent = self.nodes.get(n.parent_id or "")
            if parent is not None and n in parent.children:
                parent.children.remove(n)
                self._cut.add(n.id)
            self.roots.append(n)
            reached.update(x.id for x, _ in self._dfs_from([n]))

    # -- lookups -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.nodes)

    def get(self, entry_id: str) -> TreeNode | None:
        """The entry with this id, or the entry holding the message with this id."""
        node = self.nodes.get(entry_id)
        if node is not None:
            return node
        if self._by_message is None:
            self._by_message = {m.id: n.id for n in self.nodes.values() for m in n.messages}
        owner = self._by_message.get(entry_id)
        return self.nodes[owner] if owner is not None else None

    @property
    def leaf(self) -> TreeNode | None:
        """The active leaf: the entry the session's conversation ends at."""
        return self.nodes.get(self.leaf_id) if self.leaf_id is not None else None

    @property
    def labels(self) -> dict[str, str]:
        """Entry id -> label, for every labelled entry."""
        return {n.id: n.label for n in self.nodes.values() if n.label}

    def find_label(self, name: str) -> TreeNode | None:
        """The entry carrying label ``name`` (the latest written, if several do)."""
        found = [n for n in self.nodes.values() if n.label == name]
        return max(found, key=lambda n: n.order) if found else None

    def path(self, entry_id: str | None = None) -> list[TreeNode]:
        """Root-to-entry path (default: to the leaf); empty for an unknown id."""
        start = self.get(entry_id) if entry_id is not None else self.leaf
        out: list[TreeNode] = []
        seen: set[str] = set()
        node = start
        while node is not None and node.id not in seen:
            seen.add(node.id)
            out.append(node)
            node = self.nodes.get(node.parent_id) if node.parent_id is not None else None
            if node is not None and out[-1].id in self._cut:
                break  # the link was cut to break a parent loop
        out.reverse()
        return out

    def latest_leaf(self, entry_id: str) -> TreeNode | None:
        """The entry written last in the subtree under ``entry_id`` (itself if a leaf)."""
        root = self.get(entry_id)
        if root is None:
            return None
        return max((n for n, _ in self._dfs_from([root])), key=lambda n: n.order)

    # -- the whole tree ------------------------------------------------------------

    def iter_dfs(self) -> Iterator[tuple[TreeNode, int]]:
        """Every reachable entry with its depth, children in the order they were written."""
        return self._dfs_from(self.roots)

    @staticmethod
    def _dfs_from(starts: list[TreeNode]) -> Iterator[tuple[TreeNode, int]]:
        stack = [(n, 0) for n in reversed(starts)]
        while stack:
            node, depth = stack.pop()
            yield node, depth
            stack.extend((c, depth + 1) for c in reversed(node.children))

    def leaves(self) -> list[TreeNode]:
        """Every entry without children, in the order written."""
        return sorted((n for n in self.nodes.values() if n.is_leaf), key=lambda n: n.order)

    def branch_points(self) -> list[TreeNode]:
        """Entries with more than one child: where the conversation forked."""
        return sorted(
            (n for n in self.nodes.values() if len(n.children) > 1), key=lambda n: n.order
        )

    def branch_summaries(self) -> list[TreeNode]:
        """The session's own summaries of abandoned branches."""
        return [n for n in self.nodes.values() if n.kind == "branch_summary"]

    def compactions(self) -> list[TreeNode]:
        """Compaction entries, in the order written."""
        return [n for n in self.nodes.values() if n.kind == "compaction"]

    def abandoned(self, leaf_id: str | None = None) -> list[Branch]:
        """The subtrees off the path to ``leaf_id`` (default: the leaf), nested.

        Each branch runs from its first entry to the entry written last in it, and
        whatever forks off that run is a nested branch (as pi's tree view shows it).
        """
        spine = self.path(leaf_id)
        top: list[Branch] = []
        work: list[tuple[list[TreeNode], list[Branch], bool]] = [(spine, top, True)]
        while work:
            nodes, out, with_roots = work.pop()
            on_spine = {n.id for n in nodes}
            anchors: list[tuple[str | None, list[TreeNode]]] = []
            if with_roots:
                anchors.append((None, self.roots))
            anchors.extend((n.id, n.children) for n in nodes)
            for anchor, children in anchors:
                for child in children:
                    if child.id in on_spine:
                        continue
                    last = self.latest_leaf(child.id)
                    assert last is not None  # child is in the tree
                    sub = self.path(last.id)
                    sub = sub[next(i for i, n in enumerate(sub) if n.id == child.id) :]
                    branch = Branch(anchor, sub)
                    out.append(branch)
                    work.append((sub, branch.branches, False))
        return top
