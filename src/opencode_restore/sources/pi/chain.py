"""Whether two pi files are one session continued (``sources.chain``).

A forked or branched pi session is a new file whose header names its parent file
(``parentSession``: the parent's path).
"""

from __future__ import annotations

from pathlib import Path

from ..chain import ChainLink, head_objects


def chain_link(path: Path) -> ChainLink:
    """The session id in ``path``'s header and the parent file it names."""
    header = next(head_objects(path, 64 * 1024), {})
    sid = header.get("id") if header.get("type") == "session" else None
    parent = header.get("parentSession")
    points = {parent, Path(parent).name} if isinstance(parent, str) and parent else set()
    return ChainLink(
        sid if isinstance(sid, str) and sid else None,
        names=frozenset({str(path), str(path.resolve()), path.name}),
        points_to=frozenset(points),
    )
