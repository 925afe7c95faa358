"""turn_summarizer: one LLM call per turn, each with the state carried forward."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson

from ..errors import ProviderError, RestoreError
from ..llm.structured import complete_structured
from ..model import Turn
from .context import StageContext
from .facts import turn_facts
from .prompts import quote_log, render
from .schemas import TurnSummary
from .state import RestoreState

Progress = Callable[[int, int], None]


def _cap_middle(text: str, limit: int) -> str:
    """Keep the start and end of an oversized turn; the cut is marked so the model knows."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[… {cut} characters of this turn omitted …]\n{text[-half:]}"


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


async def summarize_turn(turn: Turn, state: RestoreState, ctx: StageContext) -> TurnSummary | None:
    """Summarize one turn and merge it into ``state``; None (recorded) when it fails."""
    transcript = await ctx.numbering.messages_as_str(turn.messages)
    label_of = {
        m.id: label for m in turn.messages if (label := ctx.numbering.label_for(m.id)) is not None
    }
    state.add_parsed_turn(turn, label_of)
    facts = turn_facts(turn, label_of)
    previous = state.summaries[-1] if state.summaries else None
    prompt = render(
        "turn_summary",
        ctx.config.prompts.dir,
        session=ctx.session_header,
        range_summary="",
        previous_summaries=[s.model_dump() for s in state.summaries],
        state_json=_json(state.for_prompt()),
        previous_summary_json=_json(previous.model_dump()) if previous else "",
        facts_json=_json(facts),
        turn_number=turn.number,
        transcript=quote_log(_cap_middle(transcript, ctx.config.restore.max_turn_chars)),
    )
    request = ctx.request(prompt, "turn_summary", facts=facts, response_schema=TurnSummary)
    try:
        result = await complete_structured(
            ctx.provider, request, policy=ctx.policy, ledger=ctx.ledger
        )
    except (ProviderError, RestoreError) as exc:
        state.fail_turn(turn.number, str(exc))
        return None
    summary = result.parsed
    assert isinstance(summary, TurnSummary)
    summary.turn_number = turn.number
    state.add_summary(summary)
    return summary


async def summarize_turns(
    turns: list[Turn],
    state: RestoreState,
    ctx: StageContext,
    progress: Progress | None = None,
    on_turn: Callable[[Turn, TurnSummary | None], Awaitable[None]] | None = None,
) -> None:
    """turn_summarizer's entry point: every turn in order, failures recorded and skipped."""
    for i, turn in enumerate(turns, start=1):
        summary = await summarize_turn(turn, state, ctx)
        if on_turn is not None:
            await on_turn(turn, summary)
        if progress is not None:
            progress(i, len(turns))
