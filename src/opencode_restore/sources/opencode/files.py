"""opencode sessions kept in files: the JSON storage tree, ``opencode export`` and
the ``opencode run --format json`` event stream.

* Storage tree (builds before the SQLite database): ``storage/session/<project>/<ses>.json``
  (session info), ``storage/message/<sessionID>/<msg>.json`` (message info) and
  ``storage/part/<messageID>/<prt>.json`` (one part each).
* Export: ``{"info": <session info>, "messages": [{"info": ..., "parts": [...]}, ...]}``;
  stdout may carry a status line before the first ``{`` and may be cut short when
  piped (opencode issues #12130, #14948): the complete messages before the cut are kept.
* Event stream: one JSON object per line, ``{"type", "timestamp", "sessionID", "part"}``
  (or ``"error"``). It never holds the user's prompt and has no message infos, so
  every part is the assistant's; ``entry_index`` there is the line number.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...errors import SourceError
from ..base import iter_json_lines, loads_capped
from .convert import NumberedPart, RawMessage, as_dict, as_int, part_sort_key

_INFO_KEY = re.compile(r'"info"\s*:\s*')
_MESSAGES_KEY = re.compile(r'"messages"\s*:\s*\[')


def storage_root(path: Path) -> tuple[Path, Path | None] | None:
    """``(storage dir, chosen session file)`` when ``path`` is in an opencode storage tree.

    Accepts the ``storage`` directory, its parent, or one ``session/<project>/<ses>.json``.
    """
    if path.is_file():
        root = path.parent.parent.parent
        if path.suffix == ".json" and path.parent.parent.name == "session":
            return (root, path) if (root / "message").is_dir() else None
        return None
    for candidate in (path, path / "storage"):
        if (candidate / "session").is_dir():
            return candidate, None
    return None


def _safe(name: Any) -> bool:
    """An id that can name a directory inside the tree (ids come from file contents)."""
    return isinstance(name, str) and bool(name) and not name.startswith(".") and (
        "/" not in name and "\\" not in name
    )  # fmt: skip


class TreeStore:
    """The sessions of one storage tree."""

    kind = "storage"

    def __init__(self, root: Path, chosen: Path | None, sink: WarningSink) -> None:
        self.path = root
        self.sink = sink
        self.default_id: str | None = None
        if chosen is not None:
            info = self._load(chosen)
            if info is None:
                raise SourceError(str(chosen), "not an opencode session file")
            self.default_id = str(info["id"])
        self._sessions: list[dict[str, Any]] | None = None

    def close(self) -> None:
        """Nothing stays open between reads."""

    def _load(self, path: Path) -> dict[str, Any] | None:
        try:
            value = loads_capped(path.read_bytes())
        except OSError as exc:
            self.sink.warn(path, 1, f"cannot read ({exc.strerror}); skipped")
            return None
        except orjson.JSONDecodeError as exc:
            self.sink.warn(path, exc.lineno, f"invalid JSON ({exc.msg}); skipped")
            return None
        if not isinstance(value, dict):
            self.sink.warn(path, 1, "not a JSON object; skipped")
            return None
        if not _safe(value.get("id")):
            value["id"] = path.stem
        return value

    def _objects(self, files: Iterable[Path]) -> list[dict[str, Any]]:
        found = (self._load(f) for f in sorted(files))
        return [v for v in found if v is not None]

    def _folder(self, kind: str, name: Any) -> list[dict[str, Any]]:
        """The objects in ``storage/<kind>/<name>/`` (``name`` is an id from file contents)."""
        return self._objects((self.path / kind / name).glob("*.json")) if _safe(name) else []

    def sessions(self) -> list[dict[str, Any]]:
        """Every session info in the tree."""
        if self._sessions is None:
            self._sessions = self._objects(self.path.glob("session/*/*.json"))
        return self._sessions

    def messages(self, session_id: str) -> Iterator[RawMessage]:
        """Stream ``(message info, numbered parts)`` of one session, oldest first."""
        infos = self._folder("message", session_id)
        infos.sort(key=lambda i: (as_int(as_dict(i.get("time")).get("created")), str(i["id"])))
        ordinal = 0
        for info in infos:
            parts = self._folder("part", info["id"])
            parts.sort(key=part_sort_key)
            yield RawMessage(info, [(ordinal + i, p) for i, p in enumerate(parts, 1)], ordinal)
            ordinal += len(parts)


def _salvage(text: str) -> dict[str, Any]:
    """The session info and every complete message of a cut-short export."""
    decode = json.JSONDecoder().raw_decode
    doc: dict[str, Any] = {"messages": []}
    info_at, messages_at = _INFO_KEY.search(text), _MESSAGES_KEY.search(text)
    if info_at and (messages_at is None or info_at.start() < messages_at.start()):
        with contextlib.suppress(ValueError, RecursionError):
            doc["info"] = decode(text, info_at.end())[0]
    if messages_at is None:
        return doc
    pos = messages_at.end()
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            message, pos = decode(text, pos)
        except (ValueError, RecursionError):
            return doc
        doc["messages"].append(message)


def load_export(path: Path, sink: WarningSink) -> dict[str, Any]:
    """Parse an ``opencode export`` file, skipping junk before the first ``{`` and
    keeping what a truncated export still holds."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(str(path), f"cannot read: {exc.strerror}") from exc
    start = data.find(b"{")
    if start < 0:
        raise SourceError(str(path), "no JSON object found; not an opencode export")
    if start > 0:
        sink.warn(path, 1, f"skipped {start} bytes before the first '{{'")
    try:
        doc = loads_capped(data[start:])
    except orjson.JSONDecodeError as exc:
        line = data.count(b"\n", 0, start) + exc.lineno
        doc = _salvage(data[start:].decode("utf-8", "replace"))
        kept = len(doc["messages"])
        sink.warn(path, line, f"export is truncated or invalid ({exc.msg}); kept {kept} messages")
    info = as_dict(as_dict(doc).get("info"))
    if not isinstance(info.get("id"), str):
        raise SourceError(str(path), "not an opencode export (no session info)")
    return {"info": info, "messages": as_dict(doc).get("messages")}


class ExportStore:
    """The one session of an ``opencode export`` file."""

    kind = "export"

    def __init__(self, path: Path, sink: WarningSink) -> None:
        self.path = path
        self.sink = sink
        doc = load_export(path, sink)
        self.info: dict[str, Any] = doc["info"]
        self.default_id: str | None = self.info["id"]
        messages = doc["messages"]
        if not isinstance(messages, list):
            sink.warn(path, 1, "export has no messages list")
            messages = []
        self._messages: list[Any] = messages

    def close(self) -> None:
        """Nothing stays open."""

    def sessions(self) -> list[dict[str, Any]]:
        """The exported session's info."""
        return [self.info]

    def messages(self, session_id: str) -> Iterator[RawMessage]:
        """``(message info, numbered parts)`` in export order (opencode's own order)."""
        ordinal = 0
        for n, entry in enumerate(self._messages, 1):
            raw_parts = as_dict(entry).get("parts")
            if not isinstance(entry, dict) or not isinstance(raw_parts, list):
                self.sink.warn(self.path, ordinal, f"message #{n} has no parts list; skipped")
                continue
            parts = [p for p in raw_parts if isinstance(p, dict)]
            if len(parts) < len(raw_parts):
                self.sink.warn(self.path, ordinal, f"message #{n}: non-object parts skipped")
            numbered = [(ordinal + i, p) for i, p in enumerate(parts, 1)]
            yield RawMessage(as_dict(entry.get("info")), numbered, ordinal)
            ordinal += len(parts)


def event_line(head: bytes) -> dict[str, Any] | None:
    """The first event of a ``run --format json`` stream, if ``head`` starts one."""
    first = head.split(b"\n", 1)[0]
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    if isinstance(obj, dict) and isinstance(obj.get("sessionID"), str) and "type" in obj:
        return obj if isinstance(obj.get("part"), dict) or "error" in obj else None
    return None


class EventStore:
    """The session of an ``opencode run --format json`` event stream."""

    kind = "events"

    def __init__(self, path: Path, sink: WarningSink) -> None:
        self.path = path
        self.sink = sink
        # The first line names the session; problems are reported when the stream is read.
        first = next((o for _, o in iter_json_lines(path, WarningSink()) if "sessionID" in o), None)
        if first is None:
            raise SourceError(str(path), "no opencode event names its session")
        self.default_id: str | None = str(first["sessionID"])
        self._created = first.get("timestamp")

    def close(self) -> None:
        """Nothing stays open between reads."""

    def sessions(self) -> list[dict[str, Any]]:
        """The one session the stream belongs to (it names no title or directory)."""
        return [{"id": self.default_id, "time": {"created": self._created}}]

    def messages(self, session_id: str) -> Iterator[RawMessage]:
        """Stream assistant messages, grouping consecutive parts by ``messageID``."""
        info: dict[str, Any] = {}
        parts: list[NumberedPart] = []
        for lineno, event in iter_json_lines(self.path, self.sink):
            part = event.get("part")
            mid = as_dict(part).get("messageID") or f"line:{lineno}"
            if parts and mid != info["id"]:
                yield RawMessage(info, parts)
                parts = []
            if isinstance(part, dict):
                if not parts:
                    info = {
                        "id": mid,
                        "role": "assistant",
                        "time": {"created": event.get("timestamp")},
                    }
                parts.append((lineno, part))
            elif "error" in event:
                created = {"created": event.get("timestamp")}
                yield RawMessage(
                    {"id": mid, "role": "assistant", "error": event["error"], "time": created},
                    [],
                    lineno,
                )
            else:
                self.sink.warn(
                    self.path, lineno, f"event {event.get('type')!r} has no part; skipped"
                )
        if parts:
            yield RawMessage(info, parts)
