"""Scoring on the summary's fields, as the real devset's ``check.py`` scores.

``shared/samples/real-devset/check.py`` (standard library only) is that set's reference
scorer; this module gives the same numbers on the same restoration JSON
(``tests/evaluate/test_fields.py`` runs both). It reads the restoration's JSON form, not the
markdown:

* the text is the SESSION SUMMARY's free-text fields (goal, constraints_preferences,
  errors_fixes_ruled_out, open_questions, compaction_notes, progress done/in_progress/blocked,
  key_decisions with ``Reason:``, current_work, next_step), not findings, not the tables;
* each field is cut into sentences at line breaks and sentence ends; labels opening a piece
  belong to the sentence before; a sentence without labels borrows those of the next
  labelled sentence of the same item; the log's own file name is blanked in each sentence;
* a fact is *kept* when a sentence holds one of its strings (any case, not glued to a longer
  word at a word-character end), *cited* when such a sentence has an ``[M#]`` whose reference's
  message id (cut at the first ``:``) is one of the fact's ids, or whose entry index is one of
  the fact's lines in the recording's log;
* a ``must_not`` item is *hit* when a sentence (of its ``fields``, if given) holds one of its
  ``strings``, one of its ``with_strings`` if any and none of its ``except_strings`` (plain
  substrings, any case). Items are counted, not sentences.

The recorded devset's facts file has no ``must_not`` and keeps :mod:`.score`'s markdown
scoring (its figures were tuned on it).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .facts_file import FactsFile

_LABELS = re.compile(r"\[(M\d+(?:\s*[,;]\s*M\d+)*)\]")
_OPENING_LABELS = re.compile(r"^\s*((?:\[M\d+(?:\s*[,;]\s*M\d+)*\]\s*)+)")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=\S)")
_SUMMARY_LISTS = (
    "constraints_preferences",
    "errors_fixes_ruled_out",
    "open_questions",
    "compaction_notes",
)
_PROGRESS_PARTS = ("done", "in_progress", "blocked")


def contains(text: str, needle: str) -> bool:
    """``needle`` in ``text``, any case, not glued to a longer word at a word-character end."""
    pattern = re.escape(needle)
    if re.match(r"\w", needle[:1]):
        pattern = r"(?<![A-Za-z0-9_])" + pattern
    if re.match(r"\w", needle[-1:]):
        pattern = pattern + r"(?![A-Za-z0-9_])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def first_found(text: str, needles: Iterable[str]) -> str | None:
    """The first of ``needles`` that ``text`` contains."""
    return next((n for n in needles if contains(text, n)), None)


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def summary_fields(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, text) for each free-text part of the summary, in a fixed order."""
    out: list[tuple[str, Any]] = [("goal", summary.get("goal") or "")]
    for key in _SUMMARY_LISTS:
        out += [(key, item) for item in _items(summary.get(key))]
    progress = summary.get("progress") or {}
    for part in _PROGRESS_PARTS:
        out += [("progress." + part, item) for item in _items(progress.get(part))]
    for decision in _items(summary.get("key_decisions")):
        text = (decision.get("decision") or "").strip()
        if decision.get("reason"):
            text += " Reason: " + decision["reason"].strip()
        out.append(("key_decisions", text))
    out += [
        ("current_work", summary.get("current_work") or ""),
        ("next_step", summary.get("next_step") or ""),
    ]
    return [(name, text) for name, text in out if isinstance(text, str) and text.strip()]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``; labels that open a piece go to the sentence before it."""
    pieces: list[str] = []
    for line in text.splitlines():
        for piece in _SENTENCE_BREAK.split(line):
            opening = _OPENING_LABELS.match(piece)
            if opening and pieces:
                pieces[-1] += " " + opening.group(1).strip()
                piece = piece[opening.end() :]
            if piece.strip():
                pieces.append(piece.strip())
    return pieces


def labels_in(sentence: str) -> list[str]:
    """The ``M#`` labels a sentence cites, in order."""
    groups = _LABELS.findall(sentence)
    return [part.strip() for group in groups for part in re.split(r"[,;]", group)]


def labelled_sentences(text: str) -> list[tuple[str, list[str]]]:
    """Each sentence with its labels; unlabelled ones take those of the next labelled one."""
    done: list[tuple[str, list[str]]] = []
    waiting: list[str] = []
    for sentence in split_sentences(text):
        waiting.append(sentence)
        own = labels_in(sentence)
        if own:
            done += [(s, own) for s in waiting]
            waiting = []
    return done + [(s, []) for s in waiting]


@dataclass
class FieldFact:
    """How one fact fared."""

    id: str
    kind: str
    kept: bool
    cited: bool
    field: str = ""
    sentence: str = ""
    labels_seen: list[str] = dataclasses.field(default_factory=list)


@dataclass
class MustNotHit:
    """A summary sentence that makes a claim the log contradicts."""

    id: str
    field: str
    sentence: str


@dataclass
class FieldsScore:
    """The facts and must_not items of one restoration."""

    facts: list[FieldFact]
    hits: list[MustNotHit]
    must_not_items: int

    @property
    def hit_ids(self) -> list[str]:
        """The must_not items hit, each once."""
        return sorted({h.id for h in self.hits})


def score_fields(restoration: Mapping[str, Any], facts: FactsFile, recording: str) -> FieldsScore:
    """Score a restoration's JSON form (``Restoration.model_dump(mode="json")``)."""
    rec = facts.recordings[recording]
    log_name = os.path.basename(rec.log)
    blanked = [os.path.basename(p) for p in [rec.log, *rec.also]]
    blank_re = re.compile("|".join(re.escape(b) for b in blanked), re.IGNORECASE)
    references = {r.get("label"): r for r in _items(restoration.get("references"))}
    sentences = [
        (name, blank_re.sub(" ", s), labels)
        for name, text in summary_fields(restoration.get("summary") or {})
        for s, labels in labelled_sentences(text)
    ]
    rows: list[FieldFact] = []
    for fact in facts.facts:
        ev = fact.evidence.get(recording)
        ids = set(ev.message_ids) if ev else set()
        lines = set(ev.lines) if ev else set()
        keeping = [(f, s, labs) for f, s, labs in sentences if first_found(s, fact.strings)]
        cited_by: str | None = None
        seen: list[str] = []
        for _name, _s, labs in keeping:
            for label in labs:
                ref = references.get(label)
                if ref is None:
                    seen.append(f"{label}=?")
                    continue
                msg = str(ref.get("message_id") or "").partition(":")[0]
                by_line = (
                    ref.get("entry_index") in lines
                    and os.path.basename(ref.get("file") or "") == log_name
                )
                good = msg in ids or by_line
                seen.append(f"{label}={'ok' if good else 'wrong'}")
                if good and cited_by is None:
                    cited_by = label
        first = keeping[0] if keeping else ("", "", [])
        rows.append(
            FieldFact(
                fact.id, fact.kind, bool(keeping), cited_by is not None, first[0], first[1], seen
            )
        )
    hits: list[MustNotHit] = []
    for item in facts.must_not or []:
        for name, s, _labs in sentences:
            if item.fields and not any(name.startswith(f) for f in item.fields):
                continue
            low = s.lower()
            if not first_found(s, item.strings):
                continue
            if item.with_strings and not any(w.lower() in low for w in item.with_strings):
                continue
            if any(x.lower() in low for x in item.except_strings):
                continue
            hits.append(MustNotHit(item.id, name, s))
    return FieldsScore(rows, hits, len(facts.must_not or []))
