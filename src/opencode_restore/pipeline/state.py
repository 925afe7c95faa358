"""RestoreState: what the restore knows so far, carried from turn to turn.

Artifacts and commands come from the turn parser (deterministic); constraints, decisions and
questions come from validated turn summaries.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, cast

from pydantic import ValidationError

from ..model import ArtifactKind, Turn
from .journal.store import Streamed
from .schemas import Decision, TurnSummary

#: Caps on what the prompt's accumulated state repeats every turn.
PROMPT_FILES = 20
PROMPT_ITEMS = 20


@dataclass
class ArtifactRecord:
    """One file across the session: the actions seen, the turns, and the model's notes."""

    path: str
    actions: list[ArtifactKind] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class CommandRecord:
    command: str
    turn: int
    label: str | None
    exit_code: int | None
    is_error: bool


@dataclass
class FailedTurn:
    turn: int
    error: str


@dataclass
class RestoreState:
    """The accumulated state of one restore."""

    artifacts: dict[str, ArtifactRecord] = field(default_factory=dict)
    commands: list[CommandRecord] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    resolved_questions: list[str] = field(default_factory=list)
    summaries: list[TurnSummary] = field(default_factory=list)
    failed_turns: list[FailedTurn] = field(default_factory=list)

    def add_parsed_turn(self, turn: Turn, label_of: dict[str, str]) -> None:
        """Merge the parser's deterministic facts for ``turn`` (files, commands)."""
        for a in turn.artifacts:
            rec = self.artifacts.setdefault(a.file_path, ArtifactRecord(a.file_path))
            if a.action not in rec.actions:
                rec.actions.append(a.action)
            if turn.number not in rec.turns:
                rec.turns.append(turn.number)
            label = label_of.get(a.message_id)
            if label and label not in rec.labels:
                rec.labels.append(label)
        for c in turn.commands:
            self.commands.append(
                CommandRecord(
                    c.command, turn.number, label_of.get(c.message_id), c.exit_code, c.is_error
                )
            )

    def add_summary(self, summary: TurnSummary) -> None:
        """Merge a validated turn summary: notes, constraints, decisions, questions."""
        self.summaries.append(summary)
        for note in summary.artifacts_modified:
            rec = self.artifacts.get(note.path)
            if rec is not None and note.note and note.note not in rec.notes:
                rec.notes.append(note.note)
        _extend_unique(self.constraints, summary.constraints_assumptions_added)
        _extend_unique(self.errors, summary.errors_and_fixes)
        for d in summary.decisions:
            if all(d.decision != x.decision for x in self.decisions):
                self.decisions.append(d)
        resolved = {q.strip().lower() for q in summary.resolved_questions}
        if resolved:
            still = [q for q in self.open_questions if q.strip().lower() not in resolved]
            self.resolved_questions.extend(q for q in self.open_questions if q not in still)
            self.open_questions = still
        _extend_unique(self.open_questions, summary.open_questions)

    def fail_turn(self, turn: int, error: str) -> None:
        """Record a turn whose summary could not be produced; the previous state carries on."""
        self.failed_turns.append(FailedTurn(turn, error))

    def for_prompt(self) -> dict[str, Any]:
        """The accumulated state as plain data for a prompt (compact, deterministic).

        It travels in the volatile tail of every turn call, so it is bounded: the most
        recently touched files, the latest decisions and errors. The full history is in
        the turn summaries earlier in the prompt.
        """
        recent = sorted(self.artifacts.values(), key=lambda r: r.turns[-1] if r.turns else 0)
        return {
            "artifacts": [
                {"path": r.path, "actions": r.actions, "turns": r.turns[-3:], "notes": r.notes[-1:]}
                for r in recent[-PROMPT_FILES:]
            ],
            "files_total": len(self.artifacts),
            "constraints": self.constraints[-PROMPT_ITEMS:],
            "decisions": [d.model_dump() for d in self.decisions[-PROMPT_ITEMS:]],
            "errors": self.errors[-10:],
            "open_questions": self.open_questions,
        }

    def to_dict(self, *, streamed: bool = False) -> dict[str, Any]:
        """Everything, as JSON-ready data (saved in the journal).

        ``streamed``: the summaries are dumped while a snapshot writes them
        (``journal.store.Streamed``), for a store that writes the data and keeps nothing:
        a long restore's last snapshot held every summary twice, object and dict
        (bench/scale.py's peak RSS).
        """
        summaries: list[dict[str, Any]] | Streamed = (
            Streamed(lambda: (s.model_dump() for s in self.summaries), len(self.summaries))
            if streamed
            else [s.model_dump() for s in self.summaries]
        )
        return {
            "artifacts": [asdict(r) for r in self.artifacts.values()],
            "commands": [asdict(c) for c in self.commands],
            "constraints": self.constraints,
            "decisions": [d.model_dump() for d in self.decisions],
            "errors": self.errors,
            "open_questions": self.open_questions,
            "resolved_questions": self.resolved_questions,
            "summaries": summaries,
            "failed_turns": [asdict(f) for f in self.failed_turns],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RestoreState:
        """The state saved by ``to_dict``.

        Raises:
            ValueError: the data does not have the saved shape.
        """
        try:
            artifacts = [ArtifactRecord(**a) for a in data["artifacts"]]
            return cls(
                artifacts={a.path: a for a in artifacts},
                commands=[CommandRecord(**c) for c in data["commands"]],
                constraints=list(data["constraints"]),
                decisions=[Decision.model_validate(d) for d in data["decisions"]],
                errors=list(data["errors"]),
                open_questions=list(data["open_questions"]),
                resolved_questions=list(data["resolved_questions"]),
                summaries=[TurnSummary.model_validate(s) for s in data["summaries"]],
                failed_turns=[FailedTurn(**cast(dict[str, Any], f)) for f in data["failed_turns"]],
            )
        except (KeyError, TypeError, ValidationError) as exc:
            raise ValueError(f"not a saved restore state: {exc}") from exc


def _extend_unique(target: list[str], items: list[str]) -> None:
    seen = {t.strip().lower() for t in target}
    for item in items:
        key = item.strip().lower()
        if key and key not in seen:
            target.append(item)
            seen.add(key)
