"""Codex's headless output: ``codex exec --json`` (and ``codex exec resume --json``).

One JSON event per line (users keep these from CI runs): ``thread.started``
(``thread_id``), ``turn.started``, ``item.started`` / ``item.updated`` /
``item.completed`` with an ``item`` (``id``, ``type``: ``agent_message``,
``reasoning``, ``command_execution``, ``file_change``, ``mcp_tool_call``,
``web_search``, ``todo_list``, ``error``), ``turn.completed`` (the turn's ``usage``),
``turn.failed`` and ``error``. The prompt is not printed, so such a run has no user
request, and there are no timestamps.

An item's id (``item_3``) restarts in every run, so in a chain of runs the messages of
the second and later files are ``<file index>:<item id>``. A command still running
when the stream ends is a call without a result.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...model import Message
from ..base import iter_json_lines
from .events import Header
from .items import usage_of

EVENT_TYPES = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
        "error",
    }
)
_SHELL = "exec_command"


def is_exec_event(obj: Any) -> bool:
    """True for a line of ``codex exec --json`` output."""
    if not isinstance(obj, dict) or "payload" in obj:
        return False
    if not isinstance(obj.get("type"), str) or obj["type"] not in EVENT_TYPES:
        return False
    kind = obj["type"]
    if kind == "thread.started":
        return isinstance(obj.get("thread_id"), str)
    if kind.startswith("item."):
        item = obj.get("item")
        return isinstance(item, dict) and isinstance(item.get("id"), str)
    return True


def _item(obj: dict[str, Any]) -> bool:
    item = obj.get("item")
    return isinstance(item, dict) and isinstance(item.get("id"), str)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _Items:
    """Turns completed items into messages; remembers calls still running."""

    def __init__(self, header: Header) -> None:
        self.header = header
        self.running: dict[str, tuple[Message, ...]] = {}
        #: The line each item started on: a call is cited where it began.
        self.began: dict[str, int] = {}

    def message(self, fi: int, line: int, item_id: str, role: Any, type_: Any, text: str,
                **fields: Any) -> Message:  # fmt: skip
        mid = item_id if fi == 0 else f"{fi}:{item_id}"
        return Message(mid, role, type_, text, None, fi, line, **fields)

    def started(self, item: dict[str, Any], fi: int, line: int) -> None:
        self.began.setdefault(item["id"], line)
        call = self._call(item, fi, line)
        if call is not None:
            self.running[item["id"]] = (call,)

    def completed(self, item: dict[str, Any], fi: int, line: int) -> list[Message]:
        self.running.pop(item["id"], None)
        kind, iid = item.get("type"), item["id"]
        if kind in ("agent_message", "reasoning", "error"):
            self.began.pop(iid, None)
        if kind == "agent_message":
            return [self.message(fi, line, iid, "assistant", "text", _str(item.get("text")))]
        if kind == "reasoning":
            return [self.message(fi, line, iid, "assistant", "thinking", _str(item.get("text")))]
        if kind == "error":
            text = _str(item.get("message"))
            return [self.message(fi, line, iid, "system", "text", text, is_error=True)]
        call = self._call(item, fi, self.began.pop(iid, line))
        if call is None:
            return []  # a todo list: the plan, not a step
        return [call, self._result(item, call, fi, line)]

    def _call(self, item: dict[str, Any], fi: int, line: int) -> Message | None:
        kind, iid = item.get("type"), item["id"]
        name: str
        args: dict[str, Any]
        if kind == "command_execution":
            name, args = _SHELL, {"command": _str(item.get("command"))}
        elif kind == "file_change":
            changes = item.get("changes")
            listed = (
                [c for c in changes if isinstance(c, dict)] if isinstance(changes, list) else []
            )
            name, args = "apply_patch", {"changes": listed}
        elif kind == "mcp_tool_call":
            name = f"{_str(item.get('server'))}.{_str(item.get('tool'))}".strip(".") or "mcp"
            raw = item.get("arguments")
            args = raw if isinstance(raw, dict) else {"arguments": raw}
        elif kind == "web_search":
            name, args = "web_search", {"query": _str(item.get("query"))}
        else:
            return None
        return self.message(
            fi, line, f"{iid}:call", "assistant", "tool_use", orjson.dumps(args).decode(),
            tool_name=name, tool_call_id=iid, tool_input=args, model=self.header.model,
        )  # fmt: skip

    def _result(self, item: dict[str, Any], call: Message, fi: int, line: int) -> Message:
        status = _str(item.get("status"))
        code = item.get("exit_code")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        if item.get("type") == "command_execution":
            text = _str(item.get("aggregated_output"))
        elif item.get("type") == "mcp_tool_call":
            text = _mcp_text(item)
        elif item.get("type") == "file_change":
            text = "\n".join(
                f"{_str(c.get('kind'))} {_str(c.get('path'))}" for c in call.tool_input["changes"]
            ) if call.tool_input else ""  # fmt: skip
        else:
            text = ""
        failed = status in ("failed", "declined") or (exit_code not in (None, 0))
        meta: dict[str, Any] = {"status": status} if status else {}
        if exit_code is not None:
            meta["exit_code"] = exit_code
        return self.message(
            fi, line, item["id"], "tool", "tool_result", text, tool_name=call.tool_name,
            tool_call_id=call.tool_call_id, is_error=failed, meta=meta,
        )  # fmt: skip


def _mcp_text(item: dict[str, Any]) -> str:
    error = item.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    result = item.get("result")
    if isinstance(result, dict):
        blocks = result.get("content")
        if isinstance(blocks, list):
            return "\n".join(_str(b.get("text")) for b in blocks if isinstance(b, dict))
    return orjson.dumps(result).decode() if result is not None else ""


def iter_exec(files: Sequence[Path], sink: WarningSink, header: Header) -> Iterator[Message]:
    """The messages of a chain of ``codex exec --json`` outputs, oldest first."""
    items = _Items(header)
    last: Message | None = None  # the turn's usage goes on its last assistant message
    for fi, path in enumerate(files):
        for line, obj in iter_json_lines(path, sink):
            kind = obj.get("type")
            kind = kind if isinstance(kind, str) else repr(kind)
            thread = obj.get("thread_id")
            if kind == "thread.started" and isinstance(thread, str):
                if header.id is None:
                    header.id = thread
                elif thread != header.id:
                    sink.warn(path, line, f"thread_id {thread!r} differs from {header.id!r}")
            elif kind == "item.started" and _item(obj):
                items.started(obj["item"], fi, line)
            elif kind == "item.completed" and _item(obj):
                for m in items.completed(obj["item"], fi, line):
                    last = m if m.role == "assistant" else last
                    yield m
            elif kind == "turn.completed":
                usage = usage_of(obj.get("usage"))
                if usage is not None and last is not None and last.usage is None:
                    last.usage = usage
            elif kind in ("turn.failed", "error"):
                error = obj.get("error") if kind == "turn.failed" else obj
                text = _str(error.get("message")) if isinstance(error, dict) else ""
                yield Message(f"{fi}:{line}", "system", "text", text, None, fi, line, is_error=True)
            elif kind not in EVENT_TYPES:
                sink.warn(path, line, f"unknown exec event {kind!r}; skipped")
        # A call still running when its run ended: it never got a result.
        for (call,) in items.running.values():
            yield call
        items.running.clear()
        items.began.clear()
