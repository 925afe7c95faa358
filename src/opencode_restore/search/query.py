"""Queries on the search index: parsing, ranking, snippets.

A query is words, ``"a phrase"``, ``prefix*`` and field filters: ``agent:X``, ``cwd:X``
(the directory, one under it, or its last part), ``file:X`` (sessions that touched a file
matching X), ``kind:error|decision|command|...`` and ``since:2026-11-01`` (or a span:
``7d``). A row matches when it holds every phrase and any of the words: what a user
remembers of a session is spread over its messages, so a word missing from one row must
not hide it. English stop words ("where did I ...") are dropped from the words, not from
phrases. Every word is quoted before it reaches FTS5, so no query text is FTS5 syntax: a
bad query is a `QueryError` (one line), never an SQLite error.

Ranking: each row's BM25 (more and rarer words, stems alike: the index's tokenizer is
``porter``) weighted by what the row is (a user's prompt or a restoration's decision above
tool output); a session's score adds its best rows' with decreasing weight, so several
strong rows beat one weak one. Hits come session by session, best session first: the
best row of every session, then their second rows, and so on.
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
import sqlite3
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import RestoreError, UsageError
from ..redact import redact, redact_optional
from ..since import SinceError, parse_since
from ..store.db import iso_utc
from ..store.store import cwd_clause
from .index import CODES, SEQ_BITS, SEQ_MASK, code_range
from .rows import KINDS
from .stopwords import STOP_WORDS

#: Where a snippet's matched terms start and end (front ends make them bold or <mark>).
MARK_START, MARK_END = "\x02", "\x03"
#: The most hits one query returns.
MAX_LIMIT = 1000
#: Tokens around the match a snippet shows.
SNIPPET_TOKENS = 16
FIELDS = ("agent", "cwd", "file", "kind", "since")
#: The best rows a query ranks before it groups them by session (more when paged past):
#: enough for the first pages' sessions to be scored on several rows each; every one
#: more costs the sort and a row handed to Python.
CANDIDATES = 500
#: A session's score: its best rows' BM25, each weighing this much of the one before.
SESSION_DECAY = 0.5
SESSION_ROWS = 5


def weight(kind: str, by_user: bool) -> float:
    """How much the BM25 of a row of ``kind`` weighs (``by_user``: a message the user
    wrote): what the user asked and what a restoration decided say what a session is
    about; tool output and thinking mention everything in passing."""
    if (kind == "message" and by_user) or kind == "decision":
        return 2.0
    if kind == "summary":
        return 1.5
    return 0.5 if kind in ("tool", "thinking") else 1.0


#: FTS5's k1 (``bm25()``'s own): a row's score for one phrase is
#: idf * tf * (K1 + 1) / (tf + K1 * (1 - b + b * length / average length)), below
#: idf * (K1 + 1) whatever tf and the length are.
K1 = 1.2
# A phrase of a match expression as `_phrase` writes it.
_PHRASE = re.compile(r'"(?:[^"]|"")*"\*?')
#: What a ceiling is raised by: more than the rounding of its computation.
_MARGIN = 1 + 1e-9
#: Distinct `ROW_CEILING` values `_read_off` looks at, at most (each a lookup per phrase).
_READ_OFF = 8
#: What a ceiling read off rows is raised by, times the largest sum it came from: far more
#: than the rounding of a few sums and differences (each an ulp, ~1e-16 of it).
_SLACK = 1e-12
#: Words OR-ed a query ranks by which of them a row holds (`_holding`), at most: each
#: set of words is a statement, and each statement scans every match of each word once
#: more for its idf.
_SPLIT_WORDS = 3
_SPLIT_STATEMENTS = 2
#: The share of the sessions a filter on sessions (``agent:``, ``cwd:``, ``file:``,
#: ``since:``) keeps at most for a query to take their rows' ranges (`session_ranges`)
#: rather than look up each match's session and time, and to rank all its weights but the
#: lowest in one statement (`candidates`): at 2,000,000 rows, ``cwd:p3`` (2% of the
#: sessions) 114 -> 82 ms, ``file since:2025-12-01`` (8%) 71 -> 43 ms; but ``test
#: agent:codex`` (20%) 24 -> 113 ms (its prompts alone fill the candidates, and the one
#: statement scores the weights below too), ``file since:2025-06-01`` (58%) 24 -> 89 ms.
RANGES_SHARE = 0.10
#: A range of the rows of sessions a filter keeps (`session_ranges`): the first and last
#: sequence (``rowid & SEQ_MASK``), and the time its rows are still to be checked against
#: (None: every row of the range passes).
Span = tuple[int, int, str | None]
#: What `session_ranges` gives when the filter keeps every row.
EVERY_ROW: list[Span] = [(0, SEQ_MASK, None)]
#: A matched row's BM25 with a weight on its term frequencies so large that each share
#: tf * (K1 + 1) / (tf + K1 * ...) is K1 + 1 to the last bit: the sum of idf * (K1 + 1)
#: over the phrases the row holds.
ROW_CEILING = "-bm25(docs, 1e300)"


# A token: "a phrase" (maybe unterminated), field:"quoted value", field:value, or a word.
_TOKEN = re.compile(r'(?:(\w+):)?(?:"([^"]*)("?)|(\S*))')
_WORDLIKE = re.compile(r"\w")
# Control characters separate words: FTS5 reads its query as a C string, so a NUL inside
# a quoted word ended it there ("unterminated string").
#: Characters of a row's text a hit of a filter-only query shows.
HEAD_CHARS = 240
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


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

    def redacted(self) -> Hit:
        """The hit with its snippet and cwd redacted again, as a front end serves it: the
        index holds redacted text, and this keeps a pattern added since from leaking."""
        return replace(self, snippet=redact(self.snippet)[0], cwd=redact_optional(self.cwd))


def kinds_of(value: str | None) -> frozenset[str] | None:
    """Kinds given comma-separated (an API or MCP parameter); None for every kind."""
    return frozenset(k.strip() for k in (value or "").split(",") if k.strip()) or None


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


def _stop(word: str) -> bool:
    return word.lower().replace("\u2019", "'").strip(".,;:!?()[]{}<>") in STOP_WORDS


def _match(phrases: list[str], words: list[tuple[str, str]]) -> str | None:
    """The FTS5 expression: every phrase, and any word (stop words dropped unless they
    are all the query has). A phrase is in the words' group too, so a row holding both
    ranks above one holding the phrase alone."""
    kept = [term for word, term in words if not _stop(word)]
    if not kept and not phrases:
        kept = [term for _, term in words]
    anyword = " OR ".join(dict.fromkeys([*phrases, *kept]))
    if not phrases:
        return anyword or None
    if not kept:
        return " AND ".join(phrases)
    return " AND ".join(phrases) + f" AND ({anyword})"


def parse(query: str) -> Parsed:
    """Parse ``query`` (see the module's doc); raises `QueryError`."""
    phrases: list[str] = []
    words: list[tuple[str, str]] = []  # (the word as typed, its FTS5 string)
    parsed = Parsed(None)
    for m in _TOKEN.finditer(_CONTROL.sub(" ", query)):
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
            if term is not None and quoted is None:
                words.append((value, term))
            elif term is not None:
                phrases.append(term)
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
    parsed.match = _match(phrases, words)
    filters = (parsed.file, parsed.agent, parsed.cwd, parsed.kinds, parsed.since)
    if parsed.match is None and all(f is None for f in filters):
        raise QueryError(f"{query!r}: give at least one word or filter to search for")
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
    """The rows matching ``query`` best first (see the module's doc), with the filters of
    the query and of the arguments (both apply). A missing index has no hits; raises
    `QueryError`."""
    parsed = parse(query)
    if kinds is not None:
        bad = sorted(kinds - KINDS)
        if bad:
            raise QueryError(f"unknown kind {bad[0]!r}; give one of {', '.join(sorted(KINDS))}")
        parsed.kinds = kinds if parsed.kinds is None else parsed.kinds & kinds
    limit = max(0, min(limit, MAX_LIMIT))
    if not index_path.is_file() or limit == 0:
        return []
    # Clauses on the session (``s``), then on the row's entry (``e``).
    owned: list[str] = []
    owned_args: list[Any] = []
    where: list[str] = []
    args: list[Any] = []
    for value in (agent, parsed.agent):
        if value is not None:
            owned.append("s.agent = ?")
            owned_args.append(value)
    for value in (cwd, parsed.cwd):
        if value is not None:
            clause, more = cwd_clause(value)
            owned.append(clause)
            owned_args.extend(more)
    # Both apply: the later.
    cutoff = max((iso_utc(c) for c in (since, parsed.since) if c is not None), default=None)
    if cutoff is not None:
        where.append("e.time >= ?")
        args.append(cutoff)
    match = parsed.match
    kinds_ranked = parsed.kinds
    if parsed.file is not None:
        file_phrase = _phrase(parsed.file)
        if file_phrase is None:
            raise QueryError(f"file:{parsed.file}: give a file name or path")
        if match is None:
            match = file_phrase
            kinds_ranked = frozenset({"file"}) & (parsed.kinds or KINDS)
        else:
            owned.append(
                "s.sid IN (SELECT f.sid FROM entries f JOIN docs d ON d.rowid = f.id"
                " WHERE d.docs MATCH ? AND f.kind = 'file')"
            )
            owned_args.append(file_phrase)
    if match is None:
        if parsed.kinds is not None:
            where.append(f"e.kind IN ({','.join('?' * len(parsed.kinds))})")
            args.extend(sorted(parsed.kinds))
        clauses = "".join(f" AND {w}" for w in [*owned, *where])
        return _newest(index_path, clauses, [*owned_args, *args], limit, offset)
    codes = [n for n, (kind, _) in enumerate(CODES) if kinds_ranked is None or kind in kinds_ranked]
    try:
        conn = sqlite3.connect(index_path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            ranges = None
            if owned or cutoff is not None:
                ranges = session_ranges(conn, owned, owned_args, cutoff)
            if ranges is None:
                where, args = [*owned, *where], [*owned_args, *args]
            else:
                where, args = [], []  # the ranges hold the time filter too
                if ranges == EVERY_ROW:
                    ranges = None
            k = max(CANDIDATES, offset + limit)
            best = candidates(conn, match, where, args, codes, k, ranges) if ranges != [] else []
            with_sessions = _sessions_of(conn, best)
            page = interleave(with_sessions)[max(0, offset) : max(0, offset) + limit]
            found = _details(conn, match, [row for row, _ in page])
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        if "fts5" in str(exc):
            raise QueryError(f"{query!r}: cannot search for this ({exc})") from None
        raise IndexUnusable(index_path, exc) from None
    except sqlite3.DatabaseError as exc:
        raise IndexUnusable(index_path, exc) from None
    return [
        Hit(sid, ag, cw, t, None if lab is None else f"M{lab}", kind, role, snip, score)
        for row, score in page
        for sid, ag, cw, t, lab, kind, role, snip in (found[row],)
    ]


def candidates(
    conn: sqlite3.Connection,
    match: str,
    where: list[str],
    args: list[Any],
    codes: list[int],
    k: int,
    ranges: list[Span] | None = None,
) -> list[tuple[float, int]]:
    """The ``k`` best ``(score, rowid)`` of the rows matching ``match`` whose code is in
    ``codes``, that pass ``where`` (clauses on ``e``, the row's entry, and ``s``, its
    session) and whose sequence is in one of ``ranges`` (`session_ranges`; None: any),
    best first, ties by rowid: each row's BM25 times its `weight`.

    Exact, and most matches of a common word are never scored: the codes are ranked one
    weight at a time, highest first, and a weight whose best possible score (the sum of `_ceilings`)
    cannot beat the ``k``-th candidate found so far ends the search (every lower weight's
    ceiling is lower still). Scoring is most of a query's cost (FTS5's ``bm25()`` looks up
    the row's length for each match), so ``test``, in one row of six, is scored on the
    user's messages alone when enough of them match well.
    """
    best: list[tuple[float, int]] = []
    ceilings: list[float] | None = None
    join = " JOIN entries e ON e.id = docs.rowid JOIN sessions s ON s.sid = e.sid" if where else ""
    where_sql = "".join(f" AND {w}" for w in where)
    if ranges is not None:
        # A temporary table (a read-only index allows one): a seek in a few pages per
        # match, where the sessions' clauses cost a lookup in ``entries`` and ``sessions``.
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS ranges (lo INTEGER PRIMARY KEY, hi INTEGER, since)"
        )
        conn.execute("DELETE FROM temp.ranges")
        conn.executemany("INSERT INTO temp.ranges VALUES (?, ?, ?)", ranges)
        seq = f"(docs.rowid & {SEQ_MASK})"
        if all(since is None for *_, since in ranges):
            where_sql += (
                f" AND (SELECT r.hi FROM temp.ranges r WHERE r.lo <= {seq}"
                f" ORDER BY r.lo DESC LIMIT 1) >= {seq}"
            )
        else:
            # A session that began before the time and ended after it: its rows' own time
            # (a lookup in ``entries`` for those few sessions' matches alone).
            where_sql += (
                f" AND (SELECT CASE WHEN r.hi < {seq} THEN 0 WHEN r.since IS NULL THEN 1"
                " ELSE (SELECT e.time FROM entries e WHERE e.id = docs.rowid) >= r.since END"
                f" FROM temp.ranges r WHERE r.lo <= {seq} ORDER BY r.lo DESC LIMIT 1)"
            )
    phrases = _PHRASE.findall(match)
    # A match's BM25 with an overwhelming weight on its term frequencies is the sum of the
    # ceilings of the phrases it holds: read off the rows ranked anyway, it spares
    # `_ceilings` a scan of each phrase's every match. One phrase: every match holds it.
    single = len(phrases) == 1
    seen: dict[float, int] = {}
    groups = _by_weight(_present(conn, codes))
    if ranges is not None and len(groups) > 2:
        # The few sessions' rows of the highest weight seldom fill the candidates, and a
        # statement more is a scan of every match more (a prefix* expanded twice): all
        # but the lowest weight are ranked at once.
        groups = [(groups[0][0], sorted(c for _, own in groups[:-1] for c in own)), groups[-1]]
    for factor, group in groups:
        matches = [match]
        if len(best) >= k:
            if ceilings is None:
                ceilings = _ceilings(conn, match, seen)
            # BM25 is negative, lower better: nothing of this weight can come below it.
            if -factor * sum(ceilings) >= best[-1][0]:
                break
            matches = _holding(match, phrases, ceilings, best[-1][0] / -factor)
        lo, hi = code_range(group[0])[0], code_range(group[-1])[1]
        only = (
            ""
            if len(group) == group[-1] - group[0] + 1
            else (f" AND (docs.rowid >> {SEQ_BITS}) IN ({','.join(map(str, group))})")
        )
        sql = (
            f"SELECT bm25(docs) * {_factor_sql(group)} AS score, docs.rowid, {ROW_CEILING}"
            f" FROM docs{join}"
            f" WHERE docs MATCH ? AND docs.rowid BETWEEN ? AND ?{only}{where_sql}"
            " ORDER BY score, docs.rowid LIMIT ?"
        )
        for expression in matches:
            found = conn.execute(sql, [expression, lo, hi, *args, k]).fetchall()
            if single and found and ceilings is None:
                ceilings = [float(found[0][2]) * _MARGIN]
            elif expression == match and ceilings is None:
                for _, rowid, value in found:
                    seen.setdefault(value, rowid)
            best = heapq.nsmallest(k, [*best, *((score, rowid) for score, rowid, *_ in found)])
    return best


def _holding(match: str, phrases: list[str], ceilings: list[float], bound: float) -> list[str]:
    """The expressions that find, among the matches of ``match``, every row whose BM25
    (as a positive number, unweighted) can exceed ``bound``: ``match`` itself, or, when
    ``match`` is words OR-ed and a row holding only some of them cannot (``ceilings``:
    each phrase's), one expression for each set of the words that can, matching the rows
    holding exactly those (``"a" AND "b"``, ``"a" NOT "b"``). Such a row's BM25 is the
    same as by ``match``: each phrase's share is added in the order of ``match``, and a
    phrase the row does not hold adds exactly 0 wherever it stands.

    Two common words (``git status``): the rows of weight 1 holding one of them cannot
    beat the prompts found, and FTS5 finds those holding both without scoring the rest.
    """
    if len(phrases) < 2 or " OR ".join(phrases) != match or len(phrases) > _SPLIT_WORDS:
        return [match]
    sets = [
        mask
        for mask in range(1, 1 << len(phrases))
        if sum(c for n, c in enumerate(ceilings) if mask >> n & 1) > bound
    ]
    if len(sets) > _SPLIT_STATEMENTS:
        return [match]
    out = []
    for mask in sets:
        held = " AND ".join(p for n, p in enumerate(phrases) if mask >> n & 1)
        absent = " OR ".join(p for n, p in enumerate(phrases) if not mask >> n & 1)
        out.append(f"({held}) NOT ({absent})" if absent else held)
    return out


def session_ranges(
    conn: sqlite3.Connection,
    owned: list[str],
    args: list[Any],
    since: str | None = None,
    share: float | None = None,
) -> list[Span] | None:
    """The rows of the sessions that pass ``owned`` (clauses on ``s``, the session) and
    ``since`` (a row's time at or after it) as ranges of their sequence (``rowid &
    SEQ_MASK``: a session's rows are inserted together, so mostly one range each), from
    each session's span (see ``search.index._insert``): a session whose last time is before
    ``since`` is left out, one whose first is at or after it is taken whole, one between
    is taken with its rows still to be checked (`Span`). `EVERY_ROW` when every row passes;
    None when those sessions are more than ``share`` (`RANGES_SHARE`) of all: a lookup of
    each match's session and time then costs less."""
    if not owned and since is not None:
        untaken = conn.execute(
            "SELECT 1 FROM sessions WHERE row_count > 0 AND NOT first_time >= ? LIMIT 1", (since,)
        ).fetchone()
        if untaken is None:
            return EVERY_ROW
    clauses, values = [*owned], [*args]
    if since is not None:
        clauses.append("s.last_time >= ?")
        values.append(since)
    total = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    most = int(total * (RANGES_SHARE if share is None else share))
    kept = conn.execute(
        "SELECT s.sid, s.first_seq, s.last_seq, s.row_count, s.first_time FROM sessions s"
        f" WHERE s.row_count > 0{''.join(f' AND {c}' for c in clauses)} LIMIT ?",
        [*values, most + 1],
    ).fetchall()
    if len(kept) > most:
        return None
    whole = [since is None or first >= since for *_, first in kept]
    out: list[Span] = []
    for (sid, lo, hi, count, _), taken in zip(kept, whole, strict=True):
        check = None if taken else since
        if hi - lo + 1 == count:  # every sequence between is the session's (each is one row's)
            out.append((lo, hi, check))
            continue
        # Grown by updates: its runs of consecutive sequences.
        seqs = [
            q for (q,) in conn.execute(f"SELECT id & {SEQ_MASK} FROM entries WHERE sid = ?", (sid,))
        ]
        seqs.sort()
        start = seqs[0]
        for before, after in itertools.pairwise(seqs):
            if after != before + 1:
                out.append((start, before, check))
                start = after
        out.append((start, seqs[-1], check))
    return out


def _present(conn: sqlite3.Connection, codes: list[int]) -> list[int]:
    """Those of ``codes`` some row has (a weight none has is not ranked: a prefix* is
    expanded again by every statement, whichever rows it ranks)."""
    return [
        code
        for code in codes
        if conn.execute(
            "SELECT 1 FROM entries WHERE id BETWEEN ? AND ? LIMIT 1", code_range(code)
        ).fetchone()
    ]


def _factor_sql(codes: list[int]) -> str:
    """The SQL of the weight of a row of one of ``codes``: a constant when they weigh
    the same (the very number the row's BM25 is multiplied by either way)."""
    weights = {code: weight(*CODES[code]) for code in codes}
    if len(set(weights.values())) == 1:
        return repr(weights[codes[0]])
    cases = " ".join(f"WHEN {code} THEN {w!r}" for code, w in weights.items())
    return f"(CASE docs.rowid >> {SEQ_BITS} {cases} END)"


def _by_weight(codes: list[int]) -> list[tuple[float, list[int]]]:
    """``codes`` grouped by their weight, highest first."""
    groups: dict[float, list[int]] = {}
    for code in sorted(codes):
        kind, by_user = CODES[code]
        groups.setdefault(weight(kind, by_user), []).append(code)
    return sorted(groups.items(), reverse=True)


def _ceilings(
    conn: sqlite3.Connection, match: str, seen: dict[float, int] | None = None
) -> list[float]:
    """More than each phrase of ``match`` can add to a row's unweighted BM25 (as a
    positive number): idf * (K1 + 1), its term frequency's share being below 1. Read off
    ``seen`` where it can (`_read_off`), else computed as ``bm25()`` computes idf (clamped
    to 1e-6), with a margin for rounding."""
    phrases = _PHRASE.findall(match)
    known = _read_off(conn, phrases, seen) if seen else {}
    rows = _row_count(conn) if len(known) < len(phrases) else 0
    out = []
    for n, phrase in enumerate(phrases):
        if n in known:
            out.append(known[n])
            continue
        hits = conn.execute("SELECT count(*) FROM docs WHERE docs MATCH ?", (phrase,)).fetchone()[0]
        idf = math.log((rows - hits + 0.5) / (hits + 0.5))
        out.append((idf if idf > 0 else 1e-6) * (K1 + 1) * _MARGIN)
    return out


def _read_off(
    conn: sqlite3.Connection, phrases: list[str], seen: dict[float, int]
) -> dict[int, float]:
    """The ceilings (by position in ``phrases``) that ``seen`` gives: `ROW_CEILING` values
    of matches, each with a row having it, the sum of the ceilings of the phrases the row
    holds. Which phrases a row holds is a lookup of the row among each phrase's matches
    (a seek; counting a phrase's matches scans them all); a phrase's ceiling is then a
    row's holding it alone, or a row's sum less the others it holds, raised by more than
    the rounding of the sums. None for a prefix*: FTS5 would expand it for each lookup.

    ``git status``: the prompts holding ``git`` alone, and one holding both, give both
    ceilings (9 ms of counting ``git`` and ``status`` spared at 2,000,000 rows)."""
    if any(p.endswith("*") for p in phrases):
        return {}
    sums: list[tuple[frozenset[int], float]] = []
    for value, rowid in itertools.islice(seen.items(), _READ_OFF):
        held = frozenset(
            n
            for n, phrase in enumerate(phrases)
            if conn.execute(
                "SELECT 1 FROM docs WHERE docs MATCH ? AND rowid = ?", (phrase, rowid)
            ).fetchone()
        )
        sums.append((held, value))
    raw: dict[int, float] = {}
    solved = True
    while solved:
        solved = False
        for held, value in sums:
            unknown = held - raw.keys()
            if len(unknown) == 1:
                (n,) = unknown
                raw[n] = max(0.0, value - sum(raw[m] for m in held - unknown))
                solved = True
    slack = _SLACK * max((value for _, value in sums), default=0.0)
    return {n: c * _MARGIN + slack for n, c in raw.items()}


def _row_count(conn: sqlite3.Connection) -> int:
    """The rows FTS5 counts in BM25's idf: the first varint of its averages record."""
    row = conn.execute("SELECT block FROM docs_data WHERE id = 1").fetchone()
    blob = bytes(row[0]) if row is not None and row[0] else b""
    value = 0
    for at, byte in enumerate(blob[:9]):
        if at == 8:  # a SQLite varint's ninth byte holds 8 bits
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value


def _sessions_of(
    conn: sqlite3.Connection, best: list[tuple[float, int]]
) -> list[tuple[int, int, float]]:
    """``best`` as `interleave` takes it: (row, session, score), best first."""
    if not best:
        return []
    ids = [rowid for _, rowid in best]
    sid = dict(
        conn.execute(f"SELECT id, sid FROM entries WHERE id IN ({','.join('?' * len(ids))})", ids)
    )
    return [(rowid, sid[rowid], score) for score, rowid in best]


def _newest(
    index_path: Path, where_sql: str, args: list[Any], limit: int, offset: int
) -> list[Hit]:
    """The rows the filters alone pick (a query of filters and no word: every decision of a
    project, the errors of the last day), newest first, each with the head of its text."""
    listed = (
        "SELECT s.id, s.agent, s.cwd, e.time, e.label, e.kind, e.role,"
        f" substr(docs.text, 1, {HEAD_CHARS}) || iif(length(docs.text) > {HEAD_CHARS}, '…', '')"
        " FROM entries e JOIN sessions s ON s.sid = e.sid JOIN docs ON docs.rowid = e.id"
        f" WHERE 1{where_sql} ORDER BY e.time DESC, (e.id & {SEQ_MASK}) DESC LIMIT ? OFFSET ?"
    )
    try:
        conn = sqlite3.connect(index_path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            rows = conn.execute(listed, [*args, limit, max(0, offset)]).fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise IndexUnusable(index_path, exc) from None
    return [
        Hit(sid, ag, cw, t, None if lab is None else f"M{lab}", kind, role, text, 0.0)
        for sid, ag, cw, t, lab, kind, role, text in rows
    ]


def interleave(rows: list[tuple[int, int, float]]) -> list[tuple[int, float]]:
    """``(row, session, score)`` best row first, as ``(row, score)`` in hit order: the
    sessions best first by `session_score`, the best row of each, then their second rows,
    and so on (one session's many rows do not push the others off the page)."""
    by_session: dict[int, list[tuple[int, float]]] = {}
    for row, session, score in rows:
        by_session.setdefault(session, []).append((row, float(score)))
    order = sorted(by_session.values(), key=lambda own: session_score([s for _, s in own]))
    out: list[tuple[int, float]] = []
    for depth in range(max((len(own) for own in order), default=0)):
        out.extend(own[depth] for own in order if depth < len(own))
    return out


def session_score(scores: list[float]) -> float:
    """A session's score from its rows' (best first, BM25: lower is better): the best
    rows' added with weights halving, so a second and third strong row count, the
    hundredth weak one hardly."""
    return sum(score * SESSION_DECAY**at for at, score in enumerate(scores[:SESSION_ROWS]))


def _details(conn: sqlite3.Connection, match: str, rows: list[int]) -> dict[int, tuple[Any, ...]]:
    """What the hits of ``rows`` show: session, agent, cwd, time, label, kind, role and
    the snippet of the matched words."""
    if not rows:
        return {}
    marks = ",".join("?" * len(rows))
    shown = conn.execute(
        "SELECT e.id, s.id, s.agent, s.cwd, e.time, e.label, e.kind, e.role"
        f" FROM entries e JOIN sessions s ON s.sid = e.sid WHERE e.id IN ({marks})",
        rows,
    ).fetchall()
    snippets = _snippets(conn, match, rows)
    return {r[0]: (*r[1:], snippets[r[0]]) for r in shown}


def _snippets(conn: sqlite3.Connection, match: str, rows: list[int]) -> dict[int, str]:
    """The snippet of ``match`` in each of ``rows``, made in a temporary FTS5 table of
    those rows alone, with the index's own tokenizer: a snippet depends on its row's text
    and the query alone, and FTS5 expands a prefix* over the whole index in each statement
    that matches it (17 ms for ``read*`` at 2,000,000 rows), over these rows here."""
    (definition,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'docs'"
    ).fetchone()
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.page USING fts5"
        + definition.split("USING fts5", 1)[1]
    )
    conn.execute("DELETE FROM temp.page")
    conn.execute(
        "INSERT INTO temp.page (rowid, text) SELECT rowid, text FROM main.docs"
        f" WHERE rowid IN ({','.join('?' * len(rows))})",
        rows,
    )
    sql = (
        f"SELECT rowid, snippet(page, 0, char(2), char(3), '…', {SNIPPET_TOKENS})"
        " FROM temp.page WHERE page MATCH ?"
    )
    return dict(conn.execute(sql, (match,)).fetchall())
