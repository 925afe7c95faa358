"""One pass over a Codex thread's chain of rollout files, yielding unified messages.

Memory stays bounded: messages wait in a short window (one model response, at most
``_WINDOW`` messages) so that an event copy can meet its response item and a
``token_count`` can give its usage to the response it measured; then they are yielded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...fields import parse_timestamp
from ...model import Message, Usage
from ..base import iter_json_lines
from . import items
from .events import CHANNELS, Header, event_copy, is_compaction_event, parent_spawn

_WINDOW = 512
_RECENT = 1024
_KNOWN_LINES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_RESPONSE_TYPES = frozenset(
    {"message", "reasoning", *items.TOOL_CALL_TYPES, *items.TOOL_OUTPUT_TYPES}
)

_Key = tuple[str, str, str, str]


class _Recent(OrderedDict[Any, Any]):
    """An insertion-ordered dict that forgets its oldest entries past ``limit``."""

    def __init__(self, limit: int = _RECENT) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any = None) -> None:
        self[key] = value
        self.move_to_end(key)
        if len(self) > self.limit:
            self.popitem(last=False)


def _kind(obj: dict[str, Any]) -> str | None:
    kind = obj.get("type")
    return kind if isinstance(kind, str) else None


def _keys(m: Message) -> set[_Key]:
    """Dedupe keys of a message in every channel (a reasoning summary: each part too)."""
    texts = {items.dedupe_key(m.text)}
    if m.type == "thinking":
        texts |= {items.dedupe_key(t) for t in m.text.split("\n\n")}
    texts.discard("")
    return {(ch, m.role, m.type, t) for ch in CHANNELS for t in texts}


@dataclass(slots=True)
class _File:
    """Per-file state: whose thread this file is and where a replayed prefix ends."""

    index: int
    path: Path
    own_id: str | None = None
    cutoff: datetime | None = None
    seen_object: bool = False


class ThreadStream:
    """The de-duplicating, usage-attaching state machine over one thread's lines.

    ``pending`` is the window not yet yielded. An event copy waits there in ``waiting``
    until its response item arrives (then the copy is dropped); response items already
    read are remembered in ``seen`` (a later copy is dropped); copies released before
    their response item arrived are remembered in ``shown_events`` (that response item
    is dropped). All three forget old entries, so memory stays bounded.
    """

    def __init__(self, header: Header, sink: WarningSink) -> None:
        self.header = header
        self.sink = sink
        self.pending: list[Message] = []
        self.ready: list[Message] = []
        self.waiting: dict[_Key, Message] = {}
        self.seen = _Recent()
        self.shown_events = _Recent()
        self.tool_names = _Recent()
        self.model: str | None = None
        self.last_total: Any = None
        self.compaction_open = False
        self.compaction_output = False
        self.compaction_usage: Usage | None = None
        #: The interrupt marker of the turn in progress (``<turn_aborted>`` or the event's).
        self.interrupt: Message | None = None

    # -- output -------------------------------------------------------------------------------

    def _emit(self, m: Message) -> None:
        self.pending.append(m)
        if m.meta.get("injected") == "interrupt":
            self.interrupt = m
        elif m.type == "text" and m.role in ("user", "assistant"):
            self.interrupt = None
        self.compaction_open = m.type == "compaction"
        if len(self.pending) >= _WINDOW:
            self.flush()

    def flush(self, usage: Usage | None = None, group: str | None = None) -> None:
        """Release the window; ``usage`` goes to its last assistant block without one."""
        if usage is not None:
            home = next(
                (m for m in reversed(self.pending) if m.role == "assistant" and m.usage is None),
                None,
            )
            if home is not None:
                home.usage = usage
            elif self.compaction_output:
                self.compaction_usage = usage  # the compaction call's own tokens
        if group is not None:
            for m in self.pending:
                if m.role == "assistant" and m.group is None:
                    m.group = group
        for key in self.waiting:
            self.shown_events.put(key)
        self.waiting.clear()
        self.ready.extend(self.pending)
        self.pending.clear()

    def take(self) -> list[Message]:
        """The messages released since the last call."""
        out, self.ready = self.ready, []
        return out

    # -- lines --------------------------------------------------------------------------------

    def line(self, obj: dict[str, Any], f: _File, lineno: int) -> None:
        """Feed one JSON object (line ``lineno`` of file ``f``) to the state machine."""
        first = not f.seen_object
        f.seen_object = True
        kind = _kind(obj)
        ts = parse_timestamp(obj.get("timestamp"))
        if "payload" in obj:
            if f.cutoff is not None and ts is not None and ts < f.cutoff:
                return  # the parent's opening lines, re-played into a child thread
            payload = obj["payload"]
            if kind not in _KNOWN_LINES:
                return
            if not isinstance(payload, dict):
                self.sink.warn(f.path, lineno, f"{kind} payload is not an object; skipped")
                return
            where = items.Where(f.index, lineno, ts, self.model)
            if kind == "response_item":
                envelope_meta = obj.get("metadata")
                if isinstance(envelope_meta, dict) and envelope_meta.get("compaction_output"):
                    self.compaction_output = True  # the summary the `compacted` line carries
                    return
                self._response_item(payload, where)
            elif kind == "event_msg":
                self._event_msg(payload, where)
            elif kind == "session_meta":
                self._session_meta(payload, where, f)
            elif kind == "turn_context":
                self._turn_context(payload)
            else:
                self._compacted(payload, where)
        elif "record_type" in obj:
            return  # legacy state snapshots carry no conversation
        elif kind in _RESPONSE_TYPES:
            self._response_item(obj, items.Where(f.index, lineno, ts, self.model))
        elif first and kind is None and isinstance(obj.get("id"), str):
            self.header.from_meta(obj, ts)  # legacy pre-envelope meta line

    def _session_meta(self, p: dict[str, Any], where: items.Where, f: _File) -> None:
        sid = p.get("id") if isinstance(p.get("id"), str) else None
        if f.own_id is None:
            f.own_id = sid
            if parent_spawn(p) is not None:
                f.cutoff = parse_timestamp(p.get("timestamp")) or where.timestamp
        elif sid != f.own_id:
            return  # another thread's meta, re-played
        self.header.from_meta(p, parse_timestamp(p.get("timestamp")) or where.timestamp)

    def _turn_context(self, p: dict[str, Any]) -> None:
        self.header.from_turn_context(p)
        model = p.get("model")
        if isinstance(model, str) and model:
            self.model = model

    def _compacted(self, p: dict[str, Any], where: items.Where) -> None:
        m = items.compaction(p, where)
        m.usage, self.compaction_usage, self.compaction_output = self.compaction_usage, None, False
        last = self.pending[-1] if self.pending else None
        if (
            self.compaction_open
            and last is not None
            and last.type == "compaction"
            and last.meta.get("from_event")
        ):
            self.pending[-1] = m  # the UI notice came first: this line is the same event
            return
        self._emit(m)

    def _response_item(self, p: dict[str, Any], where: items.Where) -> None:
        kind = _kind(p)
        if kind is None and "role" in p and "content" in p:
            kind = "message"  # some exporters drop the item type of plain messages
        m: Message | None
        if kind == "message":
            m = items.response_message(p, where)
            if m is not None and m.role != "system":
                m = self._pair(m)
        elif kind == "reasoning":
            m = items.reasoning(p, where)
            m = self._pair(m) if m is not None else None
        elif kind in items.TOOL_CALL_TYPES:
            m = items.tool_call(p, where)
            if m is not None and m.tool_call_id and m.tool_name:
                self.tool_names.put(m.tool_call_id, m.tool_name)
        elif kind in items.TOOL_OUTPUT_TYPES:
            call_id = p.get("call_id")
            name = self.tool_names.get(call_id) if isinstance(call_id, str) else None
            m = items.tool_output(p, where, name)
        else:
            return
        if m is not None:
            self._emit(m)

    def _pair(self, m: Message) -> Message | None:
        """A response item meets its event copies: drop the copies (or itself if one was shown)."""
        keys = _keys(m)
        for key in keys:
            twin = self.waiting.pop(key, None)
            if twin is not None:
                self.pending = [x for x in self.pending if x is not twin]
        shown = [key for key in keys if key in self.shown_events]
        for key in keys:
            if key in shown:
                del self.shown_events[key]
            else:
                self.seen.put(key)
        return None if shown else m

    def _event_msg(self, p: dict[str, Any], where: items.Where) -> None:
        kind = p.get("type")
        if kind == "token_count":
            self._token_count(p, where)
        elif kind == "task_complete":
            self.flush()
        elif kind == "turn_aborted":
            self._turn_aborted(p, where)
        elif is_compaction_event(p):
            if not self.compaction_open:
                self._emit(items.compaction_event(where))
        else:
            copy = event_copy(p, where)
            if copy is None:
                return
            channel, m = copy
            key = (channel, m.role, m.type, items.dedupe_key(m.text))
            if key in self.seen:
                del self.seen[key]  # its response item is already in
                return
            self.waiting[key] = m
            self._emit(m)

    def _turn_aborted(self, p: dict[str, Any], where: items.Where) -> None:
        """The user stopped the turn: one interrupt marker per turn. Builds that write the
        ``<turn_aborted>`` user message have it already (it gets the reason); others get a
        system marker here."""
        reason = p.get("reason") if isinstance(p.get("reason"), str) else None
        if self.interrupt is not None:
            if reason:
                self.interrupt.meta.setdefault("reason", reason)
            return
        meta: dict[str, Any] = {"synthetic": True, "injected": "interrupt", "from_event": True}
        if reason:
            meta["reason"] = reason
        text = f"Turn aborted ({reason})" if reason else "Turn aborted"
        self._emit(items.new_message(where, None, "system", "text", text, meta=meta))

    def _token_count(self, p: dict[str, Any], where: items.Where) -> None:
        info = p.get("info")
        if isinstance(info, dict):
            total = info.get("total_token_usage")
            if total is not None and total == self.last_total:
                return  # re-broadcast of the previous count, not a new model call
            self.last_total = total
            usage = items.usage_of(info.get("last_token_usage"))
        else:
            usage = items.usage_of(p)  # oldest builds: counts at the top level
        if usage is not None:
            self.flush(usage, group=f"response:{where.ref}")


def _own_id_from_name(path: Path) -> str | None:
    stem = path.stem
    return stem[-36:] if len(stem) >= 36 and stem[-36:].count("-") == 4 else None


def iter_thread(files: Sequence[Path], sink: WarningSink, header: Header) -> Iterator[Message]:
    """Stream one thread's messages across its chain of files, oldest first.

    A line repeated verbatim in a later file of the chain (a resume that re-plays
    history) is read once. ``header`` is filled in as the lines go by.
    """
    stream = ThreadStream(header, sink)
    earlier: set[int] = set()
    chained = len(files) > 1
    for index, path in enumerate(files):
        f = _File(index, path)
        current: set[int] = set()
        try:
            for lineno, obj in iter_json_lines(path, sink):
                if chained:
                    digest = hash(orjson.dumps(obj))
                    if digest in earlier:
                        continue
                    if index < len(files) - 1:
                        current.add(digest)
                try:
                    stream.line(obj, f, lineno)
                except (TypeError, ValueError, AttributeError, KeyError) as exc:
                    sink.warn(path, lineno, f"unreadable {obj.get('type')!r} line ({exc}); skipped")
                yield from stream.take()
        except OSError as exc:
            sink.warn(path, 0, f"cannot read file ({exc.strerror or exc}); skipped")
        earlier |= current
        stream.flush()
        yield from stream.take()
    if header.id is None and files:
        header.id = _own_id_from_name(files[0]) or files[0].stem
