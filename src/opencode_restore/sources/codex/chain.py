"""Whether two Codex files are one session continued (``sources.chain``).

A rollout records its thread id in its ``session_meta`` line (``codex exec --json``: the
``thread.started`` event; the legacy format: the first line's ``id``). A resumed or forked
rollout starts with the history it continues, ``session_meta`` lines of the earlier
thread included, and may name it (``forked_from_id``).
"""

from __future__ import annotations

from pathlib import Path

from ..chain import ChainLink, head_objects


def chain_link(path: Path) -> ChainLink:
    """The thread ``path`` records and the threads it continues (its first lines)."""
    ids: list[str] = []
    points: set[str] = set()
    for n, obj in enumerate(head_objects(path)):
        payload = obj.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        found = None
        if obj.get("type") == "session_meta":
            found = payload.get("id")
            fork = payload.get("forked_from_id")
            if isinstance(fork, str) and fork:
                points.add(fork)
        elif obj.get("type") == "thread.started":
            found = obj.get("thread_id")
        elif n == 0 and "type" not in obj:
            found = obj.get("id")  # the legacy rollout's header line
        if isinstance(found, str) and found:
            ids.append(found)
    own = ids[0] if ids else None
    # The newest session_meta is this file's own thread; earlier ones are copied history.
    if len(ids) > 1:
        own = ids[-1]
    return ChainLink(own, names=frozenset(ids), points_to=frozenset(points | set(ids[:-1])))
