"""The session history as five tools, without the protocol around them.

`HistoryTools` answers what ``opencode-restore mcp`` serves: the sessions of a project, a
cited restoration, the messages around a label, a search of one log, a search of every
indexed session. Every answer is
bounded (a ``limit`` or ``max_tokens``, with a note when something was cut) and redacted.
A problem the caller can fix (an unknown session, an ambiguous prefix, a bad regex) is a
`ToolFailure` with a one-line reason; the server turns it into an MCP tool error.

Labels: ``[M#]`` are issued by a restore as it renders the turns, so ``get_messages`` and
``search_log`` take them from the session's saved journal, the same map the
restoration cited. A session never restored is restored first (offline by default; with a
saved journal an unchanged session costs no model call).
"""

from __future__ import annotations

import math
import os
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..command_sink import command_sink
from ..config import Config
from ..diagnostics import WarningSink
from ..errors import RestoreError
from ..llm.registry import close_provider, get_provider
from ..llm.settings import ProviderSettings
from ..model import Message, Session
from ..pipeline.evidence.log_search import Limits, LogHits, LogSearch
from ..pipeline.evidence.patterns import WORKER_GRACE, bounded, check_pattern
from ..pipeline.evidence.sandbox import Matcher, Refused
from ..pipeline.journal.identity import saved_journal
from ..pipeline.journal.store import JournalStore, SourceFile, file_change, journal_dir
from ..pipeline.restoration import Restoration
from ..pipeline.run import RestoreOptions, restore_locked
from ..pipeline.stages.turn_parser import parse_turns
from ..pipeline.tokens import CHARS_PER_TOKEN
from ..redact import redact, redact_optional, redact_value
from ..report.messages import message_record
from ..report.saved import save_restoration
from ..report.summary import render_restoration
from ..search.index import before_query, index_path
from ..search.query import kinds_of, search
from ..since import SinceError, parse_since
from ..sources import filter_messages, open_session
from ..store import open_store
from ..store.db import iso_utc
from ..store.inputs import resolve_inputs
from ..store.lookup import AmbiguousSession
from ..store.paths import cwd_variants
from ..store.store import SessionRow, Store
from ..store.transcript_paths import read_refusal
from ..timeline.numbering import Numbering

Format = Literal["prompt", "markdown", "json"]

#: Defaults and ceilings of the tools' size arguments.
DEFAULT_SESSIONS, MAX_SESSIONS = 20, 200
DEFAULT_MESSAGES, MAX_MESSAGES = 20, 200
DEFAULT_HITS, MAX_HITS = 20, 50
DEFAULT_TOKENS, MAX_TOKENS = 4000, 32000
#: One message's text is cut here; the whole answer is bounded by ``max_tokens`` too.
MESSAGE_CHARS = 2000


class SessionInfo(BaseModel):
    """One session of `list_sessions`."""

    id: str
    agent: str
    title: str | None = Field(description="The first user request, cut.")
    cwd: str | None
    last_activity: str = Field(description="ISO 8601 time of the session's last activity.")
    turns: int | None = Field(description="Turns at its last restore; null if never restored.")
    current: bool = Field(
        False, description="The calling agent's own session (being written): not one to restore."
    )


class SessionList(BaseModel):
    """The answer of `list_sessions`."""

    sessions: list[SessionInfo]
    total: int = Field(description="Sessions matching, before the limit.")
    note: str


class Restored(BaseModel):
    """The answer of `restore_session`."""

    session: str
    agent: str
    format: Format
    turns: int
    model_calls: int = Field(
        description="Model calls this restore made (0: all reused, or the offline rules "
        "wrote it: no model is called offline)."
    )
    text: str = Field(description="The restoration; [M#] cite the session's messages.")
    truncated: bool
    note: str


class Messages(BaseModel):
    """The answer of `get_messages`."""

    session: str
    messages: list[dict[str, Any]] = Field(
        description="role, type, text, timestamp, entry_index, file_index, id, tool fields, "
        "injected (the kind of harness context a whole message is, not the user's words), "
        "context ({kind, text}: context taken off a wrapped request), "
        "and label: the [M#] its restoration cites (null for a message it never showed)."
    )
    total: int = Field(description="Messages passing the filters.")
    note: str


class SearchResult(BaseModel):
    """The answer of `search_log`."""

    session: str
    result: str = Field(description="Hits as file:line [M#]: text, context lines between.")
    labels: list[str] = Field(description="The [M#] of the messages hit.")
    note: str


class SessionHits(BaseModel):
    """The answer of `search_sessions`."""

    query: str
    hits: list[dict[str, Any]] = Field(
        description="session_id, agent, cwd, time, label ([M#], null for a summary row), "
        "kind (message, tool, error, command, file, decision, summary), role, snippet, "
        "highlights ([start, end] of the matched terms in snippet), score (BM25, lower is "
        "better)."
    )
    note: str


class ToolFailure(RestoreError):
    """A call the caller can correct; its message is the one-line reason."""


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, AmbiguousSession):
        return exc.one_line()  # the candidates, which its first line alone leaves out
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _clamp(value: int | None, default: int, ceiling: int, name: str) -> int:
    if value is None:
        return default
    if value < 1:
        raise ToolFailure(f"{name} must be at least 1 (got {value})")
    return min(value, ceiling)


def cut_to_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """``text`` within ``max_tokens`` (estimated as characters / 3.5), cut at a line."""
    limit = math.floor(max_tokens * CHARS_PER_TOKEN)
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    at = head.rfind("\n")
    return (head[:at] if at > limit // 2 else head), True


#: Environment variables naming the session of the agent that started the server.
CALLER_ENV = ("CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "CODEX_SESSION_ID")
#: A session whose newest file changed this recently is being written: a live session.
LIVE_SECONDS = 60.0
#: Sessions `latest` looks at (the caller's own is one of the newest).
LATEST_CANDIDATES = 5
#: The bytes at the end of a log searched for the caller's tool call id.
_TAIL_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Caller:
    """What the server knows of the agent calling it, to tell its own session apart.

    ``session_id``: the agent's session id from its environment (Claude Code passes
    ``CLAUDE_CODE_SESSION_ID`` to the MCP servers it starts, Codex ``CODEX_THREAD_ID``
    where it sets one); ``tool_call_id``: the id of the tool call being answered (Claude
    Code sends it in the request's ``_meta`` as ``claudecode/toolUseId``), which its own
    log holds by then.
    """

    session_id: str | None = None
    tool_call_id: str | None = None
    now: float | None = None

    @classmethod
    def from_env(cls, tool_call_id: str | None = None) -> Caller:
        """The caller as this process's environment names it."""
        found = next((os.environ[k] for k in CALLER_ENV if os.environ.get(k)), None)
        return cls(found, tool_call_id)

    def which(self, rows: list[SessionRow], store: Store) -> str | None:
        """The id of the caller's session among ``rows`` (newest first): the one whose log
        holds the tool call, else the newest when it is the caller's id or is still being
        written (a session cleared or compacted into a new id is live, the old one not)."""
        if not rows:
            return None
        if self.tool_call_id:
            for row in rows[:LATEST_CANDIDATES]:
                if _tail_holds(store.session(row.id) or row, self.tool_call_id):
                    return row.id
        first = store.session(rows[0].id) or rows[0]
        if first.id == self.session_id or _is_live(first, self.now):
            return first.id
        return None

    def skip(self, rows: list[SessionRow], store: Store) -> list[SessionRow]:
        """``rows`` (newest first) without the caller's session (`which`)."""
        mine = self.which(rows, store)
        return [r for r in rows if r.id != mine]


def _newest_file(row: SessionRow) -> str | None:
    return row.files[-1].path if row.files else row.native_log_file


def _is_live(row: SessionRow, now: float | None = None) -> bool:
    """True when the session's newest file changed within `LIVE_SECONDS`."""
    path = _newest_file(row)
    if path is None:
        return False
    try:
        changed = os.stat(path).st_mtime
    except OSError:
        return False
    return (time.time() if now is None else now) - changed <= LIVE_SECONDS


def _tail_holds(row: SessionRow, needle: str) -> bool:
    path = _newest_file(row)
    if path is None or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - _TAIL_BYTES))
            return needle.encode() in f.read()
    except OSError:
        return False


@dataclass(slots=True)
class _Opened:
    session: Session
    agent: str


class HistoryTools:
    """The tools over one data directory, restoring with ``config``'s provider."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.journals = JournalStore(journal_dir(config.data_dir))

    def _store(self) -> Store:
        return open_store(self.config.data_dir)

    # -- list_sessions ------------------------------------------------------------------

    def list_sessions(
        self,
        cwd: str | None = None,
        agent: str | None = None,
        limit: int | None = None,
        caller: Caller | None = None,
        since: str | None = None,
    ) -> SessionList:
        """Sessions, most recently active first: id, agent, title, cwd, last activity, turns,
        and which one is the caller's own; ``since`` as ``sessions list --since`` takes it."""
        from ..store.discovery import scan

        count = _clamp(limit, DEFAULT_SESSIONS, MAX_SESSIONS, "limit")
        since_ts = _since(since)
        store = self._store()
        try:
            scan(store, agent=agent, sink=WarningSink())
            cwds = cwd_variants(cwd) if cwd else None
            after = iso_utc(since_ts) if since_ts is not None else None
            rows, total = store.sessions(agent=agent, cwds=cwds, since=after, limit=count)
            turns = store.restored_turns([r.id for r in rows])
            newest, _ = store.sessions(limit=LATEST_CANDIDATES)
            mine = (caller or Caller()).which(newest, store)
        finally:
            store.close()
        sessions = [
            SessionInfo(
                id=r.id,
                agent=r.agent,
                title=redact_optional(r.title),
                cwd=redact_optional(r.cwd),
                last_activity=r.updated_at,
                turns=turns.get(r.id),
                current=r.id == mine,
            )
            for r in rows
        ]
        note = f"{len(rows)} of {total} sessions" + (
            "; raise limit for more" if total > len(rows) else ""
        )
        return SessionList(sessions=sessions, total=total, note=note)

    # -- restore_session ----------------------------------------------------------------

    def _open(self, ref: str, caller: Caller | None = None) -> _Opened:
        """The session named by an id, a unique prefix, ``latest`` or a log path (resolved
        as the command line resolves ``LOG...|SESSION-ID`` and ``--latest``); ``latest``
        is never the calling agent's own live session (`Caller`)."""
        try:
            if ref == "latest":
                paths, agent, inner = self._latest(caller or Caller())
            else:
                paths, agent, inner = resolve_inputs(
                    (ref,), None, False, None, command_sink(), self.config.data_dir
                )
            session = open_session(paths, WarningSink(), agent, inner)
        except RestoreError as exc:
            raise ToolFailure(_one_line(exc)) from exc
        return _Opened(session, agent or session.agent)

    def _latest(self, caller: Caller) -> tuple[list[Path], str | None, str | None]:
        """``--latest`` as the command line has it (this directory's sessions first), but
        without the session the caller is writing."""
        from ..store.discovery import scan
        from ..store.lookup import CONTAINER_AGENTS, SessionNotFound

        store = self._store()
        try:
            scan(store, sink=WarningSink())
            rows: list[SessionRow] = []
            for cwds in (cwd_variants(os.getcwd()), None):
                rows, _ = store.sessions(cwds=cwds, limit=LATEST_CANDIDATES)
                rows = caller.skip(rows, store)
                if rows:
                    break
            if not rows:
                raise SessionNotFound(
                    "no session found in the store or the default locations besides the one asking"
                )
            row = store.session(rows[0].id) or rows[0]
        finally:
            store.close()
        # A hook-registered file is checked again now (a symlink re-pointed since).
        paths = [
            Path(f.path) for f in row.files if read_refusal(f.path, row.agent, f.source) is None
        ]
        if not paths:
            raise SessionNotFound(f"session {row.id} ({row.agent}) has no readable transcript file")
        return paths, row.agent, row.id if row.agent in CONTAINER_AGENTS else None

    async def _restore(self, session: Session) -> Restoration:
        """Restore through the saved journal, under the session's lock, and store it."""
        provider = get_provider(self.config.llm.model, ProviderSettings.from_config(self.config))
        try:
            restoration = await restore_locked(
                session, self.config, provider, store=self.journals, options=RestoreOptions()
            )
        finally:
            await close_provider(provider)
        store = self._store()
        try:
            if store.session(session.id) is not None:
                save_restoration(store, session.id, restoration, self.config.restore.redact)
        finally:
            store.close()
        return restoration

    async def restore_session(
        self,
        session: str,
        format: Format = "prompt",
        max_tokens: int | None = None,
        caller: Caller | None = None,
    ) -> Restored:
        """The cited restoration of ``session`` in ``format``, within ``max_tokens``."""
        if format not in ("prompt", "markdown", "json"):
            raise ToolFailure(f"format must be prompt, markdown or json (got {format!r})")
        budget = _clamp(max_tokens, DEFAULT_TOKENS, MAX_TOKENS, "max_tokens")
        opened = self._open(session, caller)
        restoration = await self._restore(opened.session)
        text, cut = cut_to_tokens(render_restoration(restoration, format), budget)
        return Restored(
            session=opened.session.id,
            agent=opened.agent,
            format=format,
            turns=restoration.turn_count,
            model_calls=restoration.usage.calls,
            text=text,
            truncated=cut,
            note=f"cut to about {budget} tokens; raise max_tokens for all" if cut else "",
        )

    # -- labels ---------------------------------------------------------------------------

    async def _numbering(self, session: Session) -> Numbering:
        """The ``[M#]`` map of the session's restoration (restoring it first if it never was).

        A log that grew since its restore (a live session) keeps the labels its
        restoration cited; the messages after the last of them are numbered on from
        there. With no journal at all (``[restore] resume = false``) every message is
        numbered in order.
        """
        saved, fresh = self._saved_numbering(session)
        if saved is None:
            await self._restore(session)
            saved, fresh = self._saved_numbering(session)
        if saved is not None and fresh:
            return saved
        return await number_on(session, saved)

    def _saved_numbering(self, session: Session) -> tuple[Numbering | None, bool]:
        """The saved map, and whether it was saved from the session's files as they are now."""
        data = saved_journal(self.journals, session)
        if data is None or not isinstance(data.get("numbering"), dict):
            return None, False
        try:
            saved = [SourceFile.from_dict(f) for f in data.get("source_files") or []]
            numbering = Numbering.from_dict(data["numbering"])
        except (KeyError, TypeError, ValueError):
            return None, False
        # A log that changed since is labelled only up to that restore.
        if [f.path for f in saved] != [p for p in session.files if os.path.isfile(p)]:
            return numbering, False
        return numbering, all(file_change(f) == "same" for f in saved)

    # -- get_messages -------------------------------------------------------------------

    async def get_messages(
        self,
        session: str,
        around: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        include_tools: bool = False,
        include_thinking: bool = False,
        max_tokens: int | None = None,
        caller: Caller | None = None,
    ) -> Messages:
        """Messages in the ``messages`` command's shape, each with its ``[M#]`` label."""
        count = _clamp(limit, DEFAULT_MESSAGES, MAX_MESSAGES, "limit")
        budget = _clamp(max_tokens, DEFAULT_TOKENS, MAX_TOKENS, "max_tokens")
        since_ts = _since(since)
        opened = self._open(session, caller)
        numbering = await self._numbering(opened.session)
        chosen = list(
            filter_messages(
                opened.session.messages(),
                since=since_ts,
                include_tools=include_tools,
                include_thinking=include_thinking,
            )
        )
        start = 0
        if around is not None:
            start = _window_start(chosen, numbering, around, count)
        window = chosen[start : start + count]
        records: list[dict[str, Any]] = []
        used, cut_text = 0, False
        for m in window:
            record = _record(m, numbering)
            if len(record["text"] or "") > MESSAGE_CHARS:
                record["text"] = record["text"][:MESSAGE_CHARS] + " [… cut]"
                cut_text = True
            size = len(str(record))
            if records and used + size > budget * CHARS_PER_TOKEN:
                break
            records.append(record)
            used += size
        notes = []
        shown_to = start + len(records)
        if start or shown_to < len(chosen):
            notes.append(f"messages {start + 1}-{shown_to} of {len(chosen)}")
        if len(records) < len(window):
            notes.append(f"cut to about {budget} tokens; raise max_tokens or lower limit")
        if cut_text:
            notes.append(f"long texts cut at {MESSAGE_CHARS} characters")
        return Messages(
            session=opened.session.id, messages=records, total=len(chosen), note="; ".join(notes)
        )

    # -- search_log ---------------------------------------------------------------------

    async def search_log(
        self,
        session: str,
        pattern: str,
        literal: bool = False,
        limit: int | None = None,
        caller: Caller | None = None,
    ) -> SearchResult:
        """SEARCH_LOG over the session's raw log: hits as ``file:line [M#]: text``."""
        hits = _clamp(limit, DEFAULT_HITS, MAX_HITS, "limit")
        limits = Limits(max_hits=hits)
        # Checked on its parse before anything is compiled (the same checks as the
        # evidence tools'): compiling a repeat count is what took gigabytes.
        try:
            invalid = check_pattern(pattern, literal=literal)
        except Refused as exc:
            raise ToolFailure(f"pattern refused: {_one_line(exc)}") from exc
        if invalid is not None:  # say so instead of searching for it as text
            raise ToolFailure(f"bad regex: invalid regex ({invalid})")
        opened = self._open(session, caller)
        numbering = await self._numbering(opened.session)
        search = LogSearch(
            opened.session,
            parse_turns(opened.session),
            numbering,
            lambda text: redact(text)[0],
            limits,
        )

        def run() -> LogHits:
            # The deadline runs from here, not from before the session was read.
            matcher = Matcher(
                pattern, literal=literal, seconds=limits.search_seconds, clock=limits.clock
            )
            return search.search(matcher, context=2)

        # In a worker with a memory cap and a deadline: a search that fails is this
        # call's error, never the server's.
        try:
            found = bounded(run, limits.search_seconds + WORKER_GRACE)
        except Refused as exc:
            raise ToolFailure(f"search failed: {_one_line(exc)}") from exc
        text, cut = cut_to_tokens(found.text, DEFAULT_TOKENS)
        notes = list(found.incomplete)
        if cut:
            notes.append("result cut; narrow the pattern or lower limit")
        return SearchResult(
            session=opened.session.id, result=text, labels=found.cited, note="; ".join(notes)
        )

    # -- search_sessions ----------------------------------------------------------------

    def _catch_up(self, path: Path) -> None:
        """Index a few of the sessions the store saw change (``before_query``); a store
        that cannot be opened leaves the index as it is."""
        try:
            store = self._store()
        except (RestoreError, sqlite3.Error):
            return
        try:
            before_query(store, path)
        finally:
            store.close()

    def search_sessions(
        self,
        query: str,
        agent: str | None = None,
        cwd: str | None = None,
        since: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
    ) -> SessionHits:
        """Rows of every indexed session matching ``query``, best first (BM25); ``kind``
        comma-separated (error, decision, command…), ``since`` as ``--since`` takes it.
        What the store saw change is indexed first, a few sessions per query."""
        count = _clamp(limit, DEFAULT_HITS, MAX_HITS, "limit")
        path = index_path(self.config.data_dir)
        self._catch_up(path)
        try:
            hits = search(
                path,
                query,
                agent=agent,
                cwd=cwd,
                since=_since(since),
                kinds=kinds_of(kind),
                limit=count,
            )
        except RestoreError as exc:  # bad syntax, unknown kind, unreadable index
            raise ToolFailure(_one_line(exc)) from None
        found = [hit.redacted().to_dict() for hit in hits]
        if not path.is_file():
            note = "no search index yet: run `opencode-restore index` (or `sessions scan`)"
        else:
            note = f"{len(found)} hits" + ("; raise limit for more" if len(found) == count else "")
            note += "; read one with get_messages(session, around=label)"
        return SessionHits(query=query, hits=found, note=note)


async def number_on(session: Session, numbering: Numbering | None) -> Numbering:
    """``numbering`` (a new one when None) with labels for the messages after the last
    message it labelled, in the session's order: the labels a restoration cited stay."""
    numbering = numbering if numbering is not None else Numbering()
    messages = list(session.messages())
    last = -1
    for at, m in enumerate(messages):
        if numbering.label_for(m.id) is not None:
            last = at
    await numbering.messages_as_str(messages[last + 1 :])
    return numbering


def _since(value: str | None) -> datetime | None:
    """``since`` parsed as ``--since`` is everywhere: an ISO 8601 time or a span back from now."""
    if value is None:
        return None
    try:
        return parse_since(value, "since").cutoff()
    except SinceError as exc:
        raise ToolFailure(str(exc)) from None


def _window_start(chosen: list[Message], numbering: Numbering, around: str, count: int) -> int:
    label = around.strip().strip("[]").upper()
    ref = numbering.reference(label)
    if ref is None:
        raise ToolFailure(f"around: {around!r} is not a label of this session's restoration")
    for at, m in enumerate(chosen):
        if m.id == ref.id:
            return max(0, at - count // 2)
    raise ToolFailure(
        f"around: {label} is a message these filters leave out "
        "(try include_tools or include_thinking)"
    )


def _record(m: Message, numbering: Numbering) -> dict[str, Any]:
    record = message_record(m)
    record["label"] = numbering.label_for(m.id)
    for key in ("text", "tool_input"):
        value = record.get(key)
        if isinstance(value, str):
            record[key] = redact(value)[0]
    if isinstance(record.get("tool_input"), dict):
        # Field by field with its name (redact_value): `{"DATADOG_APP_KEY": v}` is a secret
        # by its key, which a repr of the whole dict would not show the rules.
        record["tool_input"] = redact_value(record["tool_input"], lambda text: redact(text)[0])
    context = record.get("context")
    if isinstance(context, dict) and isinstance(context.get("text"), str):
        record["context"] = {**context, "text": redact(context["text"])[0]}
    return record
