"""``sessions scan``: find sessions where each agent writes them and register them.

Default locations (``--root DIR`` replaces them; the same patterns are then searched
recursively under DIR):

==============  ===============================================================
claude-code     ``~/.claude/projects/<encoded-cwd>/<session>.jsonl`` (sub-agent
                files skipped: under ``<session>/subagents/``, ``agent-*.jsonl``
                or a first entry marked ``isSidechain``)
codex           ``$CODEX_HOME`` or ``~/.codex``: ``sessions/**/rollout-*.jsonl`` and
                ``archived_sessions/**/rollout-*.jsonl``
gemini          ``~/.gemini/tmp/<project>/chats/session-*.json`` / ``.jsonl``
opencode        ``~/.local/share/opencode``: ``opencode.db`` and the ``storage/`` tree
                (one entry per top-level session; sub-agent sessions stay inside)
pi              ``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``
==============  ===============================================================

A file is registered only when format detection agrees it belongs to the agent; a
candidate that is no log of any format (binary, empty, truncated to nothing) is
reported once and skipped. Session ids are the ones inside the files (a Claude Code
``sessionId``, a Codex ``session_meta`` id), the file name only when there is none.

Files of one session (a Codex thread resumed into a new rollout, a Gemini legacy
``.json`` continued as ``.jsonl``) join one chain, oldest first. So do Claude Code
files of one folder that share a ``slug``: ``/clear`` (or "clear context and run the
plan") starts a new ``sessionId`` that keeps the slug, and the chain takes the id of
its oldest file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ..errors import SourceError
from ..sources import detect
from ..sources.base import WarningSink, parse_timestamp
from .db import iso_utc, write
from .store import Store
from .titles import content_text, request_title

AGENTS = ("claude-code", "codex", "gemini", "opencode", "pi")
_HEAD_LINES = 40
_HEAD_BYTES = 256 * 1024
_TAIL_BYTES = 256 * 1024
_GEMINI_ID = re.compile(rb'"sessionId"\s*:\s*"([^"]+)"')
_SLUG = re.compile(rb'"slug"\s*:\s*"([^"\\]+)"')
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


@dataclass(slots=True)
class Found:
    """One session file found on disk."""

    agent: str
    session_id: str
    path: Path
    cwd: str | None = None
    title: str | None = None
    started: datetime | None = None
    updated: datetime | None = None
    #: Claude Code: the name files of one session share across ``/clear``.
    slug: str | None = None
    #: A Claude Code sub-agent transcript: part of its parent session, not one itself.
    sidechain: bool = False
    #: Known to a previous scan unchanged, under this session id (see ``ScanCache``).
    registered_id: str | None = None


_CACHE_COLUMNS = (
    "path, size, mtime_ns, agent, session_id, registered_id, cwd, title, started, updated, slug"
)


def _iso(ts: datetime | None) -> str | None:
    return iso_utc(ts) if ts is not None else None


def _from_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


class ScanCache:
    """What earlier scans saw of each candidate file, so unchanged files are not read again.

    A file is unchanged when its size and mtime (nanoseconds) are those seen last time.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._known: dict[str, tuple[Any, ...]] = {
            row[0]: row for row in store.conn.execute(f"SELECT {_CACHE_COLUMNS} FROM scanned_files")
        }
        self._fresh: dict[str, tuple[Any, ...]] = {}

    def lookup(self, path: Path) -> tuple[bool, Found | None, os.stat_result | None]:
        """``(hit, found, stat)``: on a hit ``found`` is the cached session (None: no session)."""
        try:
            st = path.stat()
        except OSError:
            return False, None, None
        row = self._known.get(str(path))
        if row is None or row[1] != st.st_size or row[2] != st.st_mtime_ns:
            return False, None, st
        if row[3] is None:
            return True, None, st
        found = Found(
            row[3], row[4], path, row[6], row[7], _from_iso(row[8]), _from_iso(row[9]), row[10]
        )
        found.registered_id = row[5]
        return True, found, st

    def note(self, path: Path, st: os.stat_result, found: Found | None) -> None:
        """Remember what ``path`` is (``found`` None: no session file) as of ``st``."""
        self._fresh[str(path)] = (
            str(path),
            st.st_size,
            st.st_mtime_ns,
            found.agent if found else None,
            found.session_id if found else None,
            None,
            found.cwd if found else None,
            found.title if found else None,
            _iso(found.started) if found else None,
            _iso(found.updated) if found else None,
            found.slug if found else None,
        )

    def save(self, registered: dict[str, str]) -> None:
        """Write the fresh entries; ``registered`` maps a path to the id it was stored under."""
        rows = []
        for key, row in self._fresh.items():
            rows.append((*row[:5], registered.get(key, row[4]), *row[6:]))
        for key, sid in registered.items():
            if key not in self._fresh and key in self._known:
                rows.append((*self._known[key][:5], sid, *self._known[key][6:]))
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            write(
                self.store.conn,
                lambda c: c.executemany(
                    f"INSERT OR REPLACE INTO scanned_files ({_CACHE_COLUMNS}) VALUES ({marks})",
                    rows,
                ),
            )


@dataclass(slots=True)
class ScanResult:
    """What a scan registered: sessions seen and chain files newly appended."""

    found: list[Found]
    appended: int


def default_roots(agent: str, home: Path | None = None) -> list[Path]:
    """Where ``agent`` writes sessions by default."""
    home = home or Path(os.path.expanduser("~"))
    if agent == "claude-code":
        return [home / ".claude" / "projects"]
    if agent == "codex":
        codex = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else None
        base = codex or home / ".codex"
        return [base / "sessions", base / "archived_sessions"]
    if agent == "gemini":
        return [home / ".gemini" / "tmp"]
    if agent == "opencode":
        xdg = os.environ.get("XDG_DATA_HOME")
        return [Path(xdg) / "opencode" if xdg else home / ".local" / "share" / "opencode"]
    if agent == "pi":
        return [home / ".pi" / "agent" / "sessions"]
    raise SourceError(agent, f"unknown agent; choose one of: {', '.join(AGENTS)}")


def _head_objects(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects on the first lines of a JSONL file (bad lines skipped)."""
    try:
        with path.open("rb") as fh:
            for k, raw in enumerate(fh):
                if k >= _HEAD_LINES:
                    return
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict):
                    yield obj
    except OSError:
        return


def _mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None


def _claude(path: Path) -> Found | None:
    found = Found("claude-code", path.stem, path, updated=_mtime(path))
    found.sidechain = "subagents" in path.parts or path.name.startswith("agent-")
    sid = None
    for obj in _head_objects(path):
        if sid is None and (sid := _text(obj.get("sessionId"))) is not None:
            # Sub-agent files of Claude Code 2.0 sit next to their parent, named by its
            # file stem but carrying the parent's sessionId: their entries are sidechains.
            found.sidechain = found.sidechain or obj.get("isSidechain") is True
        found.cwd = found.cwd or _text(obj.get("cwd"))
        found.started = found.started or parse_timestamp(obj.get("timestamp"))
        if found.title is None and obj.get("type") == "user" and not obj.get("isMeta"):
            message = obj.get("message")
            if isinstance(message, dict):
                found.title = request_title(content_text(message.get("content")))
        if sid and found.cwd and found.started and found.title:
            break
    found.session_id = sid or path.stem
    found.slug = _claude_slug(path)
    return found


def _claude_slug(path: Path) -> str | None:
    """The file's ``slug``: in its first lines or, once assigned, on its last ones."""
    try:
        with path.open("rb") as fh:
            match = _SLUG.search(fh.read(_HEAD_BYTES))
            if match is None:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - _TAIL_BYTES))
                tail = list(_SLUG.finditer(fh.read()))
                match = tail[-1] if tail else None
    except OSError:
        return None
    return match.group(1).decode("utf-8", "replace") if match else None


def _codex(path: Path) -> Found | None:
    heads = _head_objects(path)
    meta = next(heads, None)
    payload = meta.get("payload") if meta and meta.get("type") == "session_meta" else None
    payload = payload if isinstance(payload, dict) else {}
    sid = _text(payload.get("id"))
    if sid is None:
        match = _UUID.search(path.name)
        sid = match.group(1) if match else path.stem
    started = parse_timestamp(payload.get("timestamp")) or parse_timestamp(
        (meta or {}).get("timestamp")
    )
    title = _first_request(heads, "response_item", "payload")
    cwd = _text(payload.get("cwd"))
    return Found("codex", sid, path, cwd, title, started, _mtime(path))


def _gemini(path: Path) -> Found | None:
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return None
    match = _GEMINI_ID.search(head)
    sid = match.group(1).decode("utf-8", "replace") if match else path.stem
    started = None
    stamp = re.search(rb'"startTime"\s*:\s*"([^"]+)"', head)
    if stamp:
        started = parse_timestamp(stamp.group(1).decode("ascii", "replace"))
    cwd = _gemini_project_root(path)
    return Found("gemini", sid, path, cwd, _gemini_title(head), started, _mtime(path))


def _gemini_project_root(path: Path) -> str | None:
    """The project directory Gemini CLI wrote to ``tmp/<project>/.project_root`` beside ``chats/``.

    A chat's head holds no cwd (the reader finds it later in the session context), so
    without this file ``sessions list --cwd`` and ``restore --latest --cwd`` miss the session.
    """
    try:
        with (path.parent.parent / ".project_root").open("rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return None
    text = raw.decode("utf-8", "replace").strip()
    return text if text and "\n" not in text else None


_GEMINI_USER = re.compile(rb'"type"\s*:\s*"user"\s*,\s*"content"\s*:\s*("(?:[^"\\]|\\.)*"|\[)')


def _gemini_title(head: bytes) -> str | None:
    """The first user request in the head of a Gemini chat (legacy JSON or JSONL)."""
    for match in _GEMINI_USER.finditer(head):
        raw = match.group(1)
        if raw == b"[":  # content as parts: [{"text": ...}]
            parts = re.match(rb'\[\s*\{\s*"text"\s*:\s*("(?:[^"\\]|\\.)*")', head[match.start(1) :])
            raw = parts.group(1) if parts else b'""'
        try:
            title = request_title(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
        if title:
            return title
    return None


def _pi(path: Path) -> Found | None:
    heads = _head_objects(path)
    header = next(heads, None) or {}
    sid = _text(header.get("id")) if header.get("type") == "session" else None
    started = parse_timestamp(header.get("timestamp"))
    cwd = _text(header.get("cwd"))
    title = _first_request(heads, "message", "message")
    return Found("pi", sid or path.stem, path, cwd, title, started, _mtime(path))


def _first_request(objs: Iterator[dict[str, Any]], kind: str, key: str) -> str | None:
    """The title of the first typed user request among entries ``{"type": kind, key: msg}``."""
    for obj in objs:
        message = obj.get(key)
        if obj.get("type") != kind or not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            title = request_title(content_text(message.get("content")))
            if title:
                return title
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_FILE_RULES: dict[str, tuple[tuple[str, ...], Callable[[Path], Found | None]]] = {
    "claude-code": (("*.jsonl",), _claude),
    "codex": (("rollout-*.jsonl",), _codex),
    "gemini": (("session-*.json", "session-*.jsonl"), _gemini),
    "pi": (("*.jsonl",), _pi),
}


def _files(root: Path, patterns: Sequence[str]) -> list[Path]:
    out: set[Path] = set()
    for pattern in patterns:
        out.update(p for p in root.rglob(pattern) if p.is_file())
    return sorted(out)


def _belongs(path: Path, agent: str) -> bool:
    try:
        return detect(path).name == agent
    except SourceError:
        return False


class _Detector:
    """Format detection of candidate files, once per file; reports each non-log once."""

    def __init__(self, sink: WarningSink) -> None:
        self.sink = sink
        self._seen: dict[Path, str | None] = {}

    def agent_of(self, path: Path) -> str | None:
        if path not in self._seen:
            try:
                self._seen[path] = detect(path).name
            except SourceError as exc:
                self._seen[path] = None
                # The --agent hint of `restore` means nothing to a scan.
                reason = exc.reason.partition("; force one with")[0]
                self.sink.warn(path, 0, f"found by a scan, but {reason}; skipped")
        return self._seen[path]


def _opencode(root: Path, sink: WarningSink) -> list[Found]:
    from ..sources.opencode.reader import list_sessions

    sources = [p for p in root.rglob("opencode.db") if p.is_file()]
    sources += [p for p in root.rglob("storage") if (p / "session").is_dir()]
    found: list[Found] = []
    for src in sorted(sources):
        try:
            infos = list_sessions(src, sink)
        except (SourceError, OSError) as exc:
            sink.warn(src, 0, f"cannot list opencode sessions: {exc}")
            continue
        for info in infos:
            sid = info.get("id")
            if not isinstance(sid, str) or info.get("parent_id"):
                continue
            found.append(
                Found(
                    "opencode",
                    sid,
                    src,
                    _text(info.get("directory")),
                    _text(info.get("title")),
                    info.get("created"),
                    info.get("updated"),
                )
            )
    return found


def describe(path: Path, agent: str) -> Found | None:
    """What ``path`` says about itself cheaply (its first lines): None for other formats."""
    rule = _FILE_RULES.get(agent)
    return rule[1](path) if rule is not None else None


def find_sessions(
    agents: Sequence[str],
    roots: Sequence[Path] | None,
    sink: WarningSink,
    cache: ScanCache | None = None,
) -> list[Found]:
    """Session files of ``agents`` under ``roots`` (default: each agent's own locations).

    Sub-agent files are left out, Claude Code files continued under one slug take the
    id of the oldest of them. With ``cache``, files unchanged since an earlier scan are
    not read (their ``registered_id`` is set).
    """
    found: list[Found] = []
    detector = _Detector(sink)
    for agent in agents:
        for root in roots if roots is not None else default_roots(agent):
            if not root.is_dir():
                continue
            if agent == "opencode":
                found.extend(_opencode(root, sink))
                continue
            patterns, describe_file = _FILE_RULES[agent]
            for path in _files(root.resolve(), patterns):
                hit, item, st = cache.lookup(path) if cache is not None else (False, None, None)
                if not hit:
                    item = describe_file(path) if detector.agent_of(path) == agent else None
                    if item is not None and item.sidechain:
                        item = None
                    if cache is not None and st is not None:
                        cache.note(path, st, item)
                if item is not None:
                    found.append(item)
    return merge_slugs(found)


def merge_slugs(found: list[Found]) -> list[Found]:
    """Give Claude Code files of one folder that share a slug the id of the oldest.

    The reader stitches such a chain into one session (all ids kept in its
    ``session_ids``), so it must be one session in the store and in a batch too.
    """
    groups: dict[tuple[Path, str], list[Found]] = {}
    for f in found:
        if f.agent == "claude-code" and f.slug:
            groups.setdefault((f.path.parent, f.slug), []).append(f)
    for group in groups.values():
        if len({f.session_id for f in group}) > 1:
            first = min(group, key=_order)
            for f in group:
                f.session_id = first.session_id
    return found


def _order(item: Found) -> tuple[str, str]:
    started = item.started or item.updated
    return (iso_utc(started) if started else "", str(item.path))


def scan(
    store: Store,
    *,
    agent: str | None = None,
    root: Path | None = None,
    sink: WarningSink | None = None,
) -> ScanResult:
    """Find sessions (one agent or all) and register them with their chains."""
    sink = sink or WarningSink()
    agents = [agent] if agent else list(AGENTS)
    for name in agents:
        if name not in AGENTS:
            raise SourceError(name, f"unknown agent; choose one of: {', '.join(AGENTS)}")
    cache = ScanCache(store)
    found = find_sessions(agents, [root] if root is not None else None, sink, cache)
    appended = 0
    registered: dict[str, str] = {}
    for item in sorted(found, key=_order):
        if item.registered_id == item.session_id:
            continue  # unchanged since the scan that registered it
        if item.agent != "opencode":
            registered[str(item.path)] = item.session_id
        appended += store.register(
            item.session_id,
            item.agent,
            str(item.path.resolve()),
            cwd=item.cwd,
            title=item.title,
            source="scan",
            created_at=iso_utc(first) if (first := item.started or item.updated) else None,
            updated_at=iso_utc(item.updated) if item.updated else None,
        )
    cache.save(registered)
    return ScanResult(found, appended)
