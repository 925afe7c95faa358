"""The pi coding agent's session tree: parse, migrate (in memory), index, walk, rebuild context.

A pi session file is a header line (``type: "session"``) followed by entries. Since
version 2 every entry has an ``id`` and a ``parentId``, so one file holds a tree: the
conversation the user sees is the path from the root to the *leaf* (by default the
last entry written), and other subtrees are abandoned branches. Version 1 files are
linear and carry no ids; they are migrated here, in memory only (the user's file is
never rewritten), the same way pi does on load: v1 -> v2 gives ids and parent links
and turns ``firstKeptEntryIndex`` into ``firstKeptEntryId``; v2 -> v3 renames the
message role ``hookMessage`` to ``custom``.

Everything here works on raw entry dicts and knows nothing about the unified model,
so the reader, a tree API and a branch exporter can share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...diagnostics import WarningSink
from ..base import iter_json_lines

#: The session format version pi writes today; files are migrated up to it.
CURRENT_VERSION = 3

#: Entry types whose content reaches the model (``buildSessionContext``).
CONTEXT_TYPES = frozenset({"message", "custom_message", "branch_summary"})


@dataclass(slots=True)
class PiEntry:
    """One non-header entry: its (migrated) JSON object and where it came from."""

    data: dict[str, Any]
    #: 1-based line number in the file.
    line: int
    #: Position in the file's list of JSON objects, header included (header = 0).
    index: int

    @property
    def id(self) -> str:
        value = self.data.get("id")
        return value if isinstance(value, str) else ""

    @property
    def parent_id(self) -> str | None:
        value = self.data.get("parentId")
        return value if isinstance(value, str) else None

    @property
    def type(self) -> str:
        value = self.data.get("type")
        return value if isinstance(value, str) else ""


@dataclass(slots=True)
class PiFile:
    """A parsed session file: header, entries in file order, and the version as read."""

    path: Path
    header: dict[str, Any] | None
    entries: list[PiEntry]
    #: The format version found in the file, before any migration.
    version: int


@dataclass(slots=True)
class PiContext:
    """What the model saw at a leaf: the context entries and the settings in force.

    When ``compaction`` is set, ``entries[0]`` is that compaction entry and stands
    for its summary message; the kept and later entries follow.
    """

    entries: list[PiEntry]
    compaction: PiEntry | None = None
    #: ``(provider, modelId)`` of the last model change or assistant reply on the path.
    model: tuple[str, str] | None = None
    thinking_level: str = "off"


@dataclass(slots=True)
class PiBranch:
    """An abandoned branch: a path hanging off ``from_id`` (``None``: a second root)."""

    from_id: str | None
    entries: list[PiEntry]
    branches: list[PiBranch] = field(default_factory=list)


def parse_file(path: Path, sink: WarningSink) -> PiFile:
    """Stream a session file into a header and entries, reporting and skipping bad lines."""
    header: dict[str, Any] | None = None
    entries: list[PiEntry] = []
    index = -1
    for lineno, obj in iter_json_lines(path, sink):
        index += 1
        kind = obj.get("type")
        if index == 0 and kind == "session":
            header = obj
            continue
        if index == 0:
            sink.warn(path, lineno, "first line is not a pi session header")
        if not isinstance(kind, str):
            sink.warn(path, lineno, "entry has no string 'type'; skipped")
            continue
        if kind == "session":
            sink.warn(path, lineno, "second session header; skipped")
            continue
        entries.append(PiEntry(obj, lineno, index))
    if header is not None:
        version = header.get("version", 1)
    else:
        # pi refuses a file without a header; we read it, guessing the version from ids.
        has_ids = bool(entries) and isinstance(entries[0].data.get("id"), str)
        version = CURRENT_VERSION if has_ids else 1
    if not isinstance(version, int) or isinstance(version, bool):
        sink.warn(path, 1, f"header version {version!r} is not an integer; read as v1")
        version = 1
    return PiFile(path, header, entries, version)


def v1_entry_id(index: int) -> str:
    """The id given to the v1 entry at ``index``: 8 hex digits, stable across reads.

    pi draws random ids; deriving them from the entry's position keeps message ids
    the same every time an unmigrated file is read.
    """
    return f"{index:08x}"


def migrate_v1_to_v2(entries: Sequence[PiEntry]) -> None:
    """Give v1 entries ids and a linear parent chain; resolve ``firstKeptEntryIndex``."""
    by_index = {e.index: e for e in entries}
    prev: str | None = None
    for e in entries:
        e.data["id"] = v1_entry_id(e.index)
        e.data["parentId"] = prev
        prev = e.data["id"]
    for e in entries:
        if e.type != "compaction" or "firstKeptEntryIndex" not in e.data:
            continue
        kept = e.data.pop("firstKeptEntryIndex")
        # The index counts the header line; index 0 is the header, never an entry.
        target = by_index.get(kept) if isinstance(kept, int) else None
        if target is not None:
            e.data["firstKeptEntryId"] = target.id


def migrate_v2_to_v3(entries: Iterable[PiEntry]) -> None:
    """Rename the message role ``hookMessage`` to ``custom``."""
    for e in entries:
        message = e.data.get("message")
        if (
            e.type == "message"
            and isinstance(message, dict)
            and message.get("role") == "hookMessage"
        ):
            message["role"] = "custom"


def migrate(pi: PiFile) -> bool:
    """Bring ``pi`` up to the current version in memory; True if anything changed."""
    if pi.version >= CURRENT_VERSION:
        return False
    if pi.version < 2:
        migrate_v1_to_v2(pi.entries)
    migrate_v2_to_v3(pi.entries)
    if pi.header is not None:
        pi.header["version"] = CURRENT_VERSION
    return True


def load(path: Path, sink: WarningSink) -> PiFile:
    """Parse and migrate a session file; entries without an id are reported and dropped."""
    pi = parse_file(path, sink)
    migrate(pi)
    kept = []
    for e in pi.entries:
        if e.id:
            kept.append(e)
        else:
            sink.warn(path, e.line, f"{e.type} entry has no string 'id'; skipped")
    pi.entries = kept
    return pi


def index_by_id(pi: PiFile, sink: WarningSink | None = None) -> dict[str, PiEntry]:
    """Map entry id to entry; a repeated id keeps the later entry (as pi's index does)."""
    by_id: dict[str, PiEntry] = {}
    for e in pi.entries:
        if e.id in by_id and sink is not None:
            sink.warn(pi.path, e.line, f"duplicate entry id {e.id!r}; the later entry wins")
        by_id[e.id] = e
    return by_id


def leaf_of(pi: PiFile, by_id: dict[str, PiEntry], leaf: str | None = None) -> PiEntry | None:
    """The chosen leaf entry, else the last entry written (pi's default leaf)."""
    if leaf is not None and leaf in by_id:
        return by_id[leaf]
    return pi.entries[-1] if pi.entries else None


def path_to_root(by_id: dict[str, PiEntry], leaf: PiEntry | None) -> list[PiEntry]:
    """The entries from the root down to ``leaf``; an unknown parent ends the walk."""
    path: list[PiEntry] = []
    seen: set[str] = set()
    current = leaf
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)
        parent = current.parent_id
        current = by_id.get(parent) if parent is not None else None
    path.reverse()
    return path


def active_path(pi: PiFile, leaf: str | None = None) -> list[PiEntry]:
    """Root-to-leaf path of the active (or chosen) leaf."""
    by_id = index_by_id(pi)
    return path_to_root(by_id, leaf_of(pi, by_id, leaf))


def _model_of(entry: PiEntry) -> tuple[str, str] | None:
    data = entry.data
    if entry.type == "model_change":
        provider, model = data.get("provider"), data.get("modelId")
    elif entry.type == "message" and isinstance(data.get("message"), dict):
        message = data["message"]
        if message.get("role") != "assistant":
            return None
        provider, model = message.get("provider"), message.get("model")
    else:
        return None
    if isinstance(model, str) and model:
        return (provider if isinstance(provider, str) else "", model)
    return None


def _in_context(entry: PiEntry) -> bool:
    if entry.type == "branch_summary":
        return bool(entry.data.get("summary"))
    return entry.type in CONTEXT_TYPES


def build_context(path: Sequence[PiEntry]) -> PiContext:
    """The model-visible context at the end of ``path`` (pi's ``buildSessionContext``).

    Only the latest compaction on the path counts: its summary comes first, then the
    entries from its ``firstKeptEntryId`` up to it, then everything after it.
    Settings entries, labels and extension state never reach the model.
    """
    ctx = PiContext(entries=[])
    compaction_at = -1
    for i, e in enumerate(path):
        if e.type == "thinking_level_change" and isinstance(e.data.get("thinkingLevel"), str):
            ctx.thinking_level = e.data["thinkingLevel"]
        elif e.type == "compaction":
            compaction_at = i
        model = _model_of(e)
        if model is not None:
            ctx.model = model
    if compaction_at < 0:
        ctx.entries = [e for e in path if _in_context(e)]
        return ctx
    compaction = path[compaction_at]
    ctx.compaction = compaction
    first_kept = compaction.data.get("firstKeptEntryId")
    before = path[:compaction_at]
    start = next((i for i, e in enumerate(before) if e.id == first_kept), len(before))
    kept = [e for e in before[start:] if _in_context(e)]
    after = [e for e in path[compaction_at + 1 :] if _in_context(e)]
    ctx.entries = [compaction, *kept, *after]
    return ctx


def resolve_labels(entries: Iterable[PiEntry]) -> dict[str, str]:
    """Target id -> label after replaying every ``label`` entry (no label clears it)."""
    labels: dict[str, str] = {}
    for e in entries:
        if e.type != "label" or not isinstance(e.data.get("targetId"), str):
            continue
        label = e.data.get("label")
        if isinstance(label, str) and label:
            labels[e.data["targetId"]] = label
        else:
            labels.pop(e.data["targetId"], None)
    return labels


def children_of(pi: PiFile, by_id: dict[str, PiEntry]) -> dict[str | None, list[PiEntry]]:
    """Parent id -> children in file order; entries with an unknown parent are roots."""
    children: dict[str | None, list[PiEntry]] = {}
    for e in pi.entries:
        if by_id.get(e.id) is not e:
            continue  # shadowed by a later entry with the same id
        parent = e.parent_id if e.parent_id in by_id else None
        children.setdefault(parent, []).append(e)
    return children


def _latest_in_subtree(root: PiEntry, children: dict[str | None, list[PiEntry]]) -> PiEntry:
    # No cycle guard needed: a cycle's members are nobody else's children, so a walk
    # down from a node outside the cycle never enters it.
    latest, stack = root, [root]
    while stack:
        node = stack.pop()
        if node.index > latest.index:
            latest = node
        stack.extend(children.get(node.id, ()))
    return latest


def abandoned_branches(pi: PiFile, path: Sequence[PiEntry]) -> list[PiBranch]:
    """The subtrees off ``path``, each shown along its own latest leaf, nested likewise.

    A branch hangs off the path entry it forked from (``from_id``); within a branch,
    the path runs from its first entry to the entry written last in that subtree, and
    whatever forks off that path becomes a nested branch. Entries caught in a parent
    cycle are unreachable from any root and appear nowhere.
    """
    by_id = index_by_id(pi)
    children = children_of(pi, by_id)
    top: list[PiBranch] = []
    # (spine, where its branches go, whether roots other than the spine's hang here)
    work: list[tuple[Sequence[PiEntry], list[PiBranch], bool]] = [(path, top, True)]
    while work:
        spine, out, with_roots = work.pop()
        on_spine = {e.id for e in spine}
        anchors: list[str | None] = [None] if with_roots else []
        anchors.extend(e.id for e in spine)
        for anchor in anchors:
            for child in children.get(anchor, ()):
                if child.id in on_spine:
                    continue
                leaf = _latest_in_subtree(child, children)
                sub = path_to_root(by_id, leaf)
                sub = sub[next(i for i, e in enumerate(sub) if e.id == child.id) :]
                branch = PiBranch(anchor, sub)
                out.append(branch)
                work.append((sub, branch.branches, False))
    return top
