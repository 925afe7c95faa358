"""Score a restoration against a facts file: kept, cited correctly, contradictions, size.

Two ways to find a fact (``scoring``):

* ``markdown`` (the recorded devset's facts file, which has no ``must_not``): a fact is *kept*
  when one of its strings occurs in the summary text (the markdown without the references
  appendix and without table rows: a file named only in the files table is not kept),
  case-insensitively and not inside a longer word. It is *cited correctly* when a line that
  keeps it cites an ``[M#]`` resolving to one of the fact's messages (or lines).
* ``fields`` (the real devset's files, which have ``must_not``): the summary's fields cut into
  sentences, as the real devset's ``check.py`` scores (:mod:`.fields`), and the ``must_not``
  claims it makes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Literal

from ..model import Turn
from ..pipeline.restoration import ReferenceRow, Restoration
from ..pipeline.tokens import raw_tokens
from ..report.summary import summary_markdown
from ..timeline.numbering import cited_labels, uncite
from .facts_file import Fact, FactsFile
from .fields import MustNotHit, score_fields
from .model_use import ModelUse

Scoring = Literal["auto", "markdown", "fields"]

_WORD = re.compile(r"[A-Za-z0-9_]")


@dataclass
class FactScore:
    """How one fact fared."""

    id: str
    kind: str
    kept: bool
    cited: bool
    line: str = ""
    field: str = ""


@dataclass
class RecordingScore:
    """The scores of one restoration."""

    recording: str
    facts: list[FactScore]
    contradictions: list[str]
    superseded: list[str]
    tokens: int
    citations: int
    citations_resolved: int
    warnings: list[str] = field(default_factory=list)
    agent: str = ""
    scoring: str = "markdown"
    #: ``fields`` scoring only: the facts file's must_not items and the sentences that hit them.
    must_not_items: int = 0
    must_not_hits: list[MustNotHit] = field(default_factory=list)
    #: What the model contributed (set by ``eval``, which knows the run's ledger).
    model: ModelUse | None = None

    @property
    def must_not_hit_ids(self) -> list[str]:
        """The must_not items hit, each once."""
        return sorted({h.id for h in self.must_not_hits})

    @property
    def kept(self) -> float:
        """Share of facts kept, 0..1."""
        return sum(f.kept for f in self.facts) / len(self.facts) if self.facts else 1.0

    @property
    def cited(self) -> float:
        """Share of facts kept and cited correctly, 0..1."""
        return sum(f.cited for f in self.facts) / len(self.facts) if self.facts else 1.0

    @property
    def resolved(self) -> float:
        """Share of citations in the summary text that resolve to a message, 0..1."""
        return self.citations_resolved / self.citations if self.citations else 1.0


def string_pattern(s: str) -> re.Pattern[str]:
    """``s`` case-insensitively, not inside a longer word (at the ends that are word chars)."""
    before = r"(?<![A-Za-z0-9_])" if _WORD.match(s[:1]) else ""
    after = r"(?![A-Za-z0-9_])" if _WORD.match(s[-1:]) else ""
    return re.compile(before + re.escape(s) + after, re.IGNORECASE)


def scored_text(r: Restoration, log: Path | None = None) -> str:
    """The text facts are looked for in: the markdown without appendix and table rows.

    The recording's own log file names are blanked (a session id in a file name is not a
    kept fact).
    """
    md = summary_markdown(r, references=False)
    lines = [ln for ln in md.splitlines() if not ln.lstrip().startswith("|")]
    text = "\n".join(lines)
    if log is not None:
        for name in {PurePath(f).name for f in [str(log), *r.session.files]}:
            text = text.replace(name, " " * len(name))
    return text


def _resolves(ref: ReferenceRow, fact: Fact, recording: str, has_lines: bool) -> bool:
    ev = fact.evidence.get(recording)
    if ev is None:
        return False
    ids = set(ev.message_ids)
    # Readers split one log entry into several messages ("<id>.1", "<id>:2"): the entry's id
    # is what the facts name.
    base = re.split(r"[.:#]", ref.message_id, maxsplit=1)[0]
    if ref.message_id in ids or base in ids:
        return True
    return has_lines and ref.entry_index in ev.lines


def _contradictions(
    r: Restoration, turns: list[Turn], by_label: dict[str, ReferenceRow]
) -> list[str]:
    s = r.summary
    found: list[str] = []

    def norm(text: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", uncite(text)).lower().split())

    done = {norm(d) for d in s.progress.done}
    for item in [*s.progress.in_progress, *s.progress.blocked, s.next_step]:
        if item and norm(item) in done:
            found.append(f"both done and pending: {item}")
    turn_of = {m.id: t for t in turns for m in t.messages if m.is_human}
    for item in [*s.progress.in_progress, s.next_step]:
        for label in cited_labels(item):
            ref = by_label.get(label)
            turn = turn_of.get(ref.message_id) if ref is not None else None
            if turn is not None and not turn.interrupted and turn is not turns[-1]:
                found.append(f"pending, but turn {turn.number} was answered: {item}")
            elif turn is not None and not turn.interrupted:
                found.append(f"pending, but the last request was answered: {item}")
    return found


def _section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return match.group(1) if match else ""


def resolve_scoring(facts: FactsFile, scoring: Scoring = "auto") -> str:
    """``markdown`` or ``fields``: ``auto`` is ``fields`` for a facts file with ``must_not``."""
    if scoring == "auto":
        return "fields" if facts.must_not is not None else "markdown"
    return scoring


def score_restoration(
    r: Restoration,
    facts: FactsFile,
    recording: str,
    turns: list[Turn],
    log: Path | None = None,
    scoring: Scoring = "auto",
) -> RecordingScore:
    """Score ``r`` (a restoration of ``recording``) against the facts file.

    ``turns`` are the parsed turns of the same log: a next step that cites a request the
    log shows answered is a contradiction.
    """
    text = scored_text(r, log)
    lines = text.splitlines()
    by_label = {ref.label: ref for ref in r.references}
    how = resolve_scoring(facts, scoring)
    hits: list[MustNotHit] = []
    if how == "fields":
        scored = score_fields(
            r.model_dump(mode="json", include={"summary", "references"}), facts, recording
        )
        scores = [
            FactScore(f.id, f.kind, f.kept, f.cited, f.sentence[:200], f.field)
            for f in scored.facts
        ]
        hits = scored.hits
    else:
        scores = _markdown_facts(facts, recording, lines, by_label)
    constraints = _section(text, "Constraints and preferences")
    superseded = [
        f"{fact.id}: {s!r} stated as a current constraint"
        for fact in facts.facts
        for s in fact.superseded_strings
        if string_pattern(s).search(constraints)
    ]
    labels = cited_labels(text)
    return RecordingScore(
        recording=recording,
        facts=scores,
        contradictions=_contradictions(r, turns, by_label),
        superseded=superseded,
        tokens=raw_tokens(len(summary_markdown(r, references=False))),
        citations=len(labels),
        citations_resolved=sum(1 for label in labels if label in by_label),
        agent=r.session.agent,
        scoring=how,
        must_not_items=len(facts.must_not or []),
        must_not_hits=hits,
    )


def _markdown_facts(
    facts: FactsFile, recording: str, lines: list[str], by_label: dict[str, ReferenceRow]
) -> list[FactScore]:
    has_lines = bool(any(ev.lines for f in facts.facts for ev in [f.evidence.get(recording)] if ev))
    scores: list[FactScore] = []
    for fact in facts.facts:
        pats = [string_pattern(s) for s in fact.strings if s]
        keeping = [ln for ln in lines if any(p.search(ln) for p in pats)]
        cited = any(
            (ref := by_label.get(label)) is not None and _resolves(ref, fact, recording, has_lines)
            for ln in keeping
            for label in cited_labels(ln)
        )
        scores.append(
            FactScore(fact.id, fact.kind, bool(keeping), cited, keeping[0][:200] if keeping else "")
        )
    return scores
