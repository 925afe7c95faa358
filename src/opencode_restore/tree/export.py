"""``export-branch``: the path to one leaf of a session, written as a new session file.

A format that keeps the whole tree in its files (pi) writes the branch through its
reader (pi's ``createBranchedSession``). A Claude Code transcript is filtered line by line: the
lines on the path to the leaf and their raw ancestors stay, lines of other branches
go, and lines that belong to no branch (metadata, side chains) are kept as they are.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from ..atomic import SESSION_FILE_MODE, atomic_write
from ..diagnostics import WarningSink
from ..errors import UsageError
from ..sources import get_reader, reader_names
from ..sources.base import TreeReader, iter_json_lines
from .build import timeline_tree


def export_branch(source: Path, agent: str, leaf: str, dest: Path, *, force: bool = False) -> int:
    """Write the root-to-``leaf`` path of ``source`` to ``dest``; the number of entries kept."""
    if dest.exists() and not force:
        raise UsageError(f"{dest} exists; pass --force to overwrite it")
    if dest.resolve() == source.resolve():
        raise UsageError("the output file must not be the session file itself")
    reader = get_reader(agent) if agent in reader_names() else None
    if isinstance(reader, TreeReader):
        return reader.export_branch(source, leaf, dest)
    if agent == "claude-code":
        return _export_claude(source, leaf, dest)
    raise UsageError(f"export-branch writes pi and claude-code sessions, not {agent}")


def _line_uuid(message_id: str) -> str:
    # A line with several content blocks gives messages "<uuid>#<k>".
    return message_id.split("#", 1)[0]


def _export_claude(source: Path, leaf: str, dest: Path) -> int:
    sink = WarningSink()
    session = get_reader("claude-code").read([source], sink)
    tree = timeline_tree(session)
    node = tree.get(leaf)
    if node is None:
        raise UsageError(f"no entry or message with id {leaf!r} in {source}")
    keep = {_line_uuid(m.id) for n in tree.path(node.id) for m in n.messages}
    parents: dict[str, list[str]] = {}
    for _, obj in iter_json_lines(source, sink):
        uid = obj.get("uuid")
        if isinstance(uid, str):
            parents[uid] = [
                p
                for p in (obj.get("parentUuid"), obj.get("logicalParentUuid"))
                if isinstance(p, str)
            ]
    stack = list(keep)
    while stack:  # raw ancestors too: a resumed file must still link up
        for p in parents.get(stack.pop(), ()):
            if p not in keep:
                keep.add(p)
                stack.append(p)
    kept = 0

    def lines() -> Iterator[bytes]:
        nonlocal kept
        with source.open("rb") as fh:
            for raw in fh:
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(obj, dict):
                    continue
                uid = obj.get("uuid")
                if isinstance(uid, str) and uid not in keep and obj.get("isSidechain") is not True:
                    continue
                kept += 1
                yield raw if raw.endswith(b"\n") else raw + b"\n"

    atomic_write(dest, lines(), mode=SESSION_FILE_MODE)
    return kept
