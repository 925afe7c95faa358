"""The ranking's pruning: the candidates it keeps are exactly those of scoring every match."""

from __future__ import annotations

import math
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore.search.index import CODES, _delete, _insert, begin_build
from opencode_restore.search.query import (
    _MARGIN,
    EVERY_ROW,
    ROW_CEILING,
    SNIPPET_TOKENS,
    _ceilings,
    _row_count,
    _snippets,
    candidates,
    parse,
    session_ranges,
)
from opencode_restore.search.rows import Row

# The weighting as it read before the kind moved into the rowid: a join per match.
REFERENCE_WEIGHT = (
    "CASE WHEN e.kind = 'message' AND e.role = 'user' THEN 2.0"
    " WHEN e.kind = 'decision' THEN 2.0 WHEN e.kind = 'summary' THEN 1.5"
    " WHEN e.kind IN ('tool', 'thinking') THEN 0.5 ELSE 1.0 END"
)
# Words the queries look for, common and rare, among words they do not: most idf are
# positive (a word in half the rows or more is clamped, as bm25() does).
VOCAB = ["test", "test", "run", "git", "status", "bom", *(f"w{n}" for n in range(8))]
AGENTS = ("claude-code", "codex")

rows_st = st.lists(
    st.tuples(
        st.integers(0, 2),  # session
        st.sampled_from(range(len(CODES))),
        # Mixed words, or a word said 1-6 times among 0-20 others: a short row saying it
        # often scores near the ceiling, a long row saying it once far below.
        st.lists(st.sampled_from(VOCAB), min_size=1, max_size=12)
        | st.builds(
            lambda w, n, other, m: [w] * n + [other] * m,
            st.sampled_from(VOCAB),
            st.integers(1, 6),
            st.sampled_from(VOCAB),
            st.integers(0, 20),
        ),
    ),
    min_size=1,
    max_size=80,
)
#: Times rows have (as the index writes them), and the cutoffs a query gives.
DAYS = [f"2026-01-0{d}T10:00:00.000000Z" for d in (2, 4, 6)]
CUTOFFS = ["2026-01-01T00:00:00.000000Z", *DAYS, "2026-01-07T00:00:00.000000Z"]
# Rows as above, each with a time or none, the sessions' times mostly apart (a session
# wholly before a cutoff, wholly after, or across it).
timed_rows_st = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(range(len(CODES))),
        st.lists(st.sampled_from(VOCAB), min_size=1, max_size=12),
        st.integers(0, 9),
    ).map(
        lambda r: (
            *r[:3],
            None if r[3] == 9 else DAYS[max(0, min(2, r[0] + (r[3] == 8) - (r[3] == 7)))],
        )
    ),
    min_size=1,
    max_size=80,
)
query_st = st.lists(
    st.sampled_from(["test", "run", "git", "status", "bom", "w1", "te*", '"git status"']),
    min_size=1,
    max_size=3,
)


def build(
    path: Path,
    rows: Sequence[tuple[int, int, list[str]] | tuple[int, int, list[str], str | None]],
    parts: int = 1,
) -> sqlite3.Connection:
    """An index at ``path`` of ``rows`` (session, code, words[, time]), each session inserted
    in turn as an update would (in ``parts`` updates, the sessions taking turns, as
    sessions that grow do), optimized as a build leaves it."""
    conn = begin_build(path)
    for n in range(3):
        conn.execute(
            "INSERT INTO sessions (sid, id, agent) VALUES (?, ?, ?)",
            (n + 1, f"s{n}", AGENTS[n % 2]),
        )
    for part in range(parts):
        for session in range(3):
            own = [
                Row(
                    1,
                    CODES[row[1]][0],
                    "user" if CODES[row[1]][1] else "assistant",
                    row[3] if len(row) > 3 else None,
                    " ".join(row[2]),
                )
                for row in rows
                if row[0] == session
            ]
            _insert(conn, session + 1, own[part::parts])
    conn.execute("INSERT INTO docs (docs) VALUES ('optimize')")
    conn.execute("COMMIT")
    return conn


@contextmanager
def built(
    rows: Sequence[tuple[int, int, list[str]] | tuple[int, int, list[str], str | None]],
    parts: int = 1,
) -> Iterator[sqlite3.Connection]:
    """`build` in a folder of its own, closed after: hypothesis runs a test many times in
    one ``tmp_path``."""
    with tempfile.TemporaryDirectory() as folder:
        conn = build(Path(folder) / "search.sqlite3", rows, parts)
        try:
            yield conn
        finally:
            conn.close()


def reference(
    conn: sqlite3.Connection,
    match: str,
    kinds: list[str] | None,
    agent: str | None,
    k: int,
    since: str | None = None,
) -> list[tuple[float, int]]:
    """Every match scored, as the ranking was before the pruning."""
    where, args = "", []
    if since is not None:
        where += " AND e.time >= ?"
        args.append(since)
    if kinds is not None:
        where += f" AND e.kind IN ({','.join('?' * len(kinds))})"
        args += kinds
    if agent is not None:
        where += " AND s.agent = ?"
        args.append(agent)
    sql = (
        f"SELECT bm25(docs) * ({REFERENCE_WEIGHT}) AS score, docs.rowid FROM docs"
        " JOIN entries e ON e.id = docs.rowid JOIN sessions s ON s.sid = e.sid"
        f" WHERE docs MATCH ?{where} ORDER BY score, docs.rowid LIMIT ?"
    )
    return [(float(s), int(r)) for s, r in conn.execute(sql, [match, *args, k])]


@settings(max_examples=200, deadline=None)
@given(
    rows=rows_st,
    words=query_st,
    k=st.integers(1, 6),
    kinds=st.none() | st.lists(st.sampled_from(sorted({c[0] for c in CODES})), min_size=1),
    agent=st.none() | st.sampled_from(AGENTS),
)
def test_pruned_candidates_are_those_of_scoring_every_match(
    rows: list[tuple[int, int, list[str]]],
    words: list[str],
    k: int,
    kinds: list[str] | None,
    agent: str | None,
) -> None:
    match = parse(" ".join(words)).match
    assert match is not None
    kinds = sorted(set(kinds)) if kinds is not None else None
    codes = [n for n, (kind, _) in enumerate(CODES) if kinds is None or kind in kinds]
    where, args = ([], []) if agent is None else (["s.agent = ?"], [agent])
    with built(rows) as conn:
        got = candidates(conn, match, where, args, codes, k)
        assert got == reference(conn, match, kinds, agent, k)


def test_a_common_word_is_scored_on_the_best_weighted_rows_alone(tmp_path: Path) -> None:
    # Short user prompts say "test"; tool output says it once in long texts: once the
    # prompts fill the candidates, no tool output can beat them and none is scored.
    user = CODES.index(("message", True))
    tool = CODES.index(("tool", False))
    filler = ["zeta"] * 60
    rows = [(0, user, ["test", "test", "run"]) for _ in range(8)]
    rows += [(1, tool, ["test", *filler]) for _ in range(40)]
    rows += [(2, tool, ["zeta", "parser"]) for _ in range(200)]
    conn = build(tmp_path / "search.sqlite3", rows)
    ranked: list[str] = []
    conn.set_trace_callback(lambda sql: ranked.append(sql) if "bm25" in sql else None)
    got = candidates(conn, '"test"', [], [], list(range(len(CODES))), 5)
    conn.set_trace_callback(None)
    assert got == reference(conn, '"test"', None, None, 5)
    assert ranked
    assert "* 2.0 " in ranked[0]
    assert not any("* 0.5 " in sql for sql in ranked)
    conn.close()


def test_row_count_is_the_rows_bm25_counts(tmp_path: Path) -> None:
    conn = build(tmp_path / "search.sqlite3", [(s % 3, s % len(CODES), ["w"]) for s in range(300)])
    assert _row_count(conn) == 300
    conn.execute("BEGIN")
    _delete(conn, 1)
    conn.execute("COMMIT")
    assert _row_count(conn) == conn.execute("SELECT count(*) FROM docs").fetchone()[0] == 200
    conn.close()


@settings(max_examples=100, deadline=None)
@given(rows=rows_st, word=st.sampled_from(["test", "run", "git", "bom", "te*", '"git status"']))
def test_a_phrase_s_ceiling_read_off_any_match_is_the_counted_one(
    rows: list[tuple[int, int, list[str]]], word: str
) -> None:
    match = parse(word).match
    assert match is not None
    with built(rows) as conn:
        counted = sum(_ceilings(conn, match)) / _MARGIN
        sql = f"SELECT {ROW_CEILING} FROM docs WHERE docs MATCH ?"
        for (read,) in conn.execute(sql, (match,)):
            assert math.isclose(read, counted, rel_tol=1e-12)


def test_rows_holding_one_of_two_words_are_not_scored_once_they_cannot_beat_the_prompts(
    tmp_path: Path,
) -> None:
    # The prompts say both words; the assistant's rows of weight 1 say one of them in
    # long texts (no match for the prompts) or both: only those saying both are ranked.
    user = CODES.index(("message", True))
    assistant = CODES.index(("message", False))
    filler = ["zeta"] * 30
    rows = [(0, user, ["git", "status", *["w1"] * 10]) for _ in range(8)]
    rows += [(1, assistant, ["git", *filler]) for _ in range(20)]
    rows += [(1, assistant, ["status", *filler]) for _ in range(20)]
    rows += [(2, assistant, ["git", "status"]) for _ in range(3)]
    rows += [(2, user, ["zeta", "parser"]) for _ in range(200)]
    conn = build(tmp_path / "search.sqlite3", rows)
    ranked: list[str] = []
    conn.set_trace_callback(lambda sql: ranked.append(sql) if "bm25" in sql else None)
    got = candidates(conn, '"git" OR "status"', [], [], list(range(len(CODES))), 8)
    conn.set_trace_callback(None)
    assert got == reference(conn, '"git" OR "status"', None, None, 8)
    assert any("* 1.0 " in sql and '"git" AND "status"' in sql for sql in ranked)
    assert not any("* 1.0 " in sql and '"git" OR "status"' in sql for sql in ranked)
    conn.close()


@settings(max_examples=200, deadline=None)
@given(
    rows=rows_st,
    words=st.lists(st.sampled_from(["git", "status", "bom", "w1", "te*"]), min_size=2, max_size=3),
    prompts=st.integers(1, 8),
    padding=st.integers(0, 12),
    long_rows=st.integers(0, 30),
    k=st.integers(1, 6),
)
def test_ranking_by_the_words_a_row_holds_finds_the_candidates_of_scoring_every_match(
    rows: list[tuple[int, int, list[str]]],
    words: list[str],
    prompts: int,
    padding: int,
    long_rows: int,
    k: int,
) -> None:
    # Prompts saying every word fill the candidates first, so the lower weights are
    # ranked by which words their rows hold (`_holding`) as often as not; long rows of
    # other words make the average length long, so a short row saying a word often
    # scores near the ceiling (where a bound too tight would lose it).
    match = parse(" ".join(words)).match
    assert match is not None
    user = CODES.index(("message", True))
    said = [w.rstrip("*") + ("st" if w.endswith("*") else "") for w in words]
    rows = [(0, user, [*said, *["w7"] * padding]) for _ in range(prompts)] + rows
    rows += [(2, len(CODES) - 1, ["w6"] * 80) for _ in range(long_rows)]
    with built(rows) as conn:
        got = candidates(conn, match, [], [], list(range(len(CODES))), k)
        assert got == reference(conn, match, None, None, k)


@settings(max_examples=150, deadline=None)
@given(
    rows=rows_st,
    words=query_st,
    k=st.integers(1, 6),
    agent=st.sampled_from(AGENTS),
    parts=st.integers(1, 3),
)
def test_a_session_filter_by_ranges_of_rows_finds_the_candidates_of_the_join(
    rows: list[tuple[int, int, list[str]]],
    words: list[str],
    k: int,
    agent: str,
    parts: int,
) -> None:
    # Sessions that grew in turns hold several ranges of rows each.
    match = parse(" ".join(words)).match
    assert match is not None
    with built(rows, parts) as conn:
        ranges = session_ranges(conn, ["s.agent = ?"], [agent], share=1.0)
        assert ranges is not None
        assert all(since is None for *_, since in ranges)
        codes = list(range(len(CODES)))
        got = candidates(conn, match, [], [], codes, k, ranges)
        assert got == reference(conn, match, None, agent, k)


def test_a_filter_keeping_many_sessions_is_a_join(tmp_path: Path) -> None:
    conn = build(tmp_path / "search.sqlite3", [(s, 0, ["w1"]) for s in range(3)])
    assert session_ranges(conn, ["s.agent = ?"], ["claude-code"], share=0.5) is None
    assert session_ranges(conn, ["s.agent = ?"], ["codex"], share=0.5) == [(2, 2, None)]
    assert session_ranges(conn, ["s.agent = ?"], ["nobody"]) == []
    conn.close()


@settings(max_examples=200, deadline=None)
@given(
    rows=timed_rows_st,
    words=query_st,
    k=st.integers(1, 6),
    since=st.sampled_from(CUTOFFS),
    agent=st.none() | st.sampled_from(AGENTS),
    parts=st.integers(1, 3),
)
def test_a_time_filter_by_the_sessions_spans_finds_the_candidates_of_the_join(
    rows: list[tuple[int, int, list[str], str | None]],
    words: list[str],
    k: int,
    since: str,
    agent: str | None,
    parts: int,
) -> None:
    # Sessions wholly before the cutoff are left out, those wholly after taken whole, and
    # those across it (or with an untimed row) have their rows' times checked.
    match = parse(" ".join(words)).match
    assert match is not None
    owned, args = ([], []) if agent is None else (["s.agent = ?"], [agent])
    with built(rows, parts) as conn:
        ranges = session_ranges(conn, owned, args, since, share=1.0)
        assert ranges is not None
        codes = list(range(len(CODES)))
        got = candidates(conn, match, [], [], codes, k, None if ranges == EVERY_ROW else ranges)
        assert got == reference(conn, match, None, agent, k, since)


def test_a_session_is_left_out_taken_whole_or_checked_row_by_row_by_its_span(
    tmp_path: Path,
) -> None:
    early, middle, late = DAYS
    rows = [(0, 0, ["w1"], early), (0, 0, ["w1"], early)]  # wholly before the cutoff
    rows += [(1, 0, ["w1"], early), (1, 0, ["w1"], late)]  # across it
    rows += [(2, 0, ["w1"], late), (2, 0, ["w1"], late)]  # wholly after
    conn = build(tmp_path / "search.sqlite3", rows)
    assert session_ranges(conn, [], [], middle, share=1.0) == [(3, 4, middle), (5, 6, None)]
    assert session_ranges(conn, [], [], early, share=1.0) == EVERY_ROW
    assert session_ranges(conn, [], [], middle, share=0.5) is None
    assert session_ranges(conn, [], [], CUTOFFS[-1], share=1.0) == []
    conn.close()


# Words of rows whose snippets are cut (more tokens than a snippet shows), with
# punctuation, case and stems (porter: "tests", "testing").
SNIPPET_VOCAB = [*VOCAB, "Tests", "testing", "git-status", "BOM:", "run,", "(w2)", "w3."]


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(SNIPPET_VOCAB), min_size=1, max_size=40), min_size=1, max_size=30
    ),
    words=query_st,
    picked=st.integers(1, 30),
)
def test_snippets_made_from_the_page_s_rows_alone_are_those_of_the_index(
    texts: list[list[str]], words: list[str], picked: int
) -> None:
    match = parse(" ".join(words)).match
    assert match is not None
    rows = [(n % 3, n % len(CODES), text) for n, text in enumerate(texts)]
    with built(rows) as conn:
        plain = dict(
            conn.execute(
                "SELECT rowid, snippet(docs, 0, char(2), char(3), '…', ?) FROM docs"
                " WHERE docs MATCH ?",
                (SNIPPET_TOKENS, match),
            ).fetchall()
        )
        page = sorted(plain)[:picked]
        assert _snippets(conn, match, page) == {row: plain[row] for row in page}


@settings(max_examples=150, deadline=None)
@given(
    rows=rows_st,
    words=st.lists(
        st.sampled_from(["test", "run", "git", "status", "bom", "w1", '"git status"']),
        min_size=2,
        max_size=3,
    ),
)
def test_ceilings_read_off_the_rows_ranked_bound_each_phrase_as_the_counted_ones(
    rows: list[tuple[int, int, list[str]]], words: list[str]
) -> None:
    match = parse(" ".join(words)).match
    assert match is not None
    with built(rows) as conn:
        seen: dict[float, int] = {}
        sql = f"SELECT {ROW_CEILING}, rowid FROM docs WHERE docs MATCH ? ORDER BY rowid"
        for value, rowid in conn.execute(sql, (match,)):
            seen.setdefault(value, rowid)
        counted = _ceilings(conn, match)
        read = _ceilings(conn, match, seen)
        for got, exact in zip(read, counted, strict=True):
            # At least the phrase's ceiling (the counted one less its margin), and not
            # loosened past a rounding's worth.
            assert exact / _MARGIN <= got <= exact * (1 + 1e-9) + 1e-9 * max(seen, default=0)


def test_two_words_ceilings_are_read_off_the_prompts_without_counting_their_matches(
    tmp_path: Path,
) -> None:
    user = CODES.index(("message", True))
    assistant = CODES.index(("message", False))
    rows = [(0, user, ["git", "w1"]) for _ in range(6)] + [(0, user, ["git", "status"])]
    rows += [(1, assistant, ["git", *["zeta"] * 30]) for _ in range(20)]
    rows += [(2, user, ["zeta", "parser"]) for _ in range(200)]
    conn = build(tmp_path / "search.sqlite3", rows)
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    got = candidates(conn, '"git" OR "status"', [], [], list(range(len(CODES))), 7)
    conn.set_trace_callback(None)
    assert got == reference(conn, '"git" OR "status"', None, None, 7)
    assert not any("count(*)" in sql for sql in ran)
    assert any("rowid = " in sql for sql in ran)
    conn.close()
