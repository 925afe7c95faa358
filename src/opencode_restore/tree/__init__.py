"""The Tree API over any session with branches (pi trees, Claude Code and Gemini rewinds).

``tree_of(session)`` gives a ``SessionTree``: entries by id, the leaf, the path from any
entry to the root, the whole tree with labels, branch points, branch summaries and
compactions. ``select_branch`` re-reads a session along another leaf.
"""

from .build import file_tree, timeline_tree, tree_of
from .core import Branch, SessionTree, TreeNode
from .select import BranchNotFoundError, resolve_leaf, select_branch, session_at

__all__ = [
    "Branch",
    "BranchNotFoundError",
    "SessionTree",
    "TreeNode",
    "file_tree",
    "resolve_leaf",
    "select_branch",
    "session_at",
    "timeline_tree",
    "tree_of",
]
