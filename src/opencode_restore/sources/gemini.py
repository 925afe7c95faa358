"""Reader for Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.json[l]``).

Two shapes: the legacy ``.json`` (one object with ``messages[]``) and the current
append-only ``.jsonl``. A ``.jsonl`` is replayed the way Gemini CLI loads it: a record
whose ``id`` was seen before REPLACES it (messages are re-appended as tool calls finish),
``{"$rewindTo": id}`` drops that message and everything after it (an unknown id clears
the history, as Gemini does), and ``{"$set": {...}}`` merges metadata.

``$set.messages`` is a full checkpoint of the model's context, written after history
rewrites. Because a restore wants the FULL history, a checkpoint never deletes what was
said; it is diffed against the current context instead:

* nothing dropped: new ids are appended (existing records keep their original,
  unmasked content: masking only shrinks tool output the model sees);
* only the newest messages dropped: a rollback, handled like ``$rewindTo``;
* older messages dropped: a compaction. A ``system``/``compaction`` marker is placed
  before the first message the checkpoint kept, followed by the checkpoint's new
  (synthetic, ``meta["compaction_summary"]``) turns, then the kept messages, so the
  order matches the model's new context. With new turns the kind is ``summary`` (their
  text before the first kept message is the summary), without them ``trim``.

A legacy ``.json`` resumed by newer builds continues in a sibling ``.jsonl`` that
repeats its messages; given as a chain, the files replay as one stream, and a record
identical to one already seen keeps its first location (de-duplication by id).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..model import Message, Session, Timeline, TimelineEvent, TimelineSpan, Usage
from .base import WarningSink, parse_timestamp, token_count
from .gemini_replay import Replay, Slot, parts_text, replay

_SYSTEM_TYPES = frozenset({"info", "error", "warning"})
_LEGACY_RES = (
    re.compile(rb'"sessionId"\s*:'),
    re.compile(rb'"messages"\s*:\s*\['),
    re.compile(rb'"type"\s*:\s*"(user|gemini|info|error|warning)"'),
)


def _response_text(parts: Any) -> str:
    """The text of a tool result: ``functionResponse.response`` output/error, or text parts."""
    out = []
    for part in parts if isinstance(parts, list) else [parts]:
        fr = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(fr, dict):
            text = parts_text([part])
            if text:
                out.append(text)
            continue
        resp = fr.get("response")
        if isinstance(resp, dict) and isinstance(resp.get("output"), str):
            out.append(resp["output"])
        elif isinstance(resp, dict) and isinstance(resp.get("error"), str):
            out.append(resp["error"])
        elif resp is not None:
            out.append(orjson.dumps(resp).decode() if not isinstance(resp, str) else resp)
    return "\n".join(out)


def _usage(tokens: Any) -> Usage | None:
    # Gemini's prompt count includes cached tokens and excludes tool-use prompt tokens;
    # thought tokens are billed as output. Keep Usage.total equal to Gemini's total.
    if not isinstance(tokens, dict):
        return None

    def num(key: str) -> int:
        return token_count(tokens.get(key))

    cached = num("cached")
    return Usage(
        input=max(num("input") - cached, 0) + num("tool"),
        output=num("output") + num("thoughts"),
        cache_read=cached,
    )


class _Blocks:
    """Messages of one record: ids ``<id>``, ``<id>.1``…, shared ``group``."""

    def __init__(self, rid: str, slot: Slot) -> None:
        self.rid, self.slot = rid, slot
        self.out: list[Message] = []

    def add(self, role: Any, type_: Any, text: str, ts: Any, **fields: Any) -> Message:
        n = len(self.out)
        m = Message(
            id=self.rid if n == 0 else f"{self.rid}.{n}",
            role=role,
            type=type_,
            text=text,
            timestamp=parse_timestamp(ts),
            file_index=self.slot.file_index,
            entry_index=self.slot.line,
            group=self.rid,
            **fields,
        )
        if self.slot.synthetic:
            m.meta.update(synthetic=True, compaction_summary=True)
        self.out.append(m)
        return m


def _function_parts(b: _Blocks, content: Any, ts: Any, model: str | None) -> None:
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        call, resp = part.get("functionCall"), part.get("functionResponse")
        if isinstance(call, dict):
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            b.add(
                "assistant",
                "tool_use",
                orjson.dumps(args).decode(),
                ts,
                model=model,
                tool_name=call.get("name"),
                tool_call_id=call.get("id"),
                tool_input=args,
            )
        elif isinstance(resp, dict):
            b.add(
                "tool",
                "tool_result",
                _response_text([part]),
                ts,
                tool_name=resp.get("name"),
                tool_call_id=resp.get("id"),
            )


def _tool_calls(b: _Blocks, calls: Any, ts: Any, model: str | None) -> None:
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, dict):
            continue
        name = call.get("name") if isinstance(call.get("name"), str) else None
        cid = call.get("id") if isinstance(call.get("id"), str) else None
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        when = call.get("timestamp") or ts
        b.add(
            "assistant",
            "tool_use",
            orjson.dumps(args).decode(),
            when,
            model=model,
            tool_name=name,
            tool_call_id=cid,
            tool_input=args,
            meta={"status": call["status"]} if isinstance(call.get("status"), str) else {},
        )
        status = call.get("status")
        text = _response_text(call["result"]) if call.get("result") is not None else ""
        if not text and isinstance(call.get("resultDisplay"), str):
            text = call["resultDisplay"]
        if text or call.get("result") is not None or status in ("error", "cancelled"):
            b.add(
                "tool",
                "tool_result",
                text,
                when,
                tool_name=name,
                tool_call_id=cid,
                is_error=status in ("error", "cancelled"),
            )


def record_messages(rid: str, slot: Slot, sink: WarningSink, path: Path) -> list[Message]:
    """The unified messages of one replayed Gemini record (or compaction marker)."""
    b = _Blocks(rid, slot)
    rec = slot.record
    if rec is None:
        b.add("system", "compaction", "Context compacted", None, compaction=slot.compaction)
        return b.out
    kind, ts, content = rec.get("type"), rec.get("timestamp"), rec.get("content")
    model = rec.get("model") if isinstance(rec.get("model"), str) else None
    if kind == "user":
        shown = rec.get("displayContent") or content
        text = parts_text(shown)
        if text or not isinstance(content, list):
            b.add("user", "text", text, ts)
        _function_parts(b, content, ts, None)
    elif kind == "gemini":
        for th in rec.get("thoughts") or ():
            if isinstance(th, dict):
                subject, desc = th.get("subject") or "", th.get("description") or ""
                text = f"{subject}: {desc}" if subject and desc else subject or desc
                b.add("assistant", "thinking", str(text), th.get("timestamp") or ts, model=model)
        if parts_text(content):
            b.add("assistant", "text", parts_text(content), ts, model=model)
        _function_parts(b, content, ts, model)
        _tool_calls(b, rec.get("toolCalls"), ts, model)
        usage = _usage(rec.get("tokens"))
        if usage is not None and not b.out:
            b.add("assistant", "text", "", ts, model=model)
        if b.out:
            b.out[0].usage = usage
    elif kind in _SYSTEM_TYPES:
        b.add(
            "system",
            "text",
            parts_text(content),
            ts,
            is_error=kind == "error",
            meta={"level": kind},
        )
    else:
        sink.warn(path, slot.line, f"message {rid!r} has unknown type {kind!r}; skipped")
    return b.out


def _messages(state: Replay, files: Sequence[Path]) -> Iterator[Message]:
    for rid, slot in state.history.items():
        yield from record_messages(rid, slot, state.sink, files[slot.file_index])


class GeminiReader:
    """Reads Gemini CLI chat recordings (legacy JSON and append-only JSONL)."""

    name = "gemini"
    description = "Gemini CLI chat recordings (legacy session .json and append-only .jsonl)"

    def sniff(self, path: Path, head: bytes) -> float:
        """Sure for a JSONL header or ``$set``/``$rewindTo`` line, or a legacy session object."""
        text = head.lstrip()
        if not text.startswith(b"{"):
            return 0.0
        try:
            obj = orjson.loads(text.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            return 0.9 if all(r.search(head) for r in _LEGACY_RES) else 0.0
        if "$set" in obj or "$rewindTo" in obj:
            return 0.9
        header_keys = "projectHash" in obj or "startTime" in obj or "messages" in obj
        if isinstance(obj.get("sessionId"), str) and "type" not in obj and header_keys:
            return 0.9
        if obj.get("type") == "gemini" and isinstance(obj.get("id"), str):
            return 0.6
        return 0.0

    def iter_messages(self, files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
        """The replayed conversation across the chain, oldest first."""
        return _messages(replay(files, sink), files)

    def read(self, files: Sequence[Path], sink: WarningSink) -> Session:
        """The session: every message (and compaction marker) in the root span."""
        state = replay(files, sink)
        messages = list(_messages(state, files))
        meta = state.meta
        sid = meta.get("sessionId") if isinstance(meta.get("sessionId"), str) else None
        session_id = sid or (Path(files[0]).stem if files else "gemini")
        content: list[TimelineEvent | TimelineSpan] = [
            TimelineEvent(m.id, "compaction", m, compaction=m.compaction, timestamp=m.timestamp)
            if m.type == "compaction"
            else TimelineEvent(m.id, "message", m, timestamp=m.timestamp)
            for m in messages
        ]
        dirs = meta.get("directories")
        model = next((m.model for m in reversed(messages) if m.model), None)
        extra = {"project_hash": meta.get("projectHash"), "kind": meta.get("kind")}
        return Session(
            id=session_id,
            agent=self.name,
            files=[str(f) for f in files],
            timeline=Timeline(TimelineSpan(session_id, "gemini", "agent", content)),
            cwd=dirs[0] if isinstance(dirs, list) and dirs and isinstance(dirs[0], str) else None,
            title=meta.get("summary") if isinstance(meta.get("summary"), str) else None,
            model=model,
            started_at=parse_timestamp(meta.get("startTime")),
            warnings=list(sink.warnings),
            meta={k: v for k, v in extra.items() if isinstance(v, str)},
        )


READER = GeminiReader()
