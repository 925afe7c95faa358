"""The conversation tree of a Claude Code chain: the live path, rewind branches, side chains.

``uuid``/``parentUuid`` form a tree. Three things make it less simple than it looks:

* a compact boundary has ``parentUuid: null``; its real predecessor is
  ``logicalParentUuid`` (unless that entry was re-parented under the summary as part
  of a preserved tail, which would close a loop);
* a restart writes a new parentless entry; it continues the story so far;
* not every fork is a rewind: parallel tool calls leave tool results (and hook
  progress) hanging off earlier lines of the same response. A fork is an abandoned
  branch only when the side subtree holds a line typed by a person.

The live path is the path to the newest conversation entry; the side subtrees that
are not rewinds are folded back into it.

A damaged log can make the links loop (an entry that is its own parent, parents
written after their children, repeated uuids, a logical parent under its own
boundary). Loops are cut once, while the parent map is built, each with a warning;
every walk after ``build_tree``'s cuts sees a forest and needs no loop guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...diagnostics import WarningSink
from .line import NOISE, PROMPT
from .scan import NO_PARENT, Scan

#: Deeper rewind nesting than this is folded into its parent branch.
_MAX_DEPTH = 64
_FLIP = bytes([1, 0]) + bytes(254)


@dataclass(slots=True)
class Layout:
    """One span's entries: the conversation entries in order, and the branches leaving it."""

    active: list[int] = field(default_factory=list)
    #: (fork entry or NO_PARENT, the abandoned branch's own layout)
    branches: list[tuple[int, Layout]] = field(default_factory=list)


@dataclass(slots=True)
class Tree:
    """The resolved tree: the main conversation and the old-style interleaved side chains."""

    main: Layout
    side_runs: list[Layout]
    #: False when the file held only side-chain lines (a sub-agent's own file).
    has_main: bool


def build_tree(
    s: Scan, files: Sequence[Path], sink: WarningSink, with_side_runs: bool = True
) -> Tree:
    """Resolve parents (loops, boundaries, restarts) and lay out the main conversation.

    Every parent loop is cut, and reported through ``sink`` with its file and line.
    """
    n = len(s.uuids)
    has_main = s.main_messages > 0
    parent = s.parent
    if has_main:
        in_main = bytearray(bytes(s.side).translate(_FLIP))
        if 1 in s.side:  # a link between a side chain and the main line is not a parent
            for i in range(n):
                p = parent[i]
                if p >= 0 and in_main[p] != in_main[i]:
                    parent[i] = NO_PARENT
                    _make_root(s, in_main, i)
    else:
        # A sub-agent's own file is all side chain: read it as the main conversation.
        in_main = bytearray(b"\x01") * n
    # Loops in the links as written; an entry cut out of one continues the story
    # like any restart. ``_attach_boundaries`` walks parents, so it needs a forest.
    for cut in _cut_loops(parent):
        _warn_loop(s, files, sink, cut)
        _make_root(s, in_main, cut[0])
    _attach_boundaries(s, in_main)
    _attach_restarts(s, in_main, has_main)
    # A restart can close a loop through a link that points forward in the file;
    # such a cut entry stays a plain root (attaching it again could loop again).
    for cut in _cut_loops(parent):
        _warn_loop(s, files, sink, cut)
    members: Sequence[int] = range(n) if not has_main or 1 not in s.side else _main_ids(in_main)
    main = _layout(s, members, None, 0)
    runs: list[Layout] = []
    if has_main and with_side_runs and 1 in s.side:
        runs = [_layout(s, m, None, 0) for m in _side_runs(s, in_main)]
    return Tree(main, runs, has_main)


def _main_ids(in_main: bytearray) -> list[int]:
    return [i for i, v in enumerate(in_main) if v]


def _descends_from(parent: list[int], node: int, ancestor: int) -> bool:
    while node >= 0:
        if node == ancestor:
            return True
        node = parent[node]
    return False


def _attach_boundaries(s: Scan, in_main: bytearray) -> None:
    parent, index = s.parent, s.index
    for b, info in s.boundaries.items():
        if parent[b] != NO_PARENT or info.logical_parent is None:
            continue
        lp = index.get(info.logical_parent)
        if lp is None or in_main[lp] != in_main[b]:
            continue
        if not _descends_from(parent, lp, b):
            parent[b] = lp
            continue
        # The logical parent was re-parented under this compaction's summary (a
        # preserved tail): continue from the last preserved entry still before it.
        before = NO_PARENT
        for u in info.preserved:
            node = index.get(u)
            if node is None:
                continue
            if _descends_from(parent, node, b):
                break
            before = node
        parent[b] = before


def _make_root(s: Scan, in_main: bytearray, i: int) -> None:
    """Make ``i`` a restart: it will continue from the newest conversation entry before it."""
    kind = s.kind
    j = i - 1
    while j >= 0 and not (kind[j] and in_main[j] == in_main[i]):
        j -= 1
    s.roots[i] = (j, j)


def _cut_loops(parent: list[int]) -> list[tuple[int, int, int]]:
    """Cut every parent loop; returns (entry, its former parent, loop length) per cut.

    Each loop loses the link of its oldest entry, which always points at or after that
    entry in the file: the oldest entry becomes the loop's root.
    """
    # Parents strictly before their children cannot loop: skip the walk in the common case.
    if not any(p >= i for i, p in enumerate(parent)):
        return []
    cuts: list[tuple[int, int, int]] = []
    state = bytearray(len(parent))  # 0 new, 1 on the current walk, 2 done
    for start in range(len(parent)):
        path: list[int] = []
        node = start
        while node >= 0 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = parent[node]
        if node >= 0 and state[node] == 1:
            loop = path[path.index(node) :]
            oldest = min(loop)
            cuts.append((oldest, parent[oldest], len(loop)))
            parent[oldest] = NO_PARENT
        for x in path:
            state[x] = 2
    return cuts


def _warn_loop(
    s: Scan, files: Sequence[Path], sink: WarningSink, cut: tuple[int, int, int]
) -> None:
    entry, former, length = cut
    fi, line = s.where(entry)
    uid = s.uuids[entry]
    if length == 1:
        what = f"entry {uid} is its own parent"
    else:
        what = f"parent loop of {length} entries: {uid} -> {s.uuids[former]} leads back to {uid}"
    sink.warn(files[fi], line, f"{what}; link cut, read as a new start")


def _attach_restarts(s: Scan, in_main: bytearray, has_main: bool) -> None:
    """A parentless entry continues from the newest conversation entry before it."""
    parent = s.parent
    for r, (before_main, before_any) in s.roots.items():
        before = before_main if has_main else before_any
        if parent[r] == NO_PARENT and in_main[r] and before != NO_PARENT:
            parent[r] = before


def _side_runs(s: Scan, in_main: bytearray) -> list[list[int]]:
    """Group interleaved side-chain entries by their root (one run per sub-agent call)."""
    parent = s.parent
    root_of: dict[int, int] = {}
    runs: dict[int, list[int]] = {}
    for i in range(len(parent)):
        if in_main[i]:
            continue
        p = parent[i]
        r = root_of.get(p, i) if p >= 0 else i
        root_of[i] = r
        runs.setdefault(r, []).append(i)
    return [m for m in runs.values() if any(s.kind[i] != NOISE for i in m)]


def _layout(s: Scan, members: Sequence[int], top: int | None, depth: int) -> Layout:
    """Lay out the subtree made of ``members`` (entry ids in file order) rooted at ``top``."""
    kind, parent = s.kind, s.parent
    newest = next((i for i in reversed(members) if kind[i] != NOISE), None)
    if newest is None:
        return Layout()
    spine: set[int] = set()
    node = newest
    while node >= 0:
        spine.add(node)
        if node == top:
            break
        node = parent[node]
    on_spine: list[int] = []
    side_root: dict[int, int] = {}
    groups: dict[int, list[int]] = {}
    rewinds: set[int] = set()
    for i in members:
        if i in spine:
            if kind[i]:
                on_spine.append(i)
            continue
        p = parent[i]
        if p < 0 or p in spine or i == top:
            r = i
        else:
            r = side_root.get(p, -1)
            if r < 0:
                r = _side_root(parent, spine, side_root, i, top)
        side_root[i] = r
        group = groups.get(r)
        if group is None:
            groups[r] = [i]
        else:
            group.append(i)
        if kind[i] == PROMPT:
            rewinds.add(r)
    if depth >= _MAX_DEPTH:
        rewinds.clear()
    folded = [i for r, g in groups.items() if r not in rewinds for i in g if kind[i]]
    out = Layout(sorted(on_spine + folded) if folded else on_spine)
    for r in sorted(rewinds):
        out.branches.append((parent[r], _layout(s, groups[r], r, depth + 1)))
    return out


def _side_root(
    parent: list[int], spine: set[int], memo: dict[int, int], node: int, top: int | None
) -> int:
    """The entry where ``node``'s subtree leaves the spine (memoized along the walk)."""
    path: list[int] = []
    while True:
        if node in memo:
            root = memo[node]
            break
        path.append(node)
        p = parent[node]
        if p < 0 or p in spine or node == top:
            root = node
            break
        node = p
    for x in path:
        memo[x] = root
    return root
