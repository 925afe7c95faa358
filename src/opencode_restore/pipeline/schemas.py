"""The structured outputs the LLM stages must produce (validated with pydantic).

Every free-text claim is expected to cite the messages it rests on, e.g. ``"tests pass [M14]"``.
Providers send each as a strict JSON schema (`llm.strict_schema`: no defaults, every field
required), so the model writes every field; the defaults here only serve lenient replies of
servers that ignore the schema. `OUTPUT_SCHEMAS` lists every model a stage asks for.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _empty(value: Any) -> bool:
    return not value


class ArtifactNote(_Out):
    """What the model says about a file (the file list itself is computed, never asked)."""

    path: str
    note: str


class Decision(_Out):
    decision: str
    reason: str = ""


class TurnSummary(_Out):
    """Seed 003's TURN SUMMARY, one per turn."""

    turn_number: int
    user_request_summary: str
    agent_response_summary: str
    key_outcomes: list[str] = Field(default_factory=list)
    state_changes: list[str] = Field(default_factory=list)
    artifacts_modified: list[ArtifactNote] = Field(default_factory=list)
    constraints_assumptions_added: list[str] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)
    errors_and_fixes: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)
    resolved_questions: list[str] = Field(
        default_factory=list,
        description="Earlier open questions this turn answered (quote them as listed).",
    )
    #: Labels the model cited outside this turn, removed (``synthesizer.keep_citations``).
    #: Written by the turn stage, never by a model; left out of the JSON when empty.
    outside_citations: SkipJsonSchema[list[str]] = Field(default_factory=list, exclude_if=_empty)
    #: The fields whose text stated nothing, so the rules' stands in (``hold_to_turn``).
    #: Written by the turn stage, never by a model; left out of the JSON when empty.
    stood_in: SkipJsonSchema[list[str]] = Field(default_factory=list, exclude_if=_empty)


class RejectedCandidate(_Out):
    # The model writes ``id`` and ``reason``; the synthesizer fills in what the candidate
    # said (``section``, ``text``), which the schema sent to the model leaves out.
    id: str
    reason: str
    section: SkipJsonSchema[str] = ""
    text: SkipJsonSchema[str] = ""


class Progress(_Out):
    done: list[str] = Field(default_factory=list)
    in_progress: list[str] = Field(default_factory=list)
    blocked: list[str] = Field(default_factory=list)


class SummaryFields(_Out):
    """The narrative parts of the SESSION SUMMARY; tables and quotes are added deterministically."""

    # What the offline rules are asked for (they are offered no candidates to reject): the
    # summary without `rejected_candidates`, its schema named and sized as before them.
    model_config = ConfigDict(extra="ignore", title="SessionSummary")

    goal: str
    constraints_preferences: list[str] = Field(default_factory=list)
    progress: Progress = Field(default_factory=Progress)
    key_decisions: list[Decision] = Field(default_factory=list)
    errors_fixes_ruled_out: list[str] = Field(default_factory=list)
    findings: list[str] = Field(
        default_factory=list,
        description="What the work found out (in code, data or tool output), where, cited.",
    )
    current_work: str = ""
    next_step: str = ""
    open_questions: list[str] = Field(default_factory=list)
    compaction_notes: list[str] = Field(default_factory=list)


class SessionSummary(SummaryFields):
    """The narrative parts of the SESSION SUMMARY; tables and quotes are added deterministically."""

    model_config = ConfigDict(extra="ignore", title="SessionSummary")

    rejected_candidates: list[RejectedCandidate] = Field(
        default_factory=list,
        exclude_if=_empty,
        description="The candidates you leave out, by id, each with a one-line reason.",
    )
    #: Rejections that named no offered candidate (an unknown id, or one given twice):
    #: ignored, listed to say so. Written by the synthesizer, never by a model.
    ignored_rejections: SkipJsonSchema[list[RejectedCandidate]] = Field(
        default_factory=list, exclude_if=_empty
    )
    #: The model's fields that stated nothing, so the rules' value stands in (goal,
    #: current work, next step). Written by the synthesizer, never by a model.
    stood_in: SkipJsonSchema[list[str]] = Field(default_factory=list, exclude_if=_empty)


class BranchSummary(_Out):
    """What an abandoned branch tried, in a few cited sentences."""

    summary: str


class ProbeAnswer(_Out):
    """A judge's answer to one probe question of ``eval --probes``."""

    answer: str
    states_fact: bool


OUTPUT_SCHEMAS: tuple[type[BaseModel], ...] = (
    TurnSummary,
    SessionSummary,
    BranchSummary,
    ProbeAnswer,
)
