"""Search across every indexed session: ``GET /search`` over the store's search index."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from ...search.index import before_query, index_path
from ...search.query import IndexUnusable, QueryError, kinds_of, search
from ..deps import MAX_NAME_CHARS, MAX_PATH_CHARS, StoreDep, query_time, time_query
from ..schemas import SearchHitOut, SearchOut

#: The longest query: far above anything typed, short enough to echo in a 400.
MAX_QUERY_CHARS = 1000
#: Hits per page, and the deepest page (BM25 ranks every match before it pages).
DEFAULT_HITS, MAX_HITS = 20, 200
MAX_OFFSET = 10_000

router = APIRouter(tags=["search"])


@router.get(
    "/search",
    responses={
        400: {"description": "The query cannot be run (bad syntax, unknown kind or field)"},
        503: {"description": "The search index cannot be read (index --rebuild makes it)"},
    },
)
def search_sessions(
    store: StoreDep,
    q: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_QUERY_CHARS,
            description='Words (any may match: more and rarer rank first), "a phrase" (must '
            "match), prefix*, and agent:, cwd:, file:, kind:, since: filters",
        ),
    ],
    agent: Annotated[
        str | None, Query(description="Only this agent's sessions", max_length=MAX_NAME_CHARS)
    ] = None,
    cwd: Annotated[
        str | None,
        Query(description="Only sessions of this working directory", max_length=MAX_PATH_CHARS),
    ] = None,
    since: Annotated[str | None, time_query("Only rows after this time, or in this span")] = None,
    kind: Annotated[
        str | None,
        Query(
            description="Only these kinds, comma-separated (error, decision, command, …)",
            max_length=MAX_NAME_CHARS * 4,
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_HITS)] = DEFAULT_HITS,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> SearchOut:
    """Rows of every indexed session matching ``q``, best first (BM25), as the CLI's
    ``search`` finds them; snippets are redacted, as every other answer. What the store
    saw change is indexed first, a few sessions per query."""
    path = index_path(store.path.parent)
    before_query(store, path)
    try:
        hits = search(
            path,
            q,
            agent=agent,
            cwd=cwd,
            since=query_time("since", since),
            kinds=kinds_of(kind),
            limit=limit,
            offset=offset,
        )
    except QueryError as exc:
        raise HTTPException(400, detail=str(exc)) from None
    except IndexUnusable as exc:
        raise HTTPException(503, detail=str(exc)) from None
    return SearchOut(query=q, hits=[SearchHitOut(**hit.redacted().to_dict()) for hit in hits])
