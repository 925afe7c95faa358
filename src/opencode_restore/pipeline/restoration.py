"""The result of a restore: what the markdown, JSON and HTML renderers print.

The JSON form (``restore --format json``) is this model's ``model_dump_json``; its
``schema_version`` changes whenever a field changes meaning.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .schemas import SessionSummary, TurnSummary

SCHEMA_VERSION = "opencode-restore.restoration.v1"


class SessionInfo(BaseModel):
    id: str
    agent: str
    files: list[str]
    cwd: str | None = None
    title: str | None = None
    model: str | None = None
    started_at: datetime | None = None


class FileRow(BaseModel):
    """One file of the deterministic files table."""

    path: str
    actions: list[str]
    turns: list[int]
    citations: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class CommandRow(BaseModel):
    command: str
    turn: int
    citation: str | None = None
    exit_code: int | None = None
    is_error: bool = False


class Quote(BaseModel):
    """A verbatim quote from the log with its citation."""

    text: str
    citation: str | None = None


class CompactionPoint(BaseModel):
    citation: str | None
    turn: int
    kind: str
    tokens_before: int | None = None
    summary_excerpt: str = ""


class ReferenceRow(BaseModel):
    """The appendix entry for one cited ``M#``."""

    label: str
    message_id: str
    file: str | None
    file_index: int
    entry_index: int
    timestamp: datetime | None = None
    role: str | None = None
    type: str | None = None


class BranchSummaryRow(BaseModel):
    """An abandoned branch of the conversation and what happened on it."""

    branch_id: str
    from_id: str | None = None
    from_citation: str | None = None
    leaf_id: str
    label: str | None = None
    messages: int = 0
    #: ``session`` (the log's own branch summary), ``llm`` or ``generated`` (offline digest).
    source: str
    summary: str


class CitationStats(BaseModel):
    """The citations of the summaries: kept, and removed (labels never issued; labels a
    turn summary cited outside its own turn)."""

    cited: int = 0
    removed_unknown: int = 0
    unknown_labels: list[str] = Field(default_factory=list)
    removed_outside_turn: int = 0
    outside_turn_labels: list[str] = Field(default_factory=list)


class UsageReport(BaseModel):
    """What this run spent. ``calls`` and the tokens are a model's only: with the offline
    provider no model is called, so they are 0 and ``offline_answers`` counts the stage
    answers the offline rules wrote instead. ``cost_usd`` is in dollars: 0.0 when nothing
    was spent (offline, or every turn reused from the journal), null only when a model
    was called whose price is not configured (``[prices]``)."""

    calls: int = 0
    offline_answers: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


class FailedTurnRow(BaseModel):
    turn: int
    error: str


#: How a restoration's warnings say the SESSION SUMMARY is the offline fallback's.
FALLBACK_WARNING = "synthesis fell back to the offline summary"
#: How a restoration's warnings say a model failure ended the evidence search.
EVIDENCE_STOPPED_WARNING = "evidence search stopped early"
#: A turn's ``stood_in`` when its model replies never fit the structure: the rules' summary
#: stands in whole.
WHOLE_SUMMARY = "summary"
#: How a restoration's warnings name those turns.
REPLACED_WARNING = (
    "the model's replies never fit the turn summary's structure; "
    "the rules' summary stands in for turn"
)
#: How a restoration's warnings say the session ended in the middle of its last turn.
INTERRUPTED_WARNING = "the session ended in the middle of turn"


class EvidenceItem(BaseModel):
    """One evidence-search result the synthesizer may cite."""

    tool: str
    query: str
    result: str
    citations: list[str] = Field(default_factory=list)


class JournalInfo(BaseModel):
    """The journal behind this restoration, and what this run reused.

    Its key in the JSON stays ``timeline`` (the restoration's v1 schema), as do the notes.
    """

    path: str | None = None
    note: str = ""
    turns_reused: int = 0
    stages_reused: list[str] = Field(default_factory=list)
    compacted_through_turn: int | None = None


class Restoration(BaseModel):
    """Everything a restore produced for one session."""

    schema_version: str = SCHEMA_VERSION
    session: SessionInfo
    provider: str
    summary: SessionSummary
    files: list[FileRow] = Field(default_factory=list)
    commands: list[CommandRow] = Field(default_factory=list)
    last_user_request: Quote | None = None
    compactions: list[CompactionPoint] = Field(default_factory=list)
    turns: list[TurnSummary] = Field(default_factory=list)
    turn_count: int = 0
    failed_turns: list[FailedTurnRow] = Field(default_factory=list)
    evidence: list[EvidenceItem] = Field(default_factory=list)
    branch_summaries: list[BranchSummaryRow] = Field(default_factory=list)
    references: list[ReferenceRow] = Field(default_factory=list)
    citations: CitationStats = Field(default_factory=CitationStats)
    usage: UsageReport = Field(default_factory=UsageReport)
    redactions: int = 0
    warnings: list[str] = Field(default_factory=list)
    timeline: JournalInfo | None = None

    @property
    def complete(self) -> bool:
        """True when every turn was summarized."""
        return not self.failed_turns
