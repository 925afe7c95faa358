"""Response and request bodies of the HTTP API (they also document the OpenAPI schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..redact import redact_optional
from ..store.store import RunRow, SessionRow


class ChainFileOut(BaseModel):
    """One transcript file of a session's chain."""

    index: int = Field(description="Position in the chain, 0 = oldest (= a message's file_index)")
    path: str
    added_at: str
    source: str = Field(description="`hook` or `scan`: how the file joined the chain")


class SessionOut(BaseModel):
    """A session in the store."""

    id: str
    agent: str
    native_log_file: str | None = Field(description="The newest file of the chain")
    cwd: str | None
    title: str | None
    created_at: str
    updated_at: str
    last_event: str | None
    file_count: int
    files: list[ChainFileOut] | None = Field(
        default=None, description="The chain, oldest first (only on GET /sessions/{id})"
    )
    restored_at: str | None = Field(
        default=None,
        description="When its latest restoration was made; null: never restored "
        "(only on GET /sessions/{id})",
    )

    @classmethod
    def of(
        cls, row: SessionRow, with_files: bool = False, restored_at: str | None = None
    ) -> SessionOut:
        """The API shape of a stored session."""
        files = None
        if with_files:
            files = [
                ChainFileOut(index=f.position, path=f.path, added_at=f.added_at, source=f.source)
                for f in row.files
            ]
        return cls(
            id=row.id,
            agent=row.agent,
            native_log_file=row.native_log_file,
            # The store keeps them as registered (a hook's cwd is raw: matching `--cwd`
            # needs it); served, they are redacted like every other string.
            cwd=redact_optional(row.cwd),
            title=redact_optional(row.title),
            created_at=row.created_at,
            updated_at=row.updated_at,
            last_event=row.last_event,
            file_count=len(row.files) if with_files else row.file_count,
            files=files,
            restored_at=restored_at,
        )


class SessionList(BaseModel):
    """One page of sessions, most recently updated first."""

    sessions: list[SessionOut]
    total: int
    limit: int
    offset: int


class InjectedContext(BaseModel):
    """Context a harness wrapped around a user's request (kept apart from its text)."""

    kind: str = Field(description="What the context is, e.g. ide_context")
    text: str


class MessageOut(BaseModel):
    """One message (seed 004 FR2); tool fields appear on tool blocks only."""

    id: str
    role: Literal["user", "assistant", "system", "tool"]
    type: Literal[
        "text", "compaction", "tool_use", "tool_result", "thinking", "summary", "file_changes"
    ]
    text: str
    timestamp: str | None
    entry_index: int = Field(description="Line (or record) number in the file, from 1")
    file_index: int = Field(description="Position of the file in the session's chain")
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_input: dict[str, Any] | None = None
    is_error: bool | None = None
    injected: str | None = Field(
        None,
        description="Set when the whole message is context the agent's harness put in the "
        "conversation, not the user's words (environment_context, instructions, interrupt, "
        "recommended_plugins, session_context, reminder, command, ...): a viewer may fold it.",
    )
    context: InjectedContext | None = Field(
        None,
        description="Context that wrapped the user's request and was taken off its text "
        "(e.g. an IDE's active file and open tabs); text holds the request alone.",
    )
    label: str | None = Field(
        None,
        description="With labels=true: the message's [M#] label, the one a restoration of "
        "the session cites (null for a message a restore shows no label).",
    )


class MessagesOut(BaseModel):
    """A session's messages, oldest first across the chain (streamed)."""

    session_id: str
    agent: str
    messages: list[MessageOut]


class SummaryOut(BaseModel):
    """The latest restoration of a session."""

    id: int
    session_id: str
    created_at: str
    provider: str | None
    markdown: str | None
    summary: dict[str, Any] | None
    usage: dict[str, Any] | None
    errors: dict[str, Any] | None


#: The most turns a restore may be asked to stop at: above any session's count, and an
#: integer every layer below (SQLite, the journal) holds.
MAX_TURNS = 1_000_000


class RestoreRequest(BaseModel):
    """Options of a background restore (``{}`` for none); unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int | None = Field(
        default=None, ge=1, le=MAX_TURNS, description="Summarize at most N turns"
    )

    @field_validator("max_turns", mode="before")
    @classmethod
    def _no_bool(cls, value: Any) -> Any:
        # JSON Schema counts 3.0 as an integer but true as none; pydantic's lax mode takes both.
        if isinstance(value, bool):
            raise ValueError("max_turns must be an integer, not a boolean")
        return value


class JobOut(BaseModel):
    """A background job and where it stands."""

    id: str
    session_id: str | None
    kind: str
    status: Literal["queued", "running", "done", "failed"]
    created_at: str
    started_at: str | None
    finished_at: str | None
    error: str | None
    restoration_id: int | None

    @classmethod
    def of(cls, run: RunRow) -> JobOut:
        """The API shape of a stored run."""
        return cls.model_validate(run, from_attributes=True)


class Health(BaseModel):
    """Liveness."""

    status: Literal["ok"]
    version: str


class SearchHitOut(BaseModel):
    """One hit of ``GET /search``: where it is and a snippet of it."""

    session_id: str
    agent: str
    cwd: str | None
    time: str | None = Field(description="ISO 8601 time of the message, when the log has one.")
    label: str | None = Field(description="The message's [M#] label; null for a summary row.")
    kind: str = Field(description="message, tool, error, command, file, decision, summary…")
    role: str | None
    snippet: str = Field(description="Text around the match, plain (secrets redacted).")
    highlights: list[list[int]] = Field(
        description="[start, end] character offsets of the matched terms in snippet."
    )
    score: float = Field(description="BM25 rank: lower is better.")


class SearchOut(BaseModel):
    """The answer of ``GET /search``: hits best first."""

    query: str
    hits: list[SearchHitOut]
