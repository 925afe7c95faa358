"""Files given as one session's chain must be one session (or one continued).

``restore a.jsonl b.jsonl`` reads the files as one session, oldest first. Two logs of
different sessions read that way would be summarized as one made-up conversation, so
they are refused unless the user asks for it (``--merge``). A session continued in a new
file (a resumed or forked Claude Code session, a forked pi session, a resumed Codex
rollout) is one chain: each format's reader says what its files record about that
(``ChainReader.chain_link``), read from the first lines (and, for Claude Code, the last).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

from ..errors import SourceError

#: How much of a file's head (and tail) the links are read from.
HEAD_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class ChainLink:
    """What a file records about the session it belongs to."""

    #: The session id the file records (None: it names none; such a file is never refused).
    session_id: str | None
    #: Names a later file may point back to this one by (entry ids, slug, file name).
    names: frozenset[str] = field(default_factory=frozenset)
    #: What this file points back to: the session, entry or file it continues.
    points_to: frozenset[str] = field(default_factory=frozenset)


@runtime_checkable
class ChainReader(Protocol):
    """A reader that can tell whether two of its files are one session continued."""

    def chain_link(self, path: Path) -> ChainLink:
        """What ``path`` records about its session, from a bounded read."""
        ...


def continues(earlier: ChainLink, later: ChainLink) -> bool:
    """True when ``later`` is the same session as ``earlier`` or says it continues it."""
    if earlier.session_id is None or later.session_id is None:
        return True
    if earlier.session_id == later.session_id:
        return True
    return bool(later.points_to & (earlier.names | {earlier.session_id}))


def check_chain(paths: Sequence[Path], reader: object) -> None:
    """Refuse a chain whose files carry different sessions that do not continue each other.

    One line names both files and both ids, and how to read them together anyway.
    """
    if len(paths) < 2 or not isinstance(reader, ChainReader):
        return
    links = [reader.chain_link(p) for p in paths]
    for (a, la), (b, lb) in zip(
        zip(paths, links, strict=True), zip(paths[1:], links[1:], strict=True), strict=False
    ):
        if not continues(la, lb):
            raise SourceError(
                str(b),
                f"holds session {lb.session_id}, but {a} holds session {la.session_id}"
                " and neither continues the other; pass --merge to read them as one",
            )


def head_objects(path: Path, limit: int = HEAD_BYTES) -> Iterator[dict[str, Any]]:
    """The JSON objects of the complete lines in the first ``limit`` bytes of ``path``."""
    data = _read(path, 0, limit)
    yield from _objects(data, cut_first=False, cut_last=len(data) >= limit)


def tail_objects(path: Path, limit: int = HEAD_BYTES) -> Iterator[dict[str, Any]]:
    """The JSON objects of the complete lines in the last ``limit`` bytes of ``path``."""
    try:
        size = path.stat().st_size
    except OSError:
        return
    data = _read(path, max(0, size - limit), limit)
    yield from _objects(data, cut_first=size > limit, cut_last=False)


def _read(path: Path, start: int, limit: int) -> bytes:
    try:
        with path.open("rb") as fh:
            fh.seek(start)
            return fh.read(limit)
    except OSError:
        return b""


def _objects(data: bytes, cut_first: bool, cut_last: bool) -> Iterator[dict[str, Any]]:
    lines = data.split(b"\n")
    if cut_first:
        lines = lines[1:]  # starts mid-line
    if cut_last:
        lines = lines[:-1]  # ends mid-line
    for raw in lines:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def text_values(objs: Iterator[dict[str, Any]] | list[dict[str, Any]], *keys: str) -> set[str]:
    """Every non-empty string found under ``keys`` in ``objs``."""
    out: set[str] = set()
    for obj in objs:
        for key in keys:
            value = obj.get(key)
            if isinstance(value, str) and value:
                out.add(value)
    return out
