"""The opencode reader: native storage (JSON tree or SQLite), exports and event streams.

Accepted inputs (the last file of a chain is read: opencode keeps a whole session
in one store, so the newest file holds everything):

* a ``storage`` directory of older builds, its parent, or one
  ``storage/session/<project>/<ses>.json`` file;
* opencode's SQLite database (``opencode.db``), or the directory holding it;
* ``opencode export <id>`` output (junk before the first ``{`` and a cut-short
  tail are reported, not fatal);
* ``opencode run --format json`` event streams (assistant parts only).

A store holding several root sessions (no ``parentID``) is read only with one named
(``--session``, :func:`read_session`): without a name it is an error listing them,
never a silent pick (``batch`` restores every one). Child sessions
(``task`` sub-agents) become ``agent`` spans placed right after the ``task``
call that spawned them, or at the end of their parent when no call names them.
Message ids and numbering are described in :mod:`.convert`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from ...diagnostics import WarningSink
from ...errors import SourceError
from ...fields import parse_timestamp
from ...model import Message, Session, Timeline, TimelineEvent, TimelineSpan
from ..base import SNIFF_BYTES, Found, SessionChoice, choose_session
from ..discover import Discovery
from . import discover
from .convert import PartConverter, RawMessage, as_dict, as_int
from .files import EventStore, ExportStore, TreeStore, event_line, storage_root
from .sqlite import SQLITE_MAGIC, DbStore, is_opencode_db

#: ``opencode export`` writes the session info first.
_EXPORT_START = re.compile(rb'\{\s*"info"\s*:\s*\{')


class _Store(Protocol):
    kind: str
    path: Path
    default_id: str | None

    def sessions(self) -> list[dict[str, Any]]: ...

    def messages(self, session_id: str) -> Iterator[RawMessage]: ...

    def close(self) -> None: ...


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(SNIFF_BYTES)
    except OSError as exc:
        raise SourceError(str(path), f"cannot read: {exc.strerror}") from exc


def _open_store(path: Path, sink: WarningSink) -> _Store:
    if not path.exists():
        raise SourceError(str(path), "no such file or directory")
    tree = storage_root(path)
    if tree is not None:
        return TreeStore(tree[0], tree[1], sink)
    if path.is_dir():
        if (path / "opencode.db").is_file():
            return DbStore(path / "opencode.db", sink)
        raise SourceError(str(path), "no opencode storage/session directory or opencode.db here")
    head = _head(path)
    if head.startswith(SQLITE_MAGIC):
        return DbStore(path, sink)
    if event_line(head) is not None:
        return EventStore(path, sink)
    return ExportStore(path, sink)


def _updated(info: dict[str, Any]) -> int:
    time = as_dict(info.get("time"))
    return as_int(time.get("updated")) or as_int(time.get("created"))


def _choice(info: dict[str, Any]) -> SessionChoice:
    title = info.get("title")
    updated = parse_timestamp(_updated(info) or None)
    return SessionChoice(str(info.get("id")), title if isinstance(title, str) else None, updated)


def _roots(infos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sessions that are no sub-agent's (every one when all claim a parent: a cycle)."""
    return [i for i in infos if not i.get("parentID")] or infos


def _pick(store: _Store, infos: list[dict[str, Any]], session_id: str | None) -> dict[str, Any]:
    """The session ``session_id`` names (an id or a unique prefix), else the only root one.

    A single-session input (an export, an event stream, one session file) names its own.
    """
    wanted = session_id or store.default_id
    pool = _roots(infos) if wanted is None else infos
    by_id = {str(i.get("id")): i for i in pool}
    return by_id[choose_session(store.path, [_choice(i) for i in pool], wanted).id]


def _event(message: Message) -> TimelineEvent:
    kind: Literal["compaction", "message"] = "message"
    if message.compaction is not None:
        kind = "compaction"
    return TimelineEvent(
        uuid=message.id,
        kind=kind,
        message=message,
        compaction=message.compaction,
        timestamp=message.timestamp,
    )


def _span(
    store: _Store,
    info: dict[str, Any],
    infos: list[dict[str, Any]],
    sink: WarningSink,
    seen: set[str],
) -> TimelineSpan:
    """The span of one session, with its child sessions as nested ``agent`` spans."""
    sid = str(info["id"])
    seen.add(sid)
    converter = PartConverter(str(store.path), sink)
    events: list[TimelineEvent] = []
    for raw in store.messages(sid):
        events.extend(_event(m) for m in converter.convert(raw))
    events.extend(_event(m) for m in converter.finish())
    known = {e.uuid for e in events}
    after: dict[str, list[TimelineSpan]] = {}
    tail: list[TimelineSpan] = []
    children = [i for i in infos if i.get("parentID") == sid]
    for child in sorted(children, key=lambda i: as_int(as_dict(i.get("time")).get("created"))):
        if child["id"] in seen:  # a parent cycle, or one session listed twice
            continue
        span = _span(store, child, infos, sink, seen)
        link = converter.task_links.get(span.id)
        span.meta["task_call"] = link
        span.meta["tool_use_id"] = link  # the unified link to the starting call
        (after.setdefault(link, []) if link in known else tail).append(span)
    content: list[TimelineEvent | TimelineSpan] = []
    for event in events:
        content.append(event)
        content.extend(after.pop(event.uuid, []))
    content.extend(tail)
    title = info.get("title") if isinstance(info.get("title"), str) else None
    return TimelineSpan(
        id=sid,
        name=title or sid,
        span_type="agent",
        content=content,
        meta={"title": title, "parent_id": info.get("parentID")},
    )


def _read(path: Path, session_id: str | None, sink: WarningSink, files: Sequence[Path]) -> Session:
    store = _open_store(path, sink)
    try:
        infos = store.sessions()
        info = _pick(store, infos, session_id)
        root = _span(store, info, infos, sink, set())
    finally:
        store.close()
    root.name = "main"
    messages = root.messages()
    models = [m.model for m in messages if m.model]
    session_model = as_dict(info.get("model")).get("id")
    title = info.get("title") if isinstance(info.get("title"), str) else None
    cwd = info.get("directory") if isinstance(info.get("directory"), str) else None
    meta = {
        "source": store.kind,
        "version": info.get("version"),
        "parent_id": info.get("parentID"),
        "updated_at": parse_timestamp(as_dict(info.get("time")).get("updated")),
    }
    return Session(
        id=str(info["id"]),
        agent="opencode",
        files=[str(f) for f in files],
        timeline=Timeline(root=root, name=title or ""),
        cwd=cwd,
        title=title,
        model=models[-1] if models else session_model if isinstance(session_model, str) else None,
        started_at=parse_timestamp(as_dict(info.get("time")).get("created")),
        warnings=list(sink.warnings),
        meta={k: v for k, v in meta.items() if v is not None},
    )


def read_session(path: Path, session_id: str | None, sink: WarningSink) -> Session:
    """Read session ``session_id`` (with its sub-agent sessions) from any opencode input.

    ``None`` reads the input's only root session; several are an error listing them.
    """
    return _read(Path(path), session_id, sink, [Path(path)])


def list_sessions(path: Path, sink: WarningSink | None = None) -> list[dict[str, Any]]:
    """The sessions an opencode input holds, most recently updated first.

    Each is ``{id, title, directory, parent_id, created, updated}`` with aware UTC
    datetimes (or ``None``) for the times.
    """
    store = _open_store(Path(path), sink or WarningSink())
    try:
        infos = store.sessions()
    finally:
        store.close()
    rows = [
        {
            "id": info.get("id"),
            "title": info.get("title"),
            "directory": info.get("directory"),
            "parent_id": info.get("parentID"),
            "created": parse_timestamp(as_dict(info.get("time")).get("created")),
            "updated": parse_timestamp(as_dict(info.get("time")).get("updated")),
        }
        for info in sorted(infos, key=_updated, reverse=True)
    ]
    return rows


def _stream(store: _Store, session_id: str, sink: WarningSink) -> Iterator[Message]:
    try:
        converter = PartConverter(str(store.path), sink)
        for raw in store.messages(session_id):
            yield from converter.convert(raw)
        yield from converter.finish()
    finally:
        store.close()


class OpencodeReader(Discovery):
    """Reads opencode's storage tree, SQLite database, exports and JSON event streams."""

    name = "opencode"
    #: opencode.db and the storage/ tree of one install hold the same sessions.
    ids_span_inputs = True
    description = (
        "opencode: storage/ tree, opencode.db, `opencode export` JSON, `run --format json`"
    )

    def sniff(self, path: Path, head: bytes) -> float:
        """How sure we are that ``path`` is one of opencode's inputs."""
        try:
            if storage_root(path) is not None:
                return 0.9
            if path.is_dir():
                return 0.8 if (path / "opencode.db").is_file() else 0.0
        except OSError:
            return 0.0
        if head.startswith(SQLITE_MAGIC):
            return 0.95 if is_opencode_db(path) else 0.0
        if event_line(head) is not None:
            return 0.85
        body = head[head.find(b"{") :] if b"{" in head else b""
        if _EXPORT_START.match(body) and b'"messages"' in body:
            return 0.9 if b'"sessionID"' in body or b'"ses_' in body else 0.5
        return 0.0

    def sessions(self, files: Sequence[Path], sink: WarningSink) -> list[SessionChoice]:
        """The root sessions of the input (sub-agent sessions go with their parent)."""
        if not files:
            raise SourceError("-", "no input files given")
        store = _open_store(Path(files[-1]), sink)
        try:
            infos = store.sessions()
        finally:
            store.close()
        return [_choice(i) for i in _roots(infos)]

    def iter_messages(
        self, files: Sequence[Path], sink: WarningSink, session: str | None = None
    ) -> Iterator[Message]:
        """Stream the chosen session's own messages (sub-agents excluded), oldest first.

        The session is chosen before this returns, so a wrong or missing ``--session``
        fails before anything is printed.
        """
        if not files:
            raise SourceError("-", "no input files given")
        store = _open_store(Path(files[-1]), sink)
        try:
            info = _pick(store, store.sessions(), session)
        except BaseException:
            store.close()
            raise
        return _stream(store, str(info["id"]), sink)

    def read(self, files: Sequence[Path], sink: WarningSink, session: str | None = None) -> Session:
        """Read the chosen session with its sub-agent sessions as child spans."""
        if not files:
            raise SourceError("-", "no input files given")
        return _read(Path(files[-1]), session, sink, files)

    def default_roots(self, home: Path) -> list[Path]:
        """Where opencode keeps its data under ``home`` (see ``discover``)."""
        return discover.default_roots(home)

    def session_files(self, root: Path) -> list[Path]:
        """The databases and storage trees under ``root``."""
        return discover.session_files(root)

    def list_sessions(self, path: Path, sink: WarningSink) -> list[Found]:
        """The top-level sessions of an opencode input, most recently updated first."""
        return discover.top_level(path, list_sessions(path, sink))


READER = OpencodeReader()
