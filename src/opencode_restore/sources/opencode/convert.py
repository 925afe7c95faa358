"""opencode message parts -> unified ``Message`` records.

opencode stores a conversation as messages (``info``: role, times, model, tokens)
that each own ordered *parts* (text, reasoning, tool, patch, file, step markers,
compaction ...). The same objects appear in the JSON storage tree, the SQLite
database, ``opencode export`` and the ``run --format json`` event stream, so every
input funnels through :class:`PartConverter`.

Numbering: a message's ``id`` is its part's id (``prt_…``; a completed tool part
also yields ``<part id>:result``), ``entry_index`` is the 1-based ordinal of the
part within its session (the loader counts every part, shown or not) and
``file_index`` is 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import orjson

from ...diagnostics import WarningSink
from ...fields import parse_timestamp
from ...model import Compaction, Message, MessageType, Role, Usage
from ..base import token_count
from ..ids import source_id
from ..rejections import mark_rejection

#: A part with its 1-based ordinal in the session (or its line in an event stream).
NumberedPart = tuple[int, dict[str, Any]]


class RawMessage(NamedTuple):
    """One opencode message as a loader found it."""

    info: dict[str, Any]
    parts: list[NumberedPart]
    #: ``entry_index`` for a message-level record (an error) of a message with no parts.
    line: int = 0


#: Part types that carry no conversation content (step markers, snapshots, retries).
_SILENT_PARTS = frozenset({"step-start", "step-finish", "snapshot", "agent", "retry"})

#: ``task`` tool output names the child session when metadata does not.
_TASK_ID_RE = re.compile(r"task_id:\s*(ses_[A-Za-z0-9]+)")

#: Longer ``url`` values (``data:`` URIs of pasted images) are not worth keeping.
_MAX_URL = 300


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int:
    """``value`` as an int when it is a number (bools excluded), else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value)


def part_sort_key(part: dict[str, Any]) -> tuple[int, float, str]:
    """Order parts of one message: by id for opencode's time-ordered ``prt_`` ids,
    else by start time (hand-made fixtures use ids like ``part_patch``)."""
    pid = str(part.get("id", ""))
    if pid.startswith("prt_"):
        return (0, 0.0, pid)
    time = as_dict(part.get("time")) or as_dict(as_dict(part.get("state")).get("time"))
    return (1, float(as_int(time.get("start"))), pid)


def _usage(tokens: dict[str, Any]) -> Usage | None:
    cache = as_dict(tokens.get("cache"))
    # opencode counts reasoning apart from output; both are billed as output.
    usage = Usage(
        input=token_count(tokens.get("input")),
        output=token_count(tokens.get("output")) + token_count(tokens.get("reasoning")),
        cache_read=token_count(cache.get("read")),
        cache_write=token_count(cache.get("write")),
    )
    return usage if usage.total else None


def message_usage(info: dict[str, Any], parts: Sequence[NumberedPart]) -> Usage | None:
    """Token usage of one assistant message.

    Older builds ran several steps in one message and kept only the last step's
    tokens in ``info``, so the ``step-finish`` parts are summed when present.
    """
    total: Usage | None = None
    for _, part in parts:
        if part.get("type") == "step-finish":
            step = _usage(as_dict(part.get("tokens")))
            if step is not None:
                total = total or Usage()
                total.add(step)
    return total if total is not None else _usage(as_dict(info.get("tokens")))


def _model_of(info: dict[str, Any]) -> str | None:
    model = info.get("modelID") or as_dict(info.get("model")).get("modelID")
    return model if isinstance(model, str) else None


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


class PartConverter:
    """Turns one session's messages, in order, into ``Message`` records.

    Stateful because a compaction spans two opencode messages: the user message
    holding the ``compaction`` part is held back until the next message, so the
    ``summary: true`` assistant reply can fill in the summary text.
    """

    def __init__(self, path: str, sink: WarningSink) -> None:
        self.path = path
        self.sink = sink
        #: child session id -> id of the ``task`` tool_use message that spawned it
        self.task_links: dict[str, str] = {}
        self._held: list[Message] = []
        self._held_compaction: Compaction | None = None

    def convert(self, raw: RawMessage) -> list[Message]:
        """The messages of one opencode message, after any held-back compaction."""
        if source_id(raw.info.get("id")) is None:
            # A redacted message id would join every such message into one group (and
            # one ``:error`` id): its first part's position names it instead.
            first = raw.parts[0][0] if raw.parts else raw.line
            raw = raw._replace(info={**raw.info, "id": f"0:{first}"})
        info, parts = raw.info, raw.parts
        role: Role = "user" if info.get("role") == "user" else "assistant"
        is_summary = role == "assistant" and info.get("summary") is True
        current = self._messages_of(raw, role, is_summary)
        if is_summary:
            self._attach_summary(info, parts, current)
        out = [*self._held, *current]
        self._held, self._held_compaction = [], None
        compaction = next((m.compaction for m in current if m.compaction), None)
        if compaction is not None and not is_summary:
            self._held, self._held_compaction = out, compaction
            return []
        return out

    def _attach_summary(
        self, info: dict[str, Any], parts: Sequence[NumberedPart], current: list[Message]
    ) -> None:
        compaction = self._held_compaction
        if compaction is None:
            # Builds before the compaction part wrote only the summary message.
            compaction = Compaction(kind="summary")
            first = parts[0][0] if parts else 0
            marker = self._marker(info, f"{info.get('id')}:compaction", first, compaction, {})
            self._held.append(marker)
        summary = "\n\n".join(m.text for m in current if m.type == "summary")
        compaction.summary = summary or None
        tokens = as_dict(info.get("tokens"))
        # The summary call's input is the whole conversation being compacted.
        cached = token_count(as_dict(tokens.get("cache")).get("read"))
        before = token_count(tokens.get("input")) + cached
        compaction.tokens_before = before or None
        compaction.tokens_after = token_count(tokens.get("output")) or None

    def finish(self) -> list[Message]:
        """Messages still held back at the end of the session (a compaction with no summary)."""
        out, self._held, self._held_compaction = self._held, [], None
        return out

    def _messages_of(self, raw: RawMessage, role: Role, is_summary: bool) -> list[Message]:
        info, parts = raw.info, raw.parts
        out: list[Message] = []
        for index, part in parts:
            out.extend(self._part(info, role, is_summary, index, part))
        error = as_dict(info.get("error"))
        if error:
            data = as_dict(error.get("data"))
            name = str(error.get("name") or "error")
            detail = data.get("message")
            out.append(
                self._msg(
                    info,
                    f"{info.get('id')}:error",
                    "assistant",
                    "text",
                    f"{name}: {detail}" if isinstance(detail, str) else name,
                    parts[-1][0] if parts else raw.line,
                    is_error=True,
                    meta={"error": name},
                )
            )
        if role == "assistant" and out:
            out[0].usage = message_usage(info, parts)
        return out

    def _msg(
        self,
        info: dict[str, Any],
        mid: str,
        role: Role,
        mtype: MessageType,
        text: str,
        index: int,
        *,
        time: Any = None,
        **fields: Any,
    ) -> Message:
        when = parse_timestamp(time) or parse_timestamp(as_dict(info.get("time")).get("created"))
        model = _model_of(info) if role != "user" else None
        group = info.get("id") if isinstance(info.get("id"), str) else None
        return Message(
            id=mid,
            role=role,
            type=mtype,
            text=text,
            timestamp=when,
            entry_index=index,
            group=group,
            model=model,
            **fields,
        )

    def _marker(
        self,
        info: dict[str, Any],
        mid: str,
        index: int,
        compaction: Compaction,
        meta: dict[str, Any],
    ) -> Message:
        trigger = compaction.trigger
        text = f"Conversation compacted ({trigger})" if trigger else "Conversation compacted"
        return self._msg(
            info, mid, "system", "compaction", text, index, compaction=compaction, meta=meta
        )

    def _compaction_part(
        self, info: dict[str, Any], mid: str, index: int, part: dict[str, Any]
    ) -> Message:
        auto = part.get("auto")
        tail = part.get("tail_start_id")
        compaction = Compaction(
            kind="summary",
            trigger="auto" if auto is True else "manual" if auto is False else None,
            first_kept_id=tail if isinstance(tail, str) else None,
        )
        meta = {"overflow": True} if part.get("overflow") is True else {}
        return self._marker(info, mid, index, compaction, meta)

    def _part(
        self,
        info: dict[str, Any],
        role: Role,
        is_summary: bool,
        index: int,
        part: dict[str, Any],
    ) -> list[Message]:
        ptype = part.get("type") if isinstance(part.get("type"), str) else None
        # A part id the export redacted (``REDACTED``) names no part: use its position.
        pid = source_id(part.get("id")) or f"0:{index}"
        start = as_dict(part.get("time")).get("start")
        meta: dict[str, Any] = {}
        if ptype in ("text", "reasoning"):
            text = part.get("text")
            if not isinstance(text, str):
                self.sink.warn(self.path, index, f"{ptype} part {pid} has no text; skipped")
                return []
            if ptype == "reasoning":
                meta = {} if text else {"encrypted": True}
                return [
                    self._msg(
                        info, pid, "assistant", "thinking", text, index, time=start, meta=meta
                    )
                ]
            if not text:
                return []
            synthetic = part.get("synthetic") is True or part.get("ignored") is True
            mtype: MessageType = "summary" if is_summary else "text"
            # opencode's own text (after a sub-agent's task, a command's expansion):
            # harness context, never the user's request.
            meta = {"synthetic": True, "injected": "synthetic"} if synthetic else {}
            return [self._msg(info, pid, role, mtype, text, index, time=start, meta=meta)]
        if ptype == "tool":
            return self._tool(info, pid, index, part)
        if ptype == "patch":
            listed = part.get("files")
            files = [f for f in listed if isinstance(f, str)] if isinstance(listed, list) else []
            # The files the step changed (opencode diffs its snapshot after each step): a
            # record of its own, not a tool call (it has no call id and no result).
            meta = {"files": files}
            if isinstance(part.get("hash"), str):
                meta["hash"] = part["hash"]
            return [
                self._msg(
                    info, pid, "assistant", "file_changes", "\n".join(files), index, time=start,
                    meta=meta,
                )
            ]  # fmt: skip
        if ptype == "file":
            return [self._file(info, role, pid, index, part)]
        if ptype == "compaction":
            return [self._compaction_part(info, pid, index, part)]
        if ptype == "subtask":
            prompt = part.get("prompt")
            meta = {
                "synthetic": True,
                "subtask": {k: part.get(k) for k in ("agent", "description")},
            }
            return [self._msg(info, pid, role, "text", _json_text(prompt or ""), index, meta=meta)]
        if ptype not in _SILENT_PARTS:
            self.sink.warn(self.path, index, f"unknown part type {ptype!r} ({pid}); skipped")
        return []

    def _file(
        self, info: dict[str, Any], role: Role, pid: str, index: int, part: dict[str, Any]
    ) -> Message:
        name = part.get("filename") or part.get("url") or "attachment"
        meta: dict[str, Any] = {"synthetic": True, "attachment": True}
        for key in ("mime", "url"):
            value = part.get(key)
            if isinstance(value, str) and len(value) <= _MAX_URL:
                meta[key] = value
        start = as_dict(part.get("time")).get("start")
        return self._msg(info, pid, role, "text", f"<file {name}>", index, time=start, meta=meta)

    def _tool(
        self, info: dict[str, Any], pid: str, index: int, part: dict[str, Any]
    ) -> list[Message]:
        state = as_dict(part.get("state"))
        if not state:
            self.sink.warn(self.path, index, f"tool part {pid} has no state; kept as a call")
        status = str(state.get("status") or "pending").lower()
        name = part.get("tool") if isinstance(part.get("tool"), str) else "unknown"
        # The call and its result are one part: a redacted call id is the part's own.
        raw_call = part.get("callID")
        raw_call = raw_call.strip() if isinstance(raw_call, str) else ""
        call_id = (source_id(raw_call) or pid) if raw_call else None
        tool_input = as_dict(state.get("input"))
        times = as_dict(state.get("time"))
        metadata = as_dict(state.get("metadata"))
        meta: dict[str, Any] = {"status": status}
        if isinstance(state.get("title"), str):
            meta["title"] = state["title"]
        output = state.get("output") if status == "completed" else state.get("error")
        text = output if isinstance(output, str) else "" if output is None else _json_text(output)
        child = _task_child(tool_input, metadata, text) if name == "task" else None
        if child:
            # A running task already names its child session in metadata.
            self.task_links.setdefault(child, pid)
            meta["child_session"] = child
        use = self._msg(
            info, pid, "assistant", "tool_use", _json_text(tool_input), index,
            time=times.get("start"), tool_name=name, tool_call_id=call_id,
            tool_input=tool_input, meta=meta,
        )  # fmt: skip
        if status not in ("completed", "error"):
            return [use]
        result_meta: dict[str, Any] = {}
        exit_code = metadata.get("exit")
        if isinstance(exit_code, int) and not isinstance(exit_code, bool):
            result_meta["exit_code"] = exit_code
        if isinstance(metadata.get("exists"), bool):
            # The write tool says whether it replaced a file or made a new one.
            result_meta["file_existed"] = metadata["exists"]
        if times.get("compacted"):
            # opencode pruned this output from later model calls.
            result_meta["compacted"] = True
        if child:
            result_meta["child_session"] = child
        result = self._msg(
            info, f"{pid}:result", "tool", "tool_result", text, index,
            time=times.get("end") or times.get("start"), tool_name=name,
            tool_call_id=call_id, is_error=status == "error", meta=result_meta,
        )  # fmt: skip
        return [use, mark_rejection(result)]


def _task_child(tool_input: dict[str, Any], metadata: dict[str, Any], output: str) -> str | None:
    """The child session a ``task`` call ran in: metadata, a resumed ``task_id``, or its output."""
    child = metadata.get("sessionId") or tool_input.get("task_id")
    if isinstance(child, str) and child:
        return child
    found = _TASK_ID_RE.search(output)
    return found.group(1) if found else None
