"""turn_summarizer: one LLM call per turn, over the restore timeline.

Each call renders the timeline (instructions, session header, range summary, earlier
turns) and ends with the current turn: accumulated state, parsed facts, transcript.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson

from ..errors import ProviderError, RestoreError
from ..llm.structured import complete_structured
from ..model import Turn
from .budget import Window
from .context import StageContext
from .facts import cap_middle, turn_facts
from .prompts import RenderedPrompt, quote_log, render
from .schemas import TurnSummary
from .state import RestoreState

Progress = Callable[[int, int], None]
MIN_TRANSCRIPT_CHARS = 2000


@dataclass(slots=True)
class TurnOutcome:
    """What one turn produced: the summary (or the error) and the labels it was given."""

    turn: Turn
    summary: TurnSummary | None
    error: str | None
    labels: tuple[str, str] | None
    labels_end: int


#: Facts the transcript already shows verbatim; the offline provider still gets them.
_NOT_PROMPTED = ("assistant_texts", "last_assistant")


def _json(value: object) -> str:
    # Compact: this sits in the uncached tail of every call, where whitespace costs.
    return orjson.dumps(value).decode()


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

    def prompt(limit: int) -> RenderedPrompt:
        return render(
            "turn_summary",
            ctx.config.prompts.dir,
            session=ctx.session_header,
            state_json=state_json,
            facts_json=facts_json,
            turn_number=turn.number,
            transcript=quote_log(cap_middle(transcript, limit)),
        )

    limit = ctx.config.restore.max_turn_chars

    def refit(excess: int) -> RenderedPrompt:
        return prompt(max(MIN_TRANSCRIPT_CHARS, min(limit, len(transcript)) - excess))

    request = await window.request(
        prompt(limit), "turn_summary", facts=facts, schema=TurnSummary, refit=refit
    )
    try:
        result = await complete_structured(
            ctx.provider, request, policy=ctx.policy, ledger=ctx.ledger
        )
    except (ProviderError, RestoreError) as exc:
        state.fail_turn(turn.number, str(exc))
        return TurnOutcome(turn, None, str(exc), labels, last)
    window.observe(request, result)
    summary = result.parsed
    assert isinstance(summary, TurnSummary)
    summary.turn_number = turn.number
    state.add_summary(summary)
    return TurnOutcome(turn, summary, None, labels, last)


async def summarize_turns(
    turns: list[Turn],
    state: RestoreState,
    ctx: StageContext,
    window: Window,
    progress: Progress | None = None,
    on_turn: Callable[[TurnOutcome], Awaitable[None]] | None = None,
) -> None:
    """turn_summarizer's entry point: every turn in order, failures recorded and skipped."""
    for i, turn in enumerate(turns, start=1):
        outcome = await summarize_turn(turn, state, ctx, window)
        if on_turn is not None:
            await on_turn(outcome)
        if progress is not None:
            progress(i, len(turns))
