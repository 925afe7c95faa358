"""A session's messages, streamed: the JSON body is built message by message, never as a list."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import StreamingResponse

from ...diagnostics import WarningSink
from ...errors import SourceError
from ...report.messages import iter_json, unzip
from ...store.fetch import session_messages
from ...timeline.numbering import Labeler
from ..deps import (
    SESSION_LOOKUP,
    SessionId,
    StoreDep,
    query_time,
    session_or_404,
    time_query,
)
from ..schemas import MessagesOut

#: Bytes gathered before a chunk of the messages body is sent.
CHUNK_BYTES = 64 * 1024

router = APIRouter(tags=["sessions"])


def _chunks(parts: Iterator[bytes]) -> Iterator[bytes]:
    """Gather small pieces into chunks of about ``CHUNK_BYTES`` (fewer thread hops)."""
    buf: list[bytes] = []
    size = 0
    for part in parts:
        buf.append(part)
        size += len(part)
        if size >= CHUNK_BYTES:
            yield b"".join(buf)
            buf, size = [], 0
    if buf:
        yield b"".join(buf)


@router.get(
    "/sessions/{session_id}/messages",
    response_class=StreamingResponse,
    responses={
        200: {"model": MessagesOut, "content": {"application/json": {}}},
        **SESSION_LOOKUP,
        410: {"description": "No file of the session's chain exists any more"},
    },
)
def get_messages(
    session_id: SessionId,
    store: StoreDep,
    since: Annotated[
        str | None, time_query("Only messages after this time, or within this span")
    ] = None,
    include_tools: bool = False,
    include_thinking: bool = False,
    raw: Annotated[
        bool, Query(description="Serve secrets unredacted (redacted unless asked)")
    ] = False,
    labels: Annotated[
        bool,
        Query(
            description="Give each message its [M#] label, the one a restoration cites "
            "(a since request reads the whole chain once per tail start, then the tail)"
        ),
    ] = False,
    limit: Annotated[
        int | None, Query(ge=1, le=2**62, description="At most this many messages (default all)")
    ] = None,
    offset: Annotated[
        int, Query(ge=0, le=2**62, description="Skip this many messages first (after filters)")
    ] = 0,
) -> StreamingResponse:
    """The session's messages stitched across its chain, oldest first (streamed JSON).

    ``since`` and the ``include_*`` filters apply first, then ``offset`` and ``limit``.
    Secrets in every string are redacted unless ``raw=true`` is asked for; with
    ``labels=true`` each message carries its ``label`` (null: a restore shows it none).
    """
    row = session_or_404(store, session_id)
    since_ts = query_time("since", since)
    try:
        fetch = session_messages(
            store,
            row,
            WarningSink(),
            since=since_ts,
            include_tools=include_tools,
            include_thinking=include_thinking,
            raw=raw,
            labeler=Labeler() if labels else None,
        )
    except SourceError as exc:
        raise HTTPException(410, detail=exc.reason) from exc
    # islice takes no index past sys.maxsize; no session comes near it.
    stop = None if limit is None else min(offset + limit, sys.maxsize)
    header = {"session_id": row.id, "agent": row.agent}
    if labels:
        shown, issued = unzip(itertools.islice(fetch.labelled, offset, stop))
        pieces = iter_json(header, shown, issued)
    else:
        pieces = iter_json(header, itertools.islice(fetch.messages, offset, stop))
    body = _chunks(pieces)
    try:
        # Read the first chunk before answering: a file that fails as it is opened
        # gets a JSON error, not a cut stream (past the first chunk, nothing can).
        first = next(body)
    except (SourceError, OSError) as exc:
        reason = exc.reason if isinstance(exc, SourceError) else str(exc)
        raise HTTPException(410, detail=reason) from exc
    headers = {"X-Fetch-Mode": fetch.mode, "X-Missing-Files": str(len(fetch.missing))}
    return StreamingResponse(
        itertools.chain((first,), body), media_type="application/json", headers=headers
    )
