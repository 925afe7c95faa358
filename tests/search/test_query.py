"""Queries: syntax, filters, snippets, and never an SQLite error for any text."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.search import query as query_module
from opencode_restore.search.index import index_path, update
from opencode_restore.search.query import (
    Hit,
    QueryError,
    interleave,
    parse,
    search,
    session_score,
    split_marks,
)
from opencode_restore.store.store import Store
from tests.search.helpers import CLAUDE_ID, CODEX_ID, claude_session, codex_session


@pytest.fixture
def index(store: Store, data_dir: Path, tmp_path: Path) -> Path:
    claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    path = index_path(data_dir)
    update(store, path)
    return path


@pytest.fixture(scope="module")
def empty_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index with its schema and no rows, made once for the property test (FTS5 parses
    a query whether or not anything matches it)."""
    folder = tmp_path_factory.mktemp("search-query")
    path = index_path(folder)
    update(Store(folder / "store.sqlite3"), path)
    return path


def test_words_phrases_and_prefixes() -> None:
    parsed = parse('git "diff stat" sho* kind:command agent:codex')
    # Every phrase, any word: the phrase joins the words so a row with both ranks first.
    assert parsed.match == '"diff stat" AND ("diff stat" OR "git" OR "sho"*)'
    assert parsed.kinds == frozenset({"command"})
    assert parsed.agent == "codex"
    assert parse("git sho*").match == '"git" OR "sho"*'
    assert parse('"a b" "c"').match == '"a b" AND "c"'


def test_stop_words_are_dropped_from_words_not_from_phrases() -> None:
    assert parse("where did I fix the BOM bug?").match == '"fix" OR "BOM" OR "bug?"'
    assert parse("Why doesn’t it start").match == '"start"'
    assert parse('"read the readme" of it').match == '"read the readme"'
    # A query of stop words alone still searches for them.
    assert parse("where is it").match == '"where" OR "is" OR "it"'


def test_fts_syntax_in_a_query_is_only_words() -> None:
    parsed = parse("NEAR(a b) OR -x AND ^y http://example.com")
    assert parsed.match is not None
    assert '"http://example.com"' in parsed.match
    assert '"NEAR(a"' in parsed.match


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ('"unclosed phrase', "unterminated quote"),
        ("kind:bogus git", "unknown kind"),
        ("agent: git", "needs a value"),
        ("since:yesterday git", "since:"),
        ("--- ...", "at least one word"),
    ],
)
def test_bad_queries_say_why_in_one_line(query: str, says: str) -> None:
    with pytest.raises(QueryError) as err:
        parse(query)
    assert says in str(err.value)
    assert "\n" not in str(err.value)


@given(st.text(max_size=40))
def test_any_text_is_hits_or_a_query_error(query: str) -> None:
    try:
        parse(query)
    except QueryError:
        return


def test_any_text_runs_against_a_real_index(index: Path) -> None:
    # (a NUL inside a word ended FTS5's query string: a 503 from GET /search, found by
    # tests/api/test_schema_fuzz.py)
    for query in ['a"b', "x*y", '"', "(", "NOT", "a:b:c", "*", "'", "NEAR(greet, 2)", "a\x00b"]:
        with contextlib.suppress(QueryError):
            search(index, query)


@given(query=st.text(max_size=30))
def test_any_text_is_hits_or_a_query_error_against_an_index(empty_index: Path, query: str) -> None:
    try:
        search(empty_index, query)
    except QueryError:
        return


def test_filters(index: Path) -> None:
    assert {h.session_id for h in search(index, "greet agent:codex", limit=50)} == {CODEX_ID}
    assert {h.session_id for h in search(index, "greet", agent="claude-code", limit=50)} == {
        CLAUDE_ID
    }
    # cwd: the directory, one under it, or its last part.
    for cwd in ("/home/dev/src/greet-cli", "/home/dev/src", "greet-cli"):
        assert {h.session_id for h in search(index, "greet", cwd=cwd, limit=50)} == {CLAUDE_ID}
    assert not search(index, "greet cwd:greet")
    kinds = {h.kind for h in search(index, "git kind:command", limit=50)}
    assert kinds == {"command"}
    assert search(index, "greet since:2026-01-01")
    assert not search(index, "greet", since=datetime(2030, 1, 1, tzinfo=UTC))


def test_a_filter_on_sessions_by_their_rows_ranges_gives_the_hits_of_the_join(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = [
        "greet agent:codex",
        "greet cwd:greet-cli",
        "shout file:README.md",
        "greet agent:codex since:2026-01-01",
        "greet cwd:nowhere",
        "shout* agent:claude-code kind:message",
        # The Claude Code session runs 11:40:44-11:41:12, the Codex one from 11:41:29:
        # one across the time and one after it, one before and one after, both after.
        "greet since:2026-11-21T11:41:00Z",
        "greet since:2026-11-21T11:41:20Z",
        "greet since:2026-01-01",
        "greet cwd:greet-cli since:2026-11-21T11:41:00Z",
    ]
    monkeypatch.setattr(query_module, "RANGES_SHARE", 0.0)
    joined = [search(index, q, limit=50) for q in queries]
    monkeypatch.setattr(query_module, "RANGES_SHARE", 1.0)
    assert [search(index, q, limit=50) for q in queries] == joined
    assert all(joined[:4])
    assert all(joined[5:])
    assert not joined[4]
    across, after = joined[6], joined[7]
    assert {h.session_id for h in across} == {CLAUDE_ID, CODEX_ID}
    assert {h.session_id for h in after} == {CODEX_ID}
    assert all((h.time or "") >= "2026-11-21T11:41:00" for h in across)


def test_filters_alone_list_their_rows_newest_first(index: Path) -> None:
    hits = search(index, "agent:codex", limit=100)
    assert hits
    assert {h.session_id for h in hits} == {CODEX_ID}
    times = [h.time or "" for h in hits]
    assert times == sorted(times, reverse=True)
    commands = search(index, "kind:command")
    assert commands
    assert {h.kind for h in commands} == {"command"}
    assert all(h.snippet for h in commands)
    assert search(index, "kind:command", offset=1)[0] == commands[1]


def test_file_filter(index: Path) -> None:
    files = search(index, "file:test_greet.py", limit=50)
    assert files
    assert {h.kind for h in files} == {"file"}
    assert all("test_greet" in h.snippet.replace("\x02", "").replace("\x03", "") for h in files)
    within = search(index, "shout file:README.md", limit=50)
    assert within
    assert {h.kind for h in within} != {"file"}
    assert not search(index, "shout file:nowhere.xyz")


def test_snippet_marks_and_json_form(index: Path) -> None:
    hit = search(index, "argparse", limit=1)[0]
    assert "\x02" in hit.snippet
    assert "\x03" in hit.snippet
    data = hit.to_dict()
    assert "\x02" not in data["snippet"]
    for start, end in data["highlights"]:
        assert data["snippet"][start:end].lower().startswith("argparse")
    assert data["label"] == hit.label
    assert data["session_id"] == hit.session_id


def test_split_marks() -> None:
    assert split_marks("a \x02bc\x03 d \x02e\x03") == ("a bc d e", [[2, 4], [7, 8]])


def test_limit_offset_and_a_missing_index(index: Path, tmp_path: Path) -> None:
    hits = search(index, "greet", limit=5)
    assert len(hits) == 5
    assert hits[1:3] == search(index, "greet", limit=2, offset=1)
    assert search(tmp_path / "none.sqlite3", "greet") == []
    assert all(isinstance(h, Hit) for h in hits)


def test_words_spread_over_a_sessions_messages_find_it(index: Path) -> None:
    """No one row holds both "argparse" and "readme"; each session holds both."""
    assert not search(index, '"argparse" "readme"')
    hits = search(index, "where was argparse in the readme?", limit=200)
    assert {h.session_id for h in hits} == {CLAUDE_ID, CODEX_ID}
    assert len(hits) == len(search(index, "argparse", limit=200)) + len(
        search(index, "readme", limit=200)
    )


def test_stems_match(index: Path) -> None:
    """The tokenizer is porter: "greeting", "greets" and "greeted" find "greet"."""
    assert {h.session_id for h in search(index, "greeting", limit=50)} == {CLAUDE_ID, CODEX_ID}


def test_hits_come_session_by_session_best_row_first(index: Path) -> None:
    hits = search(index, "greet", limit=200)
    first = hits[0].session_id
    other = next(h for h in hits if h.session_id != first)
    # The best row of each session comes before any session's second row.
    assert hits[1] == other
    for session in (first, other.session_id):
        own = [h.score for h in hits if h.session_id == session]
        assert own == sorted(own)


def test_a_session_with_several_strong_rows_beats_one_with_a_single_stronger_row() -> None:
    one_strong = [(1, 1, -5.0)]
    several = [(2, 2, -4.0), (3, 2, -3.0), (4, 2, -2.0)]
    order = interleave(sorted([*one_strong, *several], key=lambda r: r[2]))
    assert [row for row, _ in order] == [2, 1, 3, 4]
    assert session_score([-4.0, -3.0, -2.0]) < session_score([-5.0])
    # The hundredth weak row hardly counts.
    assert session_score([-4.0] + [-0.1] * 100) > session_score([-4.0, -3.0])
