"""UI events (``event_msg``) that repeat conversation content, and the thread header.

Codex logs every human prompt and final answer twice: once as a ``response_item`` (what the
model saw) and once as an event (what the UI showed). Events are only a fallback for
content no response item carries; ``stream.py`` pairs the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...model import Message, MessageType
from .items import Where, content_text, new_message, summary_parts, user_meta

#: Event copies come through two channels that can both repeat one response item.
EVENT = "event"
ITEM = "item"
CHANNELS = (EVENT, ITEM)


def _user(where: Where, msg_id: Any, text: str, kind: Any = None) -> Message | None:
    if not text.strip():
        return None
    text, meta = user_meta(text)
    if isinstance(kind, str) and kind != "plain" and not meta.get("synthetic"):
        meta = {"synthetic": True, "injected": kind}
    meta["from_event"] = True
    return new_message(where, msg_id, "user", "text", text, meta=meta)


def _assistant(where: Where, msg_id: Any, type_: MessageType, text: str) -> Message | None:
    if not text.strip():
        return None
    return new_message(
        where, msg_id, "assistant", type_, text, model=where.model, meta={"from_event": True}
    )


def event_copy(p: dict[str, Any], where: Where) -> tuple[str, Message] | None:
    """The message an ``event_msg`` payload repeats, with its channel, or ``None``."""
    kind = p.get("type")
    if kind == "user_message":
        text = p.get("message")
        m = _user(where, None, text if isinstance(text, str) else "", p.get("kind"))
        return (EVENT, m) if m else None
    if kind == "agent_message":
        text = p.get("message")
        m = _assistant(where, None, "text", text if isinstance(text, str) else "")
        return (EVENT, m) if m else None
    if kind == "agent_reasoning":
        text = p.get("text", p.get("message"))
        m = _assistant(where, None, "thinking", text if isinstance(text, str) else "")
        return (EVENT, m) if m else None
    item = p.get("item")
    if kind != "item_completed" or not isinstance(item, dict):
        return None
    item_kind = item.get("type")
    if item_kind == "UserMessage":
        m = _user(where, item.get("id"), content_text(item.get("content")))
    elif item_kind == "AgentMessage":
        m = _assistant(where, item.get("id"), "text", content_text(item.get("content")))
    elif item_kind == "Reasoning":
        text = "\n\n".join(summary_parts(item.get("summary_text")))
        m = _assistant(where, item.get("id"), "thinking", text)
    else:
        return None
    return (ITEM, m) if m else None


def is_compaction_event(p: dict[str, Any]) -> bool:
    """True for the UI's "context compacted" notice (either event shape)."""
    if p.get("type") == "context_compacted":
        return True
    item = p.get("item")
    return (
        p.get("type") == "item_completed"
        and isinstance(item, dict)
        and item.get("type") == "ContextCompaction"
    )


@dataclass(slots=True)
class Header:
    """Facts about one thread, filled in while its lines stream past."""

    id: str | None = None
    cwd: str | None = None
    model: str | None = None
    started_at: datetime | None = None
    parent_thread_id: str | None = None
    spawn_call_id: str | None = None
    agent_name: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def from_meta(self, p: dict[str, Any], started_at: datetime | None) -> None:
        """Take the thread facts of a ``session_meta`` payload (or a legacy meta line)."""
        if self.id is None and isinstance(p.get("id"), str):
            self.id = p["id"]
        if self.cwd is None and isinstance(p.get("cwd"), str):
            self.cwd = p["cwd"]
        if self.started_at is None:
            self.started_at = started_at
        for key in ("cli_version", "originator", "model_provider", "forked_from_id"):
            if isinstance(p.get(key), str):
                self.meta.setdefault(key, p[key])
        if isinstance(p.get("git"), dict):
            self.meta.setdefault("git", p["git"])
        source = p.get("source")
        if isinstance(source, str):
            self.meta.setdefault("source", source)
        spawn = parent_spawn(p)
        if spawn is not None:
            self.meta.setdefault("source", "subagent")
            self.parent_thread_id = spawn.get("parent_thread_id")
            self.spawn_call_id = spawn.get("spawn_call_id")
            for key in ("agent_nickname", "agent_role"):
                name = spawn.get(key, p.get(key))
                if isinstance(name, str) and name and self.agent_name is None:
                    self.agent_name = name

    def from_turn_context(self, p: dict[str, Any]) -> None:
        """Take the model (and a cwd if the meta had none) from a ``turn_context`` payload."""
        model = p.get("model")
        if isinstance(model, str) and model:
            if self.model is None:
                self.model = model
            models = self.meta.setdefault("models", [])
            if model not in models:
                models.append(model)
        if self.cwd is None and isinstance(p.get("cwd"), str):
            self.cwd = p["cwd"]


def parent_spawn(p: dict[str, Any]) -> dict[str, Any] | None:
    """``source.subagent.thread_spawn`` of a ``session_meta`` payload when it names a parent."""
    source = p.get("source")
    sub = source.get("subagent") if isinstance(source, dict) else None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    if isinstance(spawn, dict) and isinstance(spawn.get("parent_thread_id"), str):
        return spawn
    return None
