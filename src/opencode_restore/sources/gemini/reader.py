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
  where it happened (after everything recorded before the checkpoint), followed by the
  checkpoint's new (synthetic, ``meta["compaction_summary"]``) turns; the messages it
  kept stay where they were said, the first named by ``first_kept_id``. Gemini CLI 0.61
  restates the kept turns under NEW ids (``/compress``): each copy is matched to the
  message it repeats (newest first, by type and call ids or text) and its id becomes
  an alias of that message, for later upserts, rewinds and checkpoints; a copy is never
  a message of its own. With new turns the kind is ``summary`` (their text is the
  summary), without them ``trim``.

Notes (``info``, ``error``, ``warning`` records) are not in the model's context: a
checkpoint that leaves them out drops nothing.

A legacy ``.json`` resumed by newer builds continues in a sibling ``.jsonl`` that
repeats its messages; given as a chain, the files replay as one stream, and a record
identical to one already seen keeps its first location (de-duplication by id).

Gemini CLI 0.61 starts every process with a header line and a ``$set`` of the context it
starts from: the injected ``<session_context>`` message (kept, marked synthetic: no user
turn), and on ``--resume`` the whole history restated in API form, with reasoning as
``thought`` parts and each tool result copied as ``<gemini record id>_response``. Such a
starting ``$set`` never rolls anything back, and the copies are left out. A tool result
also comes back as a ``user`` record with a ``functionResponse``: that record (its own id
and line) is the call's one result; the call record's ``toolCalls[].result`` is used only
for calls no such record answers. Tool calls keep the log's call ids as message ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...fields import parse_timestamp
from ...model import Message, Session, Timeline, TimelineEvent, TimelineSpan, Usage
from ..base import Found, token_count
from ..chain import ChainLink
from ..discover import Discovery
from ..rejections import mark_rejection
from . import discover
from .chain import chain_link
from .replay import Replay, Slot, parts_text, replay

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


#: Gemini CLI puts this first in the model's history; the user never typed it.
_SESSION_CONTEXT = "<session_context>"


@dataclass(slots=True)
class _Calls:
    """What the whole replayed history says about tool calls, for one pass over it."""

    #: Call ids answered by a ``user`` record's ``functionResponse`` part (Gemini CLI
    #: 0.61 writes the result there as well as into the call record).
    answered: set[str] = field(default_factory=set)
    #: Call id -> the status its call record gives (``success``, ``error``, ...).
    status: dict[str, str] = field(default_factory=dict)
    #: Call ids whose result was already given: one result per call.
    given: set[str] = field(default_factory=set)
    #: Message ids already given (a call id that repeats gets a record-based id).
    used: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, history: Iterable[Slot]) -> _Calls:
        calls = cls()
        for slot in history:
            rec = slot.record or {}
            content, tool_calls = rec.get("content"), rec.get("toolCalls")
            for call in tool_calls if isinstance(tool_calls, list) else ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    status = call.get("status")
                    calls.status[call["id"]] = status if isinstance(status, str) else ""
            if rec.get("type") != "user":
                continue
            for part in content if isinstance(content, list) else ():
                fr = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(fr, dict) and isinstance(fr.get("id"), str):
                    calls.answered.add(fr["id"])
        return calls


_WORKSPACE = re.compile(r"\*\*Workspace Directories:\*\*\n((?:[ \t]+- [^\n]+\n?)+)")


def _workspace_dirs(messages: list[Message]) -> list[str]:
    """The workspace directories the injected ``<session_context>`` names (0.61 headers
    carry none)."""
    for m in messages:
        if m.meta.get("injected") == "session_context":
            found = _WORKSPACE.search(m.text)
            if found:
                return [d.strip()[2:].strip() for d in found.group(1).splitlines() if d.strip()]
    return []


class _Blocks:
    """Messages of one record: the record's ``id``, then ``<id>.1``…, shared ``group``.

    A tool call is named by its own id from the log, when it has one; thinking blocks
    are ``<id>.thinkingN``.
    """

    def __init__(self, rid: str, slot: Slot, calls: _Calls) -> None:
        self.rid, self.slot, self.calls = rid, slot, calls
        self.out: list[Message] = []
        self._n = 0
        self._thoughts = 0

    def _next_id(self, own: str | None, thinking: bool) -> str:
        if own and own not in self.calls.used:
            mid = own
        elif thinking:
            # Reasoning comes first but has no id of its own: the record's id is kept
            # for the reply, which is what a citation of this record means.
            self._thoughts += 1
            mid = f"{self.rid}.thinking{self._thoughts}"
        else:
            mid = self.rid if self._n == 0 else f"{self.rid}.{self._n}"
            self._n += 1
        self.calls.used.add(mid)
        return mid

    def add(
        self, role: Any, type_: Any, text: str, ts: Any, own_id: str | None = None, **fields: Any
    ) -> Message:
        m = Message(
            id=self._next_id(own_id, type_ == "thinking"),
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
            m.meta.update(synthetic=True, compaction_summary=True, injected="compaction_summary")
        self.out.append(m)
        return m

    def result(self, call_id: str | None, text: str, ts: Any, **fields: Any) -> None:
        """A tool result, unless its call already has one."""
        if call_id is not None:
            if call_id in self.calls.given:
                return
            self.calls.given.add(call_id)
        mark_rejection(self.add("tool", "tool_result", text, ts, tool_call_id=call_id, **fields))


def _thought_parts(b: _Blocks, content: Any, ts: Any, model: str | None) -> None:
    """Parts marked ``thought`` (the model's reasoning in the API form): thinking blocks."""
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("thought") is True:
            text = part.get("text")
            if isinstance(text, str) and text:
                b.add("assistant", "thinking", text, ts, model=model)


def _function_parts(b: _Blocks, content: Any, ts: Any, model: str | None) -> None:
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        call, resp = part.get("functionCall"), part.get("functionResponse")
        if isinstance(call, dict):
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            cid = call.get("id") if isinstance(call.get("id"), str) else None
            b.add(
                "assistant",
                "tool_use",
                orjson.dumps(args).decode(),
                ts,
                own_id=cid,
                model=model,
                tool_name=call.get("name"),
                tool_call_id=cid,
                tool_input=args,
            )
        elif isinstance(resp, dict):
            rid = resp.get("id") if isinstance(resp.get("id"), str) else None
            body = resp.get("response")
            failed = isinstance(body, dict) and "error" in body
            b.result(
                rid,
                _response_text([part]),
                ts,
                tool_name=resp.get("name"),
                is_error=failed or b.calls.status.get(rid or "") in ("error", "cancelled"),
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
            own_id=cid,
            model=model,
            tool_name=name,
            tool_call_id=cid,
            tool_input=args,
            meta={"status": call["status"]} if isinstance(call.get("status"), str) else {},
        )
        if cid is not None and cid in b.calls.answered:
            continue  # the user record that sent the result back holds it, on its own line
        status = call.get("status")
        text = _response_text(call["result"]) if call.get("result") is not None else ""
        if not text and isinstance(call.get("resultDisplay"), str):
            text = call["resultDisplay"]
        if text or call.get("result") is not None or status in ("error", "cancelled"):
            b.result(cid, text, when, tool_name=name, is_error=status in ("error", "cancelled"))


def _thoughts(b: _Blocks, rec: dict[str, Any], ts: Any, model: str | None) -> None:
    for th in rec.get("thoughts") or ():
        if isinstance(th, dict):
            subject, desc = th.get("subject") or "", th.get("description") or ""
            text = f"{subject}: {desc}" if subject and desc else subject or desc
            b.add("assistant", "thinking", str(text), th.get("timestamp") or ts, model=model)


def record_messages(
    rid: str, slot: Slot, sink: WarningSink, path: Path, calls: _Calls | None = None
) -> list[Message]:
    """The unified messages of one replayed Gemini record (or compaction marker)."""
    b = _Blocks(rid, slot, calls or _Calls())
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
            m = b.add("user", "text", text, ts)
            if text.lstrip().startswith(_SESSION_CONTEXT):
                m.meta.update(synthetic=True, injected="session_context")
        _function_parts(b, content, ts, None)
    elif kind == "gemini":
        _thoughts(b, rec, ts, model)
        _thought_parts(b, content, ts, model)
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
    calls = _Calls.of(state.history.values())
    for rid, slot in state.history.items():
        yield from record_messages(rid, slot, state.sink, files[slot.file_index], calls)


class GeminiReader(Discovery):
    """Reads Gemini CLI chat recordings (legacy JSON and append-only JSONL)."""

    name = "gemini"
    description = "Gemini CLI chat recordings (legacy session .json and append-only .jsonl)"

    file_patterns = discover.PATTERNS

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

    def chain_link(self, path: Path) -> ChainLink:
        """What ``path`` records about its session, to check a chain of files."""
        return chain_link(path)

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
        dirs = meta.get("directories") or _workspace_dirs(messages)
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

    def default_roots(self, home: Path) -> list[Path]:
        """Where the agent writes sessions under ``home`` (see ``discover``)."""
        return discover.default_roots(home)

    def describe(self, path: Path) -> Found | None:
        """What the file's first lines say of its session (see ``discover``)."""
        return discover.describe(path)


READER = GeminiReader()
