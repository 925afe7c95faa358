"""turn_summarizer: one LLM call per turn, over the journal.

Each call renders the timeline (instructions, session header, range summary, earlier
turns) and ends with the current turn: accumulated state, parsed facts, transcript.

A turn whose transcript is longer than ``max_turn_chars`` (one request answered by
hundreds of tool calls) is never cut blind: it is sent in consecutive segments, split
between messages, one call each. Every call after the first carries the TURN SUMMARY the
model wrote of the segments before it and is asked to extend it, so the last call's answer
covers the whole turn. The timeline prefix is the same for every segment (cached once);
the parsed facts are always those of the whole turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson

from ...errors import ProviderError, RestoreError
from ...facts.statement import is_statement
from ...facts.turn import cap_middle, turn_facts
from ...facts.turn_summary import turn_summary
from ...llm.offline import OfflineProvider
from ...llm.structured import StructuredOutputError, complete_structured
from ...model import Turn
from ...redact import redact_value
from ..budget import Window
from ..context import StageContext
from ..prompting.prompts import RenderedPrompt, quote_log, render
from ..prompting.render import redact_facts
from ..restoration import WHOLE_SUMMARY
from ..schemas import ArtifactNote, Decision, TurnSummary
from ..state import RestoreState
from .synthesizer import keep_citations

Progress = Callable[[int, int], None]
MIN_TRANSCRIPT_CHARS = 2000
#: Where a rendered message starts in a transcript (``messages_as_str`` joins them by newline).
_MESSAGE_START = "\n[M"


def segments(transcript: str, limit: int) -> list[str]:
    """``transcript`` in consecutive parts of at most ``limit`` characters, split between
    messages; a single message longer than ``limit`` is cut in its middle (marked)."""
    if len(transcript) <= limit:
        return [transcript]
    units: list[str] = []
    start = 0
    while start < len(transcript):
        at = transcript.find(_MESSAGE_START, start + 1)
        end = len(transcript) if at == -1 else at
        units.append(_fit(transcript[start:end].strip("\n"), limit))
        start = end
    parts: list[str] = []
    current = ""
    for unit in units:
        if current and len(current) + 1 + len(unit) > limit:
            parts.append(current)
            current = unit
        else:
            current = f"{current}\n{unit}" if current else unit
    parts.append(current)
    return parts


def _fit(message: str, limit: int) -> str:
    """``message`` cut in its middle to at most ``limit`` characters.

    The cut's mark takes room too: the cut widens until the mark fits, and a limit too
    small for any mark cuts the message short unmarked.
    """
    capped = cap_middle(message, limit, "this message")
    room = limit
    while len(capped) > limit:
        room -= len(capped) - limit
        capped = cap_middle(message, room, "this message") if room > 0 else message[:limit]
    return capped


@dataclass(slots=True)
class TurnOutcome:
    """What one turn produced: the summary (or the error) and the labels it was given."""

    turn: Turn
    summary: TurnSummary | None
    error: str | None
    labels: tuple[str, str] | None
    labels_end: int
    #: The turn's parsed facts (``turn_facts``; `RedactedFacts` when they were redacted
    #: for the provider): the synthesis gets them without the turn.
    facts: dict[str, Any]


#: Facts the transcript already shows verbatim; the offline provider still gets them.
_NOT_PROMPTED = ("assistant_texts", "last_assistant")


def _json(value: object) -> str:
    # Compact: this sits in the uncached tail of every call, where whitespace costs.
    return orjson.dumps(value).decode()


def _refit(prompt: Callable[[int], RenderedPrompt], size: int, excess: int) -> RenderedPrompt:
    """``prompt`` with its transcript ``excess`` characters shorter (never below a floor)."""
    return prompt(max(MIN_TRANSCRIPT_CHARS, size - excess))


def hold_to_turn(
    summary: TurnSummary, rules: dict[str, Any], within: AbstractSet[str]
) -> TurnSummary:
    """The model's TURN SUMMARY held to what it may say of its turn.

    Citations of labels outside ``within`` (the turn's own) are cut and listed in
    ``outside_citations`` (``synthesizer.keep_citations``); ``resolved_questions`` is
    left as written, since it quotes earlier questions with their citations. A text
    that then states nothing (``facts.statement``: a label, number, placeholder or blank)
    is no summary: the request and response lines and the outcomes give way to the
    rules' (``rules``, the turn's ``turn_summary``; listed in ``stood_in``), any other
    item is left out.
    """
    dropped: list[str] = []

    def scoped(text: str) -> str:
        return keep_citations(text, within, dropped)

    def items(values: list[str]) -> list[str]:
        return [t for v in values if is_statement(t := scoped(v))]

    stood_in: list[str] = []

    def line(name: str) -> str:
        kept = scoped(getattr(summary, name))
        if is_statement(kept):
            return kept
        stood_in.append(name)
        return str(rules[name])

    request, response = line("user_request_summary"), line("agent_response_summary")
    outcomes = items(summary.key_outcomes)
    if not outcomes and rules["key_outcomes"]:
        stood_in.append("key_outcomes")
    return summary.model_copy(
        update={
            "user_request_summary": request,
            "agent_response_summary": response,
            "key_outcomes": outcomes or list(rules["key_outcomes"]),
            "state_changes": items(summary.state_changes),
            "artifacts_modified": [
                ArtifactNote(path=a.path, note=note)
                for a in summary.artifacts_modified
                if is_statement(note := scoped(a.note))
            ],
            "constraints_assumptions_added": items(summary.constraints_assumptions_added),
            "decisions": [
                Decision(decision=decision, reason=reason if is_statement(reason) else "")
                for d in summary.decisions
                if is_statement(decision := scoped(d.decision))
                for reason in [scoped(d.reason)]
            ],
            "errors_and_fixes": items(summary.errors_and_fixes),
            "open_questions": items(summary.open_questions),
            "outside_citations": dropped,
            "stood_in": stood_in,
        }
    )


async def summarize_turn(
    turn: Turn, state: RestoreState, ctx: StageContext, window: Window
) -> TurnOutcome:
    """Summarize one turn and merge it into ``state``; a failure is recorded, not raised."""
    first = len(ctx.numbering) + 1
    transcript = await ctx.numbering.messages_as_str(turn.messages)
    last = len(ctx.numbering)
    labels = (f"M{first}", f"M{last}") if last >= first else None
    label_of = {
        m.id: label for m in turn.messages if (label := ctx.numbering.label_for(m.id)) is not None
    }
    state.add_parsed_turn(turn, label_of)
    facts = turn_facts(turn, label_of)
    # Log text inside the JSON must not close or open the prompt's data tags either.
    state_json = quote_log(_json(state.for_prompt()))
    facts_json = quote_log(_json({k: v for k, v in facts.items() if k not in _NOT_PROMPTED}))

    # A provider that reads the facts gets them redacted once for every segment, and the
    # synthesis reads that copy (`RedactedFacts`) instead of redacting them again.
    sent = redact_facts(facts, ctx.redact) if ctx.reads_facts else facts

    limit = ctx.config.restore.max_turn_chars
    parts = segments(transcript, limit)

    def prompt(
        part: str, segment: tuple[int, int] | None, running: str, size: int
    ) -> RenderedPrompt:
        return render(
            "turn_summary",
            ctx.config.prompts.dir,
            session=ctx.session_header,
            state_json=state_json,
            facts_json=facts_json,
            turn_number=turn.number,
            transcript=quote_log(cap_middle(part, size)),
            segment=segment,
            running_json=running,
        )

    summary: TurnSummary | None = None
    for index, part in enumerate(parts, start=1):
        # The summary of the segments before this one: the model extends it.
        running = quote_log(_json(summary.model_dump(mode="json"))) if summary else ""
        of_part = partial(prompt, part, (index, len(parts)) if len(parts) > 1 else None, running)

        refit = partial(_refit, of_part, min(limit, len(part)))
        request = await window.request(
            of_part(limit), "turn_summary", facts=sent, schema=TurnSummary, refit=refit
        )
        try:
            result = await complete_structured(
                ctx.provider, request, policy=ctx.policy, ledger=ctx.ledger
            )
        except StructuredOutputError:
            # A model too weak for the structure (a tiny local one) answered, but never in
            # shape: the turn is not lost, the rules' summary of it stands in, said so.
            rules = redact_value(turn_summary(facts), ctx.redact)
            summary = TurnSummary.model_validate({**rules, "stood_in": [WHOLE_SUMMARY]})
            break
        except (ProviderError, RestoreError) as exc:
            state.fail_turn(turn.number, str(exc))
            return TurnOutcome(turn, None, str(exc), labels, last, sent)
        window.observe(request, result)
        assert isinstance(result.parsed, TurnSummary)
        summary = result.parsed
    assert summary is not None
    # The offline provider's answer is the rules' own turn summary: nothing to hold.
    if not isinstance(ctx.provider, OfflineProvider) and WHOLE_SUMMARY not in summary.stood_in:
        within = {*label_of.values(), *(f"M{n}" for n in range(first, last + 1))}
        summary = hold_to_turn(summary, redact_value(turn_summary(facts), ctx.redact), within)
    summary.turn_number = turn.number
    state.add_summary(summary)
    return TurnOutcome(turn, summary, None, labels, last, sent)


async def summarize_turns(
    turns: list[Turn],
    state: RestoreState,
    ctx: StageContext,
    window: Window,
    progress: Progress | None = None,
    on_turn: Callable[[TurnOutcome], Awaitable[None]] | None = None,
    before: Callable[[Turn], None] | None = None,
) -> None:
    """turn_summarizer's entry point: every turn in order, failures recorded and skipped.

    ``before`` is given each turn first (a hollow session's bodies are put back there).
    """
    for i, turn in enumerate(turns, start=1):
        if before is not None:
            before(turn)
        outcome = await summarize_turn(turn, state, ctx, window)
        if on_turn is not None:
            await on_turn(outcome)
        if progress is not None:
            progress(i, len(turns))
