"""Replaying a Gemini CLI chat recording into its full message history.

See ``gemini`` for the semantics (upserts, ``$rewindTo``, ``$set`` checkpoints as
compactions). This module only rebuilds the ordered history of raw records and
compaction markers; turning records into unified messages is ``gemini``'s job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...model import Compaction
from ..base import iter_json_lines
from ..jsonstream import json_start, stream_items, top_level

#: Records that are notes to the user, never part of the model's context.
#: Messages read from a legacy session: real ones hold thousands; a million tiny records
#: is a memory bomb (every record is kept for the replay), not a session.
MAX_LEGACY_MESSAGES = 500_000
_NOTE_TYPES = frozenset({"info", "error", "warning"})
_METADATA_KEYS = frozenset(
    {"sessionId", "projectHash", "startTime", "lastUpdated", "kind", "directories", "summary"}
)


@dataclass(slots=True)
class Slot:
    """One place in the full history: a message record, or a compaction marker."""

    file_index: int
    line: int
    record: dict[str, Any] | None = None
    compaction: Compaction | None = None
    synthetic: bool = False


@dataclass(slots=True)
class Replay:
    """The replayed state of a chain: full history, current context ids, metadata."""

    path: Path
    sink: WarningSink
    history: dict[str, Slot] = field(default_factory=dict)
    current: dict[str, None] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    #: Tool call ids the records hold (calls and responses).
    calls: set[str] = field(default_factory=set)
    #: A process started (a header line) and has not written a record yet: its
    #: checkpoints load the context it starts from, they never roll anything back.
    fresh: bool = False
    #: Id a compaction gave a message it kept -> the history key of that message
    #: (Gemini CLI 0.61 restates the kept turns under new ids).
    alias: dict[str, str] = field(default_factory=dict)
    #: What each such copy said when it was written (``signature``): re-writing the
    #: copy unchanged is not an edit of the message.
    restated: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def upsert(self, rec: dict[str, Any], file_index: int, line: int) -> None:
        """Add a message record, or replace the one with its id (keeping its place)."""
        rid = rec["id"]
        self.fresh = False
        self.calls.update(call_ids(rec))
        if rid in self.alias:
            if self.restated.get(rid) == signature(rec):
                self.current[self.alias[rid]] = None
                return  # the copy a compaction kept, written again: the message stands
            rid = self.alias[rid]
        old = self.history.get(rid)
        if old is None:
            self.history[rid] = Slot(file_index, line, rec)
        elif old.record != rec:
            old.record, old.file_index, old.line = rec, file_index, line
        self.current[rid] = None

    def rewind(self, target: str, line: int) -> None:
        """Drop ``target`` and everything after it; an unknown id clears all (as Gemini).

        A message a compaction kept (``alias``) comes after the compaction's summary in
        the model's context: rewinding to it drops it and what followed in the context,
        the compaction stays.
        """
        if target in self.alias and self.alias[target] in self.current:
            after = list(self.current)
            for key in after[after.index(self.alias[target]) :]:
                self.history.pop(key, None)
                self.current.pop(key, None)
            self._prune_aliases()
            return
        if target not in self.history:
            self.sink.warn(self.path, line, f"$rewindTo unknown id {target!r}: history cleared")
            self.history.clear()
            self.current.clear()
            self.alias.clear()
            self.restated.clear()
            return
        keys = list(self.history)
        for key in keys[keys.index(target) :]:
            del self.history[key]
            self.current.pop(key, None)
        self._prune_aliases()

    def _prune_aliases(self) -> None:
        gone = [a for a, key in self.alias.items() if key not in self.history]
        for a in gone:
            del self.alias[a]
            self.restated.pop(a, None)

    def checkpoint(self, records: list[Any], file_index: int, line: int) -> None:
        """Apply a ``messages`` checkpoint: append, roll back, or mark a compaction."""
        recs: list[dict[str, Any]] = []
        for rec in records:
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
                self.sink.warn(self.path, line, "checkpoint message without a string id; skipped")
                continue
            recs.append(rec)
        ids: list[str] = []
        new: list[dict[str, Any]] = []
        for rec in recs:
            key = self.alias.get(rec["id"], rec["id"])
            if key not in self.history and self._restates_results(rec):
                continue  # the model's copy of tool results the records already hold
            ids.append(key)
            if key not in self.history:
                new.append(rec)
        if not ids:
            return  # Gemini ignores an empty checkpoint and keeps its message log
        kept = set(ids)
        current = list(self.current)
        # A note (``info``...) is not in the model's context: leaving it out drops nothing.
        context = [i for i in current if not self._is_note(i)]
        dropped = [i for i in context if i not in kept]
        if self.fresh:
            # A starting process sets its context (the injected session context, then
            # on --resume the history restated): what it leaves out is not rolled back.
            for rec in new:
                self.history[rec["id"]] = Slot(file_index, line, rec)
        elif dropped and not new and context[-len(dropped) :] == dropped:
            for i in current[current.index(dropped[0]) :]:
                if i not in kept:
                    del self.history[i]  # the newest messages, and the notes among them
        elif dropped:
            ids = self._compact(recs, current, file_index, line)
        else:
            for rec in new:
                self.history[rec["id"]] = Slot(file_index, line, rec)
        self.current = dict.fromkeys(ids)

    def _is_note(self, key: str) -> bool:
        slot = self.history.get(key)
        return (
            slot is not None
            and slot.record is not None
            and (slot.record.get("type") in _NOTE_TYPES)
        )

    def _restates_results(self, rec: dict[str, Any]) -> bool:
        """A user message made only of responses to calls already recorded.

        Gemini CLI 0.61 restates each answered call as ``<gemini record id>_response``
        in the history a resumed process writes; the result is in the records already.
        """
        content = rec.get("content")
        if rec.get("type") != "user" or not isinstance(content, list) or not content:
            return False
        responses = [p.get("functionResponse") for p in content if isinstance(p, dict)]
        if len(responses) != len(content) or not all(isinstance(r, dict) for r in responses):
            return False
        ids = call_ids(rec)
        return len(ids) == len(content) and ids <= self.calls

    def _kept_suffix(self, recs: list[dict[str, Any]], before: list[str]) -> int:
        """Where the messages a compaction kept start in ``recs`` (``len(recs)``: none).

        The compacted context is the summary turns, then the newest messages of the
        context ``before`` it. Gemini CLI 0.61 restates those under new ids: each is
        matched to its message by ``signature``, newest first, and ``alias``ed to it.
        Notes (``info``, ``error``, ``warning``) are not in the model's context; a
        summary from an earlier compaction is never a kept message.
        """
        context = [k for k in before if k in self.history and not self._is_note(k)]
        start, j = len(recs), len(context) - 1
        aliases: dict[str, str] = {}
        for i in range(len(recs) - 1, -1, -1):
            rec, rid = recs[i], recs[i]["id"]
            key = self.alias.get(rid, rid)
            if j >= 0 and key == context[j]:
                pass  # kept under its own id
            elif key in self.history or j < 0:
                break
            else:
                slot = self.history[context[j]]
                if slot.synthetic or slot.record is None:
                    break
                if signature(slot.record) != signature(rec):
                    if self._restates_results(rec):
                        continue  # a result the records hold in the call, not on a line
                    break
                aliases[rid] = context[j]
            start, j = i, j - 1
        for rid, key in aliases.items():
            self.alias[rid] = key
            self.restated[rid] = signature(next(r for r in recs if r["id"] == rid))
        return start

    def _holder(self, rec: dict[str, Any]) -> str | None:
        """The recorded message that holds every tool call id ``rec`` holds (same type
        first), if it holds any."""
        calls = call_ids(rec)
        if not calls or not calls <= self.calls:
            return None
        holders = [
            (slot.record.get("type") != rec.get("type"), n, key)
            for n, (key, slot) in enumerate(self.history.items())
            if slot.record is not None and not slot.synthetic and calls <= call_ids(slot.record)
        ]
        return min(holders)[2] if holders else None

    def _compact(
        self, recs: list[dict[str, Any]], before: list[str], fi: int, line: int
    ) -> list[str]:
        """Mark a compaction where it happened (after everything recorded so far).

        Its summary turns follow the marker; the messages it kept stay where they were
        said (``first_kept_id`` names the first). Returns the new context's history keys.
        """
        start = self._kept_suffix(recs, before)
        kept_ids = [self.alias.get(r["id"], r["id"]) for r in recs[start:]]
        kept_ids = [k for k in kept_ids if k in self.history]
        summary_recs = []
        for r in recs[:start]:
            if self.alias.get(r["id"], r["id"]) in self.history or self._restates_results(r):
                continue
            holder = self._holder(r)
            if holder is not None:
                # A tool call (or result) already recorded, restated out of order: the
                # call it repeats, never a new one.
                self.alias[r["id"]] = holder
                self.restated[r["id"]] = signature(r)
            else:
                summary_recs.append(r)
        summary = "\n\n".join(parts_text(r.get("content")) for r in summary_recs).strip()
        marker = Slot(
            fi,
            line,
            compaction=Compaction(
                kind="summary" if summary_recs else "trim",
                summary=summary or None,
                first_kept_id=kept_ids[0] if kept_ids else None,
            ),
        )
        self.history[f"{fi}:{line}"] = marker
        for r in summary_recs:
            self.history[r["id"]] = Slot(fi, line, r, synthetic=True)
        ids = [self.alias.get(r["id"], r["id"]) for r in recs]
        return [i for i in ids if i in self.history]

    def read_jsonl(self, path: Path, file_index: int) -> None:
        """Replay an append-only ``.jsonl`` recording, line by line."""
        self.path = path
        for line, obj in iter_json_lines(path, self.sink):
            if "$rewindTo" in obj:
                target = obj["$rewindTo"]
                self.fresh = False
                if isinstance(target, str):
                    self.rewind(target, line)
                else:
                    self.sink.warn(path, line, "$rewindTo is not a string; skipped")
            elif isinstance(obj.get("id"), str):
                self.upsert(obj, file_index, line)
            elif "$set" in obj:
                if isinstance(obj["$set"], dict):
                    self.set_meta(obj["$set"], file_index, line)
                else:
                    self.sink.warn(path, line, "$set is not an object; skipped")
            elif _METADATA_KEYS & obj.keys():
                self.set_meta(obj, file_index, line)
                # Each process writes a header line before anything else.
                self.fresh = "startTime" in obj
            else:
                self.sink.warn(path, line, "unrecognised Gemini record; skipped")

    def read_legacy(self, path: Path, file_index: int) -> None:
        """Replay a legacy whole-object ``.json`` (entry index = position in ``messages``)."""
        self.path = path
        # Streamed: read whole, a 185 MB session took 2.2-3.3 GB (its bytes and every
        # record built at once); the messages come one at a time, up to a cap.
        start = json_start(path, self.sink)
        meta = None if start is None else top_level(path, "messages", self.sink, start)
        if start is None or meta is None:
            return  # reported
        listed = isinstance(meta.pop("messages", None), list)
        self.set_meta(meta, file_index, 1)
        if not listed:
            self.sink.warn(path, 1, "legacy session has no messages list")
            return
        for n, rec in enumerate(stream_items(path, "messages.item", self.sink, start=start), 1):
            if n > MAX_LEGACY_MESSAGES:
                why = f"over {MAX_LEGACY_MESSAGES:,} messages; the rest skipped"
                self.sink.warn(path, 0, why)
                break
            if isinstance(rec, dict) and isinstance(rec.get("id"), str):
                self.upsert(rec, file_index, n)
            else:
                self.sink.warn(path, 0, f"messages[{n - 1}] has no string id; skipped")

    def set_meta(self, update: dict[str, Any], file_index: int, line: int) -> None:
        """Merge a metadata update; a non-empty ``messages`` list in it is a checkpoint."""
        session_id = update.get("sessionId")
        known = self.meta.get("sessionId")
        if isinstance(session_id, str) and isinstance(known, str) and session_id != known:
            self.sink.warn(self.path, line, f"sessionId {session_id!r} differs from {known!r}")
        messages = update.get("messages")
        if isinstance(messages, list):
            self.checkpoint(messages, file_index, line)
        # Every process writes its own startTime: the session started at the first.
        first = {"startTime": self.meta["startTime"]} if "startTime" in self.meta else {}
        self.meta.update((k, v) for k, v in update.items() if k != "messages")
        self.meta.update(first)


def call_ids(rec: dict[str, Any]) -> set[str]:
    """The tool call ids a record holds: its ``toolCalls`` and function parts."""
    found: set[str] = set()
    calls = rec.get("toolCalls")
    content = rec.get("content")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict) and isinstance(call.get("id"), str):
            found.add(call["id"])
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        for key in ("functionCall", "functionResponse"):
            fn = part.get(key)
            if isinstance(fn, dict) and isinstance(fn.get("id"), str):
                found.add(fn["id"])
    return found


def signature(rec: dict[str, Any]) -> tuple[Any, ...]:
    """What a message says, whatever form it is written in: its type and tool call ids,
    or its type and text (reasoning left out).

    A record written as the model's turn (text or ``toolCalls``) and the same turn
    restated in API form (``functionCall``/``functionResponse`` parts) agree.
    """
    calls = call_ids(rec)
    if calls:
        return (rec.get("type"), frozenset(calls))
    return (rec.get("type"), parts_text(rec.get("content")).strip())


def parts_text(content: Any) -> str:
    """Plain text of a string or a list of Gemini parts (function and thought parts left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            if part.get("thought") is True:
                continue  # the model's reasoning: a thinking block, not reply text
            if isinstance(part.get("text"), str):
                out.append(part["text"])
            elif isinstance(part.get("inlineData"), dict):
                out.append(f"<inlineData {part['inlineData'].get('mimeType', '')} />")
            elif isinstance(part.get("fileData"), dict):
                out.append(f"<fileData {part['fileData'].get('fileUri', '')} />")
    return "\n".join(out)


def _is_legacy(path: Path) -> bool:
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip()
    first = head.split(b"\n", 1)[0]
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return True  # a pretty-printed object
    return isinstance(obj, dict) and isinstance(obj.get("messages"), list) and "$set" not in obj


def replay(files: Sequence[Path], sink: WarningSink) -> Replay:
    """Replay a chain of recordings (oldest first) as one stream of records."""
    state = Replay(files[0] if files else Path("-"), sink)
    for file_index, path in enumerate(files):
        if path.suffix == ".json" or (path.suffix != ".jsonl" and _is_legacy(path)):
            state.read_legacy(path, file_index)
        else:
            state.read_jsonl(path, file_index)
    return state
