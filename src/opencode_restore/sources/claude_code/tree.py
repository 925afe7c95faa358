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

from array import array
from collections.abc import MutableSequence, Sequence
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

    active: array[int] = field(default_factory=lambda: array("i"))
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


def _descends_from(parent: Sequence[int], node: int, ancestor: int, backward: bool) -> bool:
    """True when ``ancestor`` is on ``node``'s path to its root. ``backward``: every link
    points at an earlier entry, so the walk stops once it is before ``ancestor`` (a long
    log's walk from each boundary to the root made the tree quadratic)."""
    while node >= 0:
        if node == ancestor:
            return True
        if backward and node < ancestor:
            return False
        node = parent[node]
    return False


def _attach_boundaries(s: Scan, in_main: bytearray) -> None:
    parent, find = s.parent, s.uuids.get
    backward = not any(p >= i for i, p in enumerate(parent))
    for b, info in s.boundaries.items():
        if parent[b] != NO_PARENT or info.logical_parent is None:
            continue
        lp = find(info.logical_parent)
        if lp < 0 or in_main[lp] != in_main[b]:
            continue
        if not _descends_from(parent, lp, b, backward):
            parent[b] = lp
            backward = backward and lp < b
            continue
        # The logical parent was re-parented under this compaction's summary (a
        # preserved tail): continue from the last preserved entry still before it.
        before = NO_PARENT
        for u in info.preserved:
            node = find(u)
            if node < 0:
                continue
            if _descends_from(parent, node, b, backward):
                break
            before = node
        parent[b] = before
        backward = backward and before < b


def _make_root(s: Scan, in_main: bytearray, i: int) -> None:
    """Make ``i`` a restart: it will continue from the newest conversation entry before it."""
    kind = s.kind
    j = i - 1
    while j >= 0 and not (kind[j] and in_main[j] == in_main[i]):
        j -= 1
    s.roots[i] = (j, j)


def _cut_loops(parent: MutableSequence[int]) -> list[tuple[int, int, int]]:
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


def _layout(
    s: Scan, members: Sequence[int], top: int | None, depth: int, marks: _Marks | None = None
) -> Layout:
    """Lay out the subtree made of ``members`` (entry ids in file order) rooted at ``top``."""
    kind, parent = s.kind, s.parent
    newest = next((i for i in reversed(members) if kind[i] != NOISE), None)
    if newest is None:
        return Layout()
    if marks is None:
        marks = _Marks(len(parent))
    on, root, touched = marks.on, marks.root, marks.touched
    _mark_spine(parent, on, newest, top, 1)
    rewinds: set[int] = set()
    for i in members:
        if on[i]:
            continue
        p = parent[i]
        if p < 0 or on[p] or i == top:
            r = i
        else:
            r = root[p]
            if r < 0:
                r = _side_root(parent, marks, i, top)
        root[i] = r
        touched.append(i)
        if kind[i] == PROMPT:
            rewinds.add(r)
    if depth >= _MAX_DEPTH:
        rewinds.clear()
    # Members are in file order, so the kept ones come out in order: no sort.
    active: array[int] = array("i")
    keep = active.append
    groups: dict[int, array[int]] = {r: array("i") for r in rewinds}
    for i in members:
        if on[i]:
            if kind[i]:
                keep(i)
        elif (r := root[i]) in groups:
            groups[r].append(i)
        elif kind[i]:
            keep(i)
    _mark_spine(parent, on, newest, top, 0)
    for i in touched:
        root[i] = -1
    del touched[:]
    out = Layout(active)
    for r in sorted(rewinds):
        out.branches.append((parent[r], _layout(s, groups[r], r, depth + 1, marks)))
    return out


class _Marks:
    """Per-entry scratch space of `_layout`, shared by the nested layouts and cleared
    after each use: one byte and one int per entry (sets and dicts of entry ids took
    ~70 bytes per entry of the log)."""

    __slots__ = ("on", "root", "touched")

    def __init__(self, n: int) -> None:
        #: 1 on the spine being laid out
        self.on = bytearray(n)
        #: where an entry's side subtree leaves the spine (-1: not known yet)
        self.root: array[int] = array("i", [-1]) * n
        #: the entries whose ``root`` is set
        self.touched: array[int] = array("i")


def _mark_spine(
    parent: Sequence[int], on: bytearray, newest: int, top: int | None, flag: int
) -> None:
    """Set ``on`` to ``flag`` along the path from ``newest`` up to ``top`` (or a root)."""
    node = newest
    while node >= 0:
        on[node] = flag
        if node == top:
            break
        node = parent[node]


def _side_root(parent: Sequence[int], marks: _Marks, node: int, top: int | None) -> int:
    """The entry where ``node``'s subtree leaves the spine (memoized along the walk)."""
    on, memo = marks.on, marks.root
    path: list[int] = []
    while True:
        if memo[node] >= 0:
            root = memo[node]
            break
        path.append(node)
        p = parent[node]
        if p < 0 or on[p] or node == top:
            root = node
            break
        node = p
    for x in path:
        memo[x] = root
    marks.touched.extend(path)
    return root
