"""Sessions of any length and counting providers for the journal and resume tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from opencode_restore.config import Config, load_config
from opencode_restore.llm.base import LLMRequest, LLMResult
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Message, Session
from opencode_restore.pipeline.journal.identity import journal_key
from opencode_restore.pipeline.journal.store import JournalStore
from opencode_restore.pipeline.prompting.render import request_chars
from opencode_restore.pipeline.restoration import Restoration
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.pipeline.tokens import raw_tokens

from .helpers import make_session


def turn_messages(i: int, *, text: str | None = None, filler: int = 0) -> list[Message]:
    """Turn ``i``: a request, an edit of ``f{i}.py``, its result, a reply."""
    base = i * 10
    return [
        Message(f"u{i}", "user", "text", text or f"request {i}", entry_index=base + 1),
        Message(
            f"a{i}",
            "assistant",
            "tool_use",
            "",
            tool_name="Edit",
            tool_call_id=f"c{i}",
            tool_input={"file_path": f"/w/f{i}.py"},
            entry_index=base + 2,
        ),
        Message(
            f"r{i}",
            "tool",
            "tool_result",
            "ok " + "x" * filler,
            tool_call_id=f"c{i}",
            entry_index=base + 3,
        ),
        Message(f"t{i}", "assistant", "text", f"done {i}", entry_index=base + 4),
    ]


def session_of(
    n: int,
    *,
    changed: dict[int, str] | None = None,
    filler: int = 0,
    files: list[str] | None = None,
) -> Session:
    """``n`` turns; ``changed`` replaces the request text of some turns."""
    changed = changed or {}
    messages: list[Message] = []
    for i in range(1, n + 1):
        messages += turn_messages(i, text=changed.get(i), filler=filler)
    return make_session(
        messages, id="sess/1", cwd="/w", title="many turns", files=files or ["/w/log.jsonl"]
    )


#: The journal name of `session_of`'s sessions (their id, agent and file).
KEY = journal_key(session_of(1))


class Crash(RuntimeError):
    """The process 'dies' here (a bug-like error the pipeline does not catch)."""


class Counting(OfflineProvider):
    """The offline provider, counting calls per stage; it can crash before call ``crash_at``."""

    def __init__(self, crash_at: int | None = None) -> None:
        super().__init__()
        self.crash_at = crash_at
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResult:
        if self.crash_at is not None and len(self.requests) + 1 >= self.crash_at:
            raise Crash(f"killed before call {self.crash_at}")
        self.requests.append(request)
        result = await super().complete(request)
        # Report what the renderer counts (schema included), so the estimate is exact.
        result.usage.input = raw_tokens(request_chars(request))
        return result

    def stages(self) -> list[str]:
        return [r.stage for r in self.requests]

    def turn_calls(self) -> list[int]:
        return [int(r.facts["turn_number"]) for r in self.requests if r.stage == "turn_summary"]


def config(**restore: Any) -> Config:
    cfg = load_config(env={})
    cfg.restore.skip_evidence_search = True
    for key, value in restore.items():
        setattr(cfg.restore, key, value)
    return cfg


def restore(
    session: Session,
    provider: Any,
    data: Path | None,
    cfg: Config | None = None,
    **options: Any,
) -> Restoration:
    store = JournalStore(data) if data is not None else None
    return anyio.run(
        lambda: restore_session(
            session, cfg or config(), provider, options=RestoreOptions(**options), store=store
        )
    )
