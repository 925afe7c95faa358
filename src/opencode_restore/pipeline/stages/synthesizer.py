"""synthesizer: the final SESSION SUMMARY, with every citation checked."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel

from ...errors import ProviderError, RestoreError
from ...facts.summary import synthesis_from_facts
from ...facts.text import content_words
from ...facts.turn import MAX_REQUEST_CHARS, cap_middle
from ...llm.offline import OfflineProvider
from ...llm.structured import complete_structured
from ...model import Turn
from ...redact import redact_value
from ...timeline.numbering import Numbering, citation_spans, cited_labels, uncite
from ..budget import Window
from ..context import StageContext
from ..prompting.prompts import quote_log, render
from ..restoration import CitationStats, EvidenceItem
from ..schemas import SessionSummary, TurnSummary
from ..state import RestoreState

M = TypeVar("M", bound=BaseModel)


def clean_citations(text: str, numbering: Numbering, stats: CitationStats) -> str:
    """Drop citations of labels never issued; count what was kept and removed."""
    out: list[str] = []
    pos = 0
    for start, end in citation_spans(text):
        group = text[start:end]
        cit = numbering.resolve(group)
        stats.cited += len(cit.refs)
        if not cit.unknown:
            continue
        stats.removed_unknown += len(cit.unknown)
        for label in cit.unknown:
            if label not in stats.unknown_labels:
                stats.unknown_labels.append(label)
        out.append(text[pos:start].rstrip() if not cit.refs else text[pos:start])
        if cit.refs:
            out.append("[" + ", ".join(r.label for r in cit.refs) + "]")
        pos = end
    if pos == 0:
        return text
    out.append(text[pos:])
    return "".join(out)


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
    Returns the summary as the model wrote it and, when the model failed and the
    deterministic fallback was used, the reason. ``clean_outputs`` checks the citations.
    """
    first = next((m for t in turns for m in t.messages if m.is_human), None)
    facts = {
        "parsed_turns": parsed,
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
    prompt = render(
        "synthesis",
        ctx.config.prompts.dir,
        session=ctx.session_header,
        turn_count=len(turns),
        state_json=quote_log(_json(state.for_prompt())),
        evidence_json=quote_log(_json([e.model_dump() for e in evidence])) if evidence else "",
        failed_turns=[f.turn for f in state.failed_turns],
    )
    request = await window.request(prompt, "synthesis", facts=facts, schema=SessionSummary)
    fallback_reason: str | None = None
    try:
        result = await complete_structured(
            ctx.provider, request, policy=ctx.policy, ledger=ctx.ledger
        )
        window.observe(request, result)
    except (ProviderError, RestoreError) as exc:
        fallback_reason = str(exc)
        # A network provider's request carries no facts, and facts are all the offline
        # provider writes from: give it them, redacted as its own requests are.
        offline = replace(request, facts=redact_value(facts, ctx.redact))
        result = await OfflineProvider().complete(offline)
    summary = result.parsed
    assert isinstance(summary, SessionSummary)
    if not isinstance(ctx.provider, OfflineProvider) and fallback_reason is None:
        found = synthesis_from_facts(redact_value(facts, ctx.redact))
        summary = merge_deterministic(summary, SessionSummary.model_validate(found))
    return summary, fallback_reason


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


def merge_deterministic(model: SessionSummary, found: SessionSummary) -> SessionSummary:
    """The model's summary with every fact the rules found that it left out added back.

    The rules read the log itself (rules, choices, failing runs and their fixes, findings,
    open questions, an unfinished last request); a model answer may drop any of them.
    """
    out = model.model_copy(deep=True)
    out.constraints_preferences = _merge_list(
        model.constraints_preferences, found.constraints_preferences
    )
    out.errors_fixes_ruled_out = _merge_list(
        model.errors_fixes_ruled_out, found.errors_fixes_ruled_out
    )
    out.findings = _merge_list(model.findings, found.findings)
    out.open_questions = _merge_list(model.open_questions, found.open_questions)
    out.progress.done = _merge_list(model.progress.done, found.progress.done)
    decided = " ".join(f"{d.decision} {d.reason}" for d in model.key_decisions).lower()
    out.key_decisions += [d for d in found.key_decisions if not _covered(d.decision, decided)]
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
    return out


def clean_outputs(
    summary: SessionSummary, state: RestoreState, numbering: Numbering
) -> tuple[SessionSummary, list[TurnSummary], CitationStats]:
    """The summary and every turn summary with unknown citations removed, and the counts."""
    stats = CitationStats()
    cleaned = clean_model(summary, numbering, stats)
    cleaned_turns = [clean_model(s, numbering, stats) for s in state.summaries]
    return cleaned, cleaned_turns, stats
