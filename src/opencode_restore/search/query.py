"""Queries on the search index: parsing, BM25 ranking, snippets.

A query is words (all must match), ``"a phrase"``, ``prefix*`` and field filters:
``agent:X``, ``cwd:X`` (the directory, one under it, or its last part), ``file:X``
(sessions that touched a file matching X), ``kind:error|decision|command|...`` and
``since:2026-11-01`` (or a span: ``7d``). Every word is quoted before it reaches FTS5,
so no query text is FTS5 syntax: a bad query is a `QueryError` (one line), never an
SQLite error.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import RestoreError, UsageError
from ..since import SinceError, parse_since
from ..store.db import iso_utc
from ..store.store import cwd_clause
from .rows import KINDS

#: Where a snippet's matched terms start and end (front ends make them bold or <mark>).
MARK_START, MARK_END = "\x02", "\x03"
#: The most hits one query returns.
MAX_LIMIT = 1000
#: Tokens around the match a snippet shows.
SNIPPET_TOKENS = 16
FIELDS = ("agent", "cwd", "file", "kind", "since")

# A token: "a phrase" (maybe unterminated), field:"quoted value", field:value, or a word.
_TOKEN = re.compile(r'(?:(\w+):)?(?:"([^"]*)("?)|(\S*))')
_WORDLIKE = re.compile(r"\w")


class QueryError(UsageError):
    """A query that cannot be run, said on one line."""


class IndexUnusable(RestoreError):
    """The index file cannot be read (``index --rebuild`` makes it again)."""

    exit_code = 2

    def __init__(self, path: Path, exc: BaseException) -> None:
        super().__init__(
            f"{path}: cannot read the search index ({exc}); run: opencode-restore index --rebuild"
        )


@dataclass(frozen=True, slots=True)
class Hit:
    """One matching row: ``label`` is ``"M22"`` (None for a restoration section that
    cites nothing), ``time`` ISO text or None, ``score`` BM25 (lower is better)."""

    session_id: str
    agent: str
    cwd: str | None
    time: str | None
    label: str | None
    kind: str
    role: str | None
    snippet: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the snippet as plain text and its matched spans as
        ``highlights``, ``[start, end]`` character offsets into it."""
        plain, spans = split_marks(self.snippet)
        return {
            "session_id": self.session_id,
            "agent": self.agent,
            "cwd": self.cwd,
            "time": self.time,
            "label": self.label,
            "kind": self.kind,
            "role": self.role,
            "snippet": plain,
            "highlights": spans,
            "score": self.score,
        }


def split_marks(snippet: str) -> tuple[str, list[list[int]]]:
    """``snippet`` without its markers, and the ``[start, end]`` spans they wrapped."""
    out: list[str] = []
    spans: list[list[int]] = []
    pos = 0
    start: int | None = None
    for ch in snippet:
        if ch == MARK_START:
            start = pos
        elif ch == MARK_END:
            if start is not None and pos > start:
                spans.append([start, pos])
            start = None
        else:
            out.append(ch)
            pos += 1
    return "".join(out), spans


@dataclass(slots=True)
class Parsed:
    """A parsed query: the FTS5 expression of its words, and its filters."""

    match: str | None
    agent: str | None = None
    cwd: str | None = None
    file: str | None = None
    kinds: frozenset[str] | None = None
    since: datetime | None = None


def _phrase(text: str, prefix: bool = False) -> str | None:
    """``text`` as one FTS5 string (quotes doubled), or None when it holds no word."""
    if not _WORDLIKE.search(text):
        return None
    return '"' + text.replace('"', '""') + '"' + ("*" if prefix else "")


def _kinds(value: str) -> frozenset[str]:
    kinds = frozenset(k.strip().lower() for k in value.split(",") if k.strip())
    unknown = sorted(kinds - KINDS)
    if unknown or not kinds:
        raise QueryError(f"kind:{value}: unknown kind; give one of {', '.join(sorted(KINDS))}")
    return kinds


def parse(query: str) -> Parsed:
    """Parse ``query`` (see the module's doc); raises `QueryError`."""
    terms: list[str] = []
    parsed = Parsed(None)
    for m in _TOKEN.finditer(query):
        field, quoted, closed, bare = m.group(1), m.group(2), m.group(3), m.group(4)
        if quoted is not None and not closed:
            raise QueryError(f"unterminated quote in query: {m.group(0)!r}")
        if field is not None and field.lower() not in FIELDS:
            # Not a filter (a URL, "note:"): the whole token is words.
            quoted, bare, field = None, m.group(0), None
        value = quoted if quoted is not None else bare
        assert value is not None
        if field is None and not value:
            continue  # the empty match between tokens
        if field is None:
            prefix = quoted is None and value.endswith("*")
            term = _phrase(value.rstrip("*") if prefix else value, prefix)
            if term is not None:
                terms.append(term)
            continue
        name = field.lower()
        if not value:
            raise QueryError(f"{name}: needs a value (e.g. {name}:X)")
        if name == "agent":
            parsed.agent = value
        elif name == "cwd":
            parsed.cwd = value
        elif name == "file":
            parsed.file = value
        elif name == "kind":
            parsed.kinds = _kinds(value)
        else:
            try:
                parsed.since = parse_since(value, "since:").cutoff()
            except SinceError as exc:
                raise QueryError(str(exc)) from None
    parsed.match = " AND ".join(terms) if terms else None
    if parsed.match is None and parsed.file is None:
        raise QueryError(f"{query!r}: give at least one word to search for")
    return parsed


def search(
    index_path: Path,
    query: str,
    *,
    agent: str | None = None,
    cwd: str | None = None,
    since: datetime | None = None,
    kinds: frozenset[str] | None = None,
    limit: int = 20,
    offset: int = 0,
) -> list[Hit]:
    """The rows matching ``query`` best first (BM25), with the filters of the query and
    of the arguments (both apply). A missing index has no hits; raises `QueryError`."""
    parsed = parse(query)
    if kinds is not None:
        bad = sorted(kinds - KINDS)
        if bad:
            raise QueryError(f"unknown kind {bad[0]!r}; give one of {', '.join(sorted(KINDS))}")
        parsed.kinds = kinds if parsed.kinds is None else parsed.kinds & kinds
    limit = max(0, min(limit, MAX_LIMIT))
    if not index_path.is_file() or limit == 0:
        return []
    where: list[str] = []
    args: list[Any] = []
    for value in (agent, parsed.agent):
        if value is not None:
            where.append("s.agent = ?")
            args.append(value)
    for value in (cwd, parsed.cwd):
        if value is not None:
            clause, more = cwd_clause(value)
            where.append(clause)
            args.extend(more)
    for cutoff in (since, parsed.since):
        if cutoff is not None:
            where.append("e.time >= ?")
            args.append(iso_utc(cutoff))
    if parsed.kinds is not None:
        where.append(f"e.kind IN ({','.join('?' * len(parsed.kinds))})")
        args.extend(sorted(parsed.kinds))
    match = parsed.match
    if parsed.file is not None:
        file_phrase = _phrase(parsed.file)
        if file_phrase is None:
            raise QueryError(f"file:{parsed.file}: give a file name or path")
        if match is None:
            match = file_phrase
            where.append("e.kind = 'file'")
        else:
            where.append(
                "e.sid IN (SELECT f.sid FROM entries f JOIN docs d ON d.rowid = f.id"
                " WHERE d.docs MATCH ? AND f.kind = 'file')"
            )
            args.append(file_phrase)
    sql = (
        "SELECT s.id, s.agent, s.cwd, e.time, e.label, e.kind, e.role,"
        f" snippet(docs, 0, char(2), char(3), '…', {SNIPPET_TOKENS}), bm25(docs)"
        " FROM docs JOIN entries e ON e.id = docs.rowid JOIN sessions s ON s.sid = e.sid"
        " WHERE docs MATCH ?"
        + "".join(f" AND {w}" for w in where)
        + " ORDER BY bm25(docs) LIMIT ? OFFSET ?"
    )
    try:
        conn = sqlite3.connect(index_path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            rows = conn.execute(sql, [match, *args, limit, max(0, offset)]).fetchall()
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        if "fts5" in str(exc):
            raise QueryError(f"{query!r}: cannot search for this ({exc})") from None
        raise IndexUnusable(index_path, exc) from None
    except sqlite3.DatabaseError as exc:
        raise IndexUnusable(index_path, exc) from None
    return [
        Hit(sid, ag, cw, t, None if lab is None else f"M{lab}", kind, role, snip, float(score))
        for sid, ag, cw, t, lab, kind, role, snip, score in rows
    ]
