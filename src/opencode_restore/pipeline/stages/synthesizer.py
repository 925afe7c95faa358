"""synthesizer: the final SESSION SUMMARY, with every citation checked."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel

from ...errors import ProviderError, RestoreError
from ...facts.statement import is_statement
from ...facts.summary import synthesis_from_facts
from ...facts.text import content_words
from ...facts.turn import MAX_REQUEST_CHARS, cap_middle
from ...facts.wording import short
from ...llm.offline import OfflineProvider
from ...llm.structured import complete_structured
from ...model import Turn
from ...redact import redact_value
from ...timeline.numbering import Numbering, citation_spans, cited_labels, uncite
from ..budget import Window
from ..context import StageContext
from ..prompting.prompts import quote_log, render
from ..prompting.render import RedactedFacts, redact_facts
from ..restoration import CitationStats, EvidenceItem
from ..schemas import (
    Decision,
    RejectedCandidate,
    SessionSummary,
    SummaryFields,
    TurnSummary,
)
from ..state import RestoreState

M = TypeVar("M", bound=BaseModel)


def _rewrite(text: str, keep: Callable[[str], list[str] | None]) -> str:
    """``text`` with each citation group given the labels ``keep`` returns for it (None:
    left as it is); a group left with no label goes, with the space before it."""
    out: list[str] = []
    pos = 0
    for start, end in citation_spans(text):
        labels = keep(text[start:end])
        if labels is None:
            continue
        out.append(text[pos:start] if labels else text[pos:start].rstrip())
        if labels:
            out.append("[" + ", ".join(labels) + "]")
        pos = end
    if pos == 0:
        return text
    out.append(text[pos:])
    return "".join(out)


def clean_citations(text: str, numbering: Numbering, stats: CitationStats) -> str:
    """Drop citations of labels never issued; count what was kept and removed."""

    def keep(group: str) -> list[str] | None:
        cit = numbering.resolve(group)
        stats.cited += len(cit.refs)
        if not cit.unknown:
            return None
        stats.removed_unknown += len(cit.unknown)
        for label in cit.unknown:
            if label not in stats.unknown_labels:
                stats.unknown_labels.append(label)
        return [r.label for r in cit.refs]

    return _rewrite(text, keep)


def keep_citations(text: str, within: AbstractSet[str], dropped: list[str]) -> str:
    """``text`` citing only the labels in ``within`` (a turn summary: its turn's messages);
    each label cut is added to ``dropped`` once. A summary of one turn that cites another
    turn's message, or one not issued yet, points the reader at what the turn did not show.
    """

    def keep(group: str) -> list[str] | None:
        labels = cited_labels(group)
        outside = [label for label in labels if label not in within]
        if not outside:
            return None
        dropped.extend(label for label in dict.fromkeys(outside) if label not in dropped)
        return [label for label in labels if label in within]

    return _rewrite(text, keep)


def clean_model(model: M, numbering: Numbering, stats: CitationStats) -> M:
    """``clean_citations`` applied to every string inside a pydantic model."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return clean_citations(value, numbering, stats)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return type(model).model_validate(walk(model.model_dump()))


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


async def synthesize(
    turns: list[Turn],
    state: RestoreState,
    ctx: StageContext,
    window: Window,
    evidence: list[EvidenceItem],
    parsed: list[dict[str, Any]],
) -> tuple[SessionSummary, str | None]:
    """synthesizer's entry point: the SESSION SUMMARY over the rendered timeline.

    ``parsed`` holds every turn's ``turn_facts``, kept from the turn stage: the turns
    may have dropped their message bodies since (``RestoreOptions.keep_messages``).
    Returns the summary, the rules' certain facts and the candidates the model kept merged
    in (see ``merge_deterministic``), and, when the model failed and the deterministic
    fallback was used, the reason. ``clean_outputs`` checks the citations.
    """
    first = next((m for t in turns for m in t.messages if m.is_human), None)
    # Redacted here, once: the turns' facts are redacted already when the turn stage
    # redacted them for the provider (`RedactedFacts`), and are not scanned again.
    parsed_turns = [redact_facts(f, ctx.redact) for f in parsed]
    rest = {
        "first_request": (
            {
                "text": cap_middle(first.text, MAX_REQUEST_CHARS, "the request"),
                "label": ctx.numbering.label_for(first.id),
            }
            if first
            else None
        ),
        "turn_summaries": [s.model_dump() for s in state.summaries],
        "constraints": state.constraints,
        "decisions": [d.model_dump() for d in state.decisions],
        "open_questions": state.open_questions,
        "failed_turns": [f.turn for f in state.failed_turns],
        "evidence": [e.model_dump() for e in evidence],
    }
    facts = RedactedFacts({"parsed_turns": parsed_turns, **redact_value(rest, ctx.redact)})
    # The offline provider writes the rules' summary itself: it is offered nothing.
    model = not isinstance(ctx.provider, OfflineProvider)
    found: SessionSummary | None = None
    offered: list[Candidate] = []
    if model:
        found = SessionSummary.model_validate(synthesis_from_facts(facts))
        offered = offer(candidates(found, rejection_labels(parsed)), candidate_chars(window.budget))
    prompt = render(
        "synthesis",
        ctx.config.prompts.dir,
        session=ctx.session_header,
        turn_count=len(turns),
        state_json=quote_log(_json(state.for_prompt())),
        evidence_json=quote_log(_json([e.model_dump() for e in evidence])) if evidence else "",
        failed_turns=[f.turn for f in state.failed_turns],
        rules_merged=model,
        candidates_json=quote_log(candidates_json(offered)) if offered else "",
    )
    # A model may reject candidates (its schema has the field); the offline rules are
    # asked for the fields they write.
    schema = SessionSummary if model else SummaryFields
    request = await window.request(prompt, "synthesis", facts=facts, schema=schema)
    fallback_reason: str | None = None
    try:
        result = await complete_structured(
            ctx.provider, request, policy=ctx.policy, ledger=ctx.ledger
        )
        window.observe(request, result)
    except (ProviderError, RestoreError) as exc:
        fallback_reason = str(exc)
        # A network provider's request carries no facts, and facts are all the offline
        # provider writes from: give it them (redacted above).
        offline = replace(request, facts=facts)
        result = await OfflineProvider().complete(offline)
    answer = result.parsed
    assert isinstance(answer, SummaryFields)
    summary = SessionSummary.model_validate(answer.model_dump())
    if found is not None and fallback_reason is None:
        summary = merge_deterministic(
            summary,
            found,
            offered,
            rejection_labels(parsed),
            cites=lambda text: bool(ctx.numbering.resolve(text).refs),
        )
    return summary, fallback_reason


# -- what the rules found: certain facts and candidates ---------------------------------

#: How much of the context budget the offered candidates may take, and at most.
CANDIDATE_SHARE = 0.1
CANDIDATE_MAX_TOKENS = 3000
#: One candidate's text in the prompt (the summary gets the whole item).
CANDIDATE_TEXT_CHARS = 400
#: A model's reason for a rejection, as the restoration records it.
REASON_CHARS = 300
#: A line the rules write about a tool call the user rejected (a done line's "the user
#: rejected …", a constraint's "Rejecting …, the user said: …").
_USER_REJECTED = re.compile(r"\bthe user rejected\b|^Rejecting\b.*\bthe user said\b", re.I)
#: How the rules say that nothing is left to do (a non-step, see ``_merge_step``).
NOTHING_PENDING = "None pending"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One interpretive item the rules found: offered to the model under ``id``."""

    id: str
    section: str
    text: str
    decision: Decision | None = None

    def prompt(self) -> dict[str, str]:
        """How the synthesis prompt lists it."""
        return {
            "id": self.id,
            "section": self.section,
            "text": cap_middle(self.text, CANDIDATE_TEXT_CHARS, "this candidate"),
        }


def rejection_labels(parsed: Iterable[dict[str, Any]]) -> set[str]:
    """The labels the rules cite for the tool calls the user rejected."""
    return {str(r["label"]) for t in parsed for r in t.get("rejected", []) if r.get("label")}


def is_rejection(item: str, labels: AbstractSet[str]) -> bool:
    """True for a rules' line about a tool call the user rejected (it says so, or cites
    the rejection): a certain fact."""
    return bool(_USER_REJECTED.search(item)) or not labels.isdisjoint(cited_labels(item))


def _decision_text(d: Decision) -> str:
    return f"{d.decision} Reason: {d.reason}" if d.reason else d.decision


def candidates(
    found: SessionSummary, rejections: AbstractSet[str] = frozenset()
) -> list[Candidate]:
    """The interpretive items of the rules' summary, numbered C1, C2, … in section order.

    Certain facts are not candidates: the turn lines, blocked turns, an unfinished last
    request (in progress, next step), the end state (current work), compactions, and the
    user's rejections (wherever they are listed).
    """
    items: list[tuple[str, str, Decision | None]] = []
    items += [("errors_fixes_ruled_out", i, None) for i in found.errors_fixes_ruled_out]
    items += [("key_decisions", _decision_text(d), d) for d in found.key_decisions]
    items += [("open_questions", i, None) for i in found.open_questions]
    items += [("findings", i, None) for i in found.findings]
    items += [
        ("constraints_preferences", i, None)
        for i in found.constraints_preferences
        if not is_rejection(i, rejections)
    ]
    if found.next_step and not found.progress.in_progress:
        items.append(("next_step", found.next_step, None))
    return [
        Candidate(f"C{n}", section, text, decision)
        for n, (section, text, decision) in enumerate(items, start=1)
    ]


def _line(c: Candidate) -> str:
    return orjson.dumps(c.prompt()).decode()


def candidates_json(offered: Sequence[Candidate]) -> str:
    """The offered candidates as a JSON array, one per line."""
    return "[\n" + ",\n".join(_line(c) for c in offered) + "\n]"


def candidate_chars(budget_tokens: int) -> int:
    """The characters the offered candidates may take in the synthesis prompt."""
    return int(min(budget_tokens * CANDIDATE_SHARE, CANDIDATE_MAX_TOKENS) * 3.5)


def offer(found: Sequence[Candidate], limit: int) -> list[Candidate]:
    """The candidates that fit in ``limit`` characters, in order. Those that do not fit
    are not offered, so no model can reject them: they are merged as they are."""
    out: list[Candidate] = []
    used = 0
    for c in found:
        size = len(_line(c)) + 2
        if used + size > limit:
            break
        out.append(c)
        used += size
    return out


_CODE = re.compile(r"`([^`]+)`")


def _covered(item: str, text: str) -> bool:
    """True when ``text`` already states ``item``: every code name of it, or (with none)
    most of its meaningful words."""
    names = set(_CODE.findall(item))
    if names:
        return all(n.lower() in text for n in names)
    words = content_words(uncite(item))
    return not words or len(words & content_words(text)) >= 0.6 * len(words)


def _merge_list(model: list[str], found: list[str]) -> list[str]:
    text = " ".join(model).lower()
    return model + [f for f in found if not _covered(f, text)]


def _merge_text(model: str, found: str) -> str:
    """``model`` with ``found`` after it unless it already says it."""
    if not found or _covered(found, model.lower()):
        return model
    return f"{model} {found}".strip()


def _merge_step(model: str, found: str) -> str:
    """The next step: the model's, with the rules' added when it does not say it. The
    rules' "nothing pending" is no step: it only fills an empty one."""
    if found.startswith(NOTHING_PENDING):
        return model or found
    return _merge_text(model, found)


def has_citation(text: str) -> bool:
    """True when ``text`` cites a message label (``[M#]``), issued or not."""
    return bool(cited_labels(text, limit=1))


def _rejections(
    model: SessionSummary, offered: Sequence[Candidate], cites: Callable[[str], bool]
) -> tuple[dict[str, RejectedCandidate], list[RejectedCandidate]]:
    """The model's rejections of offered candidates (by id), and the ones ignored."""
    by_id = {c.id: c for c in offered}
    honoured: dict[str, RejectedCandidate] = {}
    ignored: list[RejectedCandidate] = []
    for r in model.rejected_candidates:
        key = r.id.strip().upper()
        c = by_id.get(key)
        # A rejection must say why and point at the message that shows the candidate
        # wrong or stale: a reason that states nothing ("C1", "") or cites nothing is no
        # judgement of the log, and a weak model that rejects at random would otherwise
        # drop true facts (a missing fact is the lesser harm only when the log says so).
        if c is None or key in honoured or not is_statement(r.reason) or not cites(r.reason):
            ignored.append(
                RejectedCandidate(id=short(r.id, 40), reason=short(r.reason, REASON_CHARS))
            )
            continue
        reason = short(r.reason, REASON_CHARS)
        honoured[key] = RejectedCandidate(id=key, reason=reason, section=c.section, text=c.text)
    return honoured, ignored


def _statements(items: list[str]) -> list[str]:
    return [i for i in items if is_statement(i)]


def statements_only(model: SessionSummary) -> SessionSummary:
    """The model's summary without the texts that state nothing (``facts.statement``): a
    label, number, placeholder or blank where a sentence belongs. A field is emptied and
    an item or decision left out, so the merge puts the rules' value in its place."""
    out = model.model_copy(deep=True)
    out.goal, out.current_work, out.next_step = (
        t if is_statement(t) else "" for t in (model.goal, model.current_work, model.next_step)
    )
    for name in ("done", "in_progress", "blocked"):
        setattr(out.progress, name, _statements(getattr(model.progress, name)))
    for name in (
        "constraints_preferences",
        "errors_fixes_ruled_out",
        "findings",
        "open_questions",
        "compaction_notes",
    ):
        setattr(out, name, _statements(getattr(model, name)))
    out.key_decisions = [
        Decision(decision=d.decision, reason=d.reason if is_statement(d.reason) else "")
        for d in model.key_decisions
        if is_statement(d.decision)
    ]
    return out


def merge_deterministic(
    model: SessionSummary,
    found: SessionSummary,
    offered: Sequence[Candidate] = (),
    rejections: AbstractSet[str] = frozenset(),
    *,
    cites: Callable[[str], bool] = has_citation,
) -> SessionSummary:
    """The model's summary with what the rules found in the log merged in.

    Certain facts (the per-turn lines with their files, commits and PRs; an unfinished
    last request as work in progress and next step; the end state; the
    compactions; the user's rejections) are added whatever the model wrote, unless it
    already states them. The rules' interpretive items (``candidates``: errors and fixes,
    decisions, open questions, findings, constraints, a next step) are added the same way,
    except the ``offered`` ones the model rejected by id: those are left out and listed,
    with the model's reason, in ``rejected_candidates``. A rejection of an id not offered
    is ignored and listed in ``ignored_rejections``, as is one that gives no reason or
    whose reason cites no message (``cites``: by default any ``[M#]``; a restore asks
    that the label names a message of the session). A model that rejects nothing loses
    nothing. Texts of the model that state nothing are left out first
    (``statements_only``): the rules' goal, current work and next step stand in for
    blank ones, listed in ``stood_in``.
    """
    model = statements_only(model)
    out = model.model_copy(deep=True)
    honoured, ignored = _rejections(model, offered, cites)
    out.rejected_candidates = list(honoured.values())
    out.ignored_rejections = ignored
    kept = [c for c in candidates(found, rejections) if c.id not in honoured]

    def kept_in(section: str) -> list[str]:
        return [c.text for c in kept if c.section == section]

    # Certain facts.
    out.goal = model.goal or found.goal
    out.progress.done = _merge_list(model.progress.done, found.progress.done)
    out.progress.blocked = _merge_list(model.progress.blocked, found.progress.blocked)
    out.compaction_notes = _merge_list(model.compaction_notes, found.compaction_notes)
    out.current_work = _merge_text(model.current_work, found.current_work)
    user_rejected = [i for i in found.constraints_preferences if is_rejection(i, rejections)]
    # Candidates the model kept.
    out.constraints_preferences = _merge_list(
        model.constraints_preferences, kept_in("constraints_preferences") + user_rejected
    )
    out.errors_fixes_ruled_out = _merge_list(
        model.errors_fixes_ruled_out, kept_in("errors_fixes_ruled_out")
    )
    out.findings = _merge_list(model.findings, kept_in("findings"))
    out.open_questions = _merge_list(model.open_questions, kept_in("open_questions"))
    decided = " ".join(f"{d.decision} {d.reason}" for d in model.key_decisions).lower()
    out.key_decisions += [
        c.decision
        for c in kept
        if c.decision is not None and not _covered(c.decision.decision, decided)
    ]
    if found.progress.in_progress:
        # The log shows the last request unfinished: that is the next step, whatever the
        # model wrote.
        out.progress.in_progress = _merge_list(
            model.progress.in_progress, found.progress.in_progress
        )
        if not set(cited_labels(found.next_step)) & set(cited_labels(model.next_step)):
            out.next_step = f"{found.next_step} {model.next_step}".strip()
    else:
        # The last request was answered: it is not in progress, and not the next step.
        answered = set(cited_labels(found.progress.done[-1])) if found.progress.done else set()
        out.progress.in_progress = [
            i for i in model.progress.in_progress if not set(cited_labels(i)) & answered
        ]
        for step in kept_in("next_step"):
            out.next_step = _merge_step(model.next_step, step)
    out.stood_in = [
        name
        for name in ("goal", "current_work", "next_step")
        if getattr(out, name) and not getattr(model, name)
    ]
    return out


def clean_outputs(
    summary: SessionSummary, state: RestoreState, numbering: Numbering
) -> tuple[SessionSummary, list[TurnSummary], CitationStats]:
    """The summary and every turn summary with unknown citations removed, and the counts
    (with those the turn stage cut as outside their turn, ``keep_citations``)."""
    stats = CitationStats()
    cleaned = clean_model(summary, numbering, stats)
    cleaned_turns = [clean_model(s, numbering, stats) for s in state.summaries]
    for s in state.summaries:
        stats.removed_outside_turn += len(s.outside_citations)
        stats.outside_turn_labels += [
            label for label in s.outside_citations if label not in stats.outside_turn_labels
        ]
    return cleaned, cleaned_turns, stats
