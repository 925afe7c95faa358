"""The context window: every request rendered from the journal stays under the budget.

Tokens are estimated offline (characters / 3.5) and corrected by a running factor learned
from the usage the provider reports. When a rendered request would exceed
``llm.context_budget_tokens``, the earlier blocks are compacted into one range summary
(an LLM call, stage ``range_summary``, with a deterministic fallback), leaving the request
at most ``LOW_WATER`` of the budget so compactions are rare and each one invalidates the
prompt cache only once. If the current turn alone is still too big, its transcript is cut.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..errors import ProviderError, RestoreError
from ..llm.base import LLMRequest, LLMResult
from ..llm.retry import call_with_retry
from .context import StageContext
from .journal import policy
from .journal.data import Block, Journal
from .prompting.prompts import RenderedPrompt, quote_log
from .prompting.prompts import render as render_prompt
from .prompting.render import (
    debug_view,
    raw_tokens,
    redact_request,
    request_chars,
    stream_texts,
)

LOW_WATER = 0.6
RANGE_SHARE = 0.1
RANGE_MAX_TOKENS = 4000
RANGE_LINE_CHARS = 240
MIN_FACTOR, MAX_FACTOR = 0.25, 4.0

Refit = Callable[[int], RenderedPrompt]


class TokenEstimator:
    """chars / 3.5, times a factor that follows the provider's reported prompt tokens."""

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = factor

    def tokens(self, chars: int) -> int:
        """Estimated tokens for ``chars`` characters of prompt."""
        return math.ceil(raw_tokens(chars) * self.factor)

    def observe(self, chars: int, reported: int) -> None:
        """Move the factor halfway toward what the provider reported for ``chars``."""
        estimate = raw_tokens(chars)
        if reported <= 0 or estimate <= 0:
            return
        factor = 0.5 * self.factor + 0.5 * (reported / estimate)
        self.factor = min(MAX_FACTOR, max(MIN_FACTOR, factor))


def _cap_lines(text: str, limit: int) -> str:
    """Keep the newest lines of ``text`` within ``limit`` characters, saying what went."""
    if len(text) <= limit:
        return text
    lines = text.splitlines()
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > limit - 40:
            break
        kept.append(line)
        used += len(line) + 1
    if not kept:
        return text[-limit:]
    return f"(… {len(lines) - len(kept)} earlier lines dropped)\n" + "\n".join(reversed(kept))


def fallback_summary(records: list[dict[str, Any]], numbers: list[int]) -> str:
    """The deterministic range summary: one line per turn, request → response."""
    by_number = {int(r["turn_number"]): r for r in records}
    lines = []
    for n in numbers:
        s = by_number.get(n)
        if s is None:
            lines.append(f"Turn {n}: (not summarized)")
            continue
        line = f"Turn {n}: {s['user_request_summary']} → {s['agent_response_summary']}"
        flat = " ".join(line.split())
        lines.append(flat if len(flat) <= RANGE_LINE_CHARS else flat[: RANGE_LINE_CHARS - 1] + "…")
    return "\n".join(lines)


def _units(blocks: list[Block]) -> list[tuple[int, int]]:
    """(start, end) index pairs; a turn's header and summary stay together."""
    units: list[tuple[int, int]] = []
    for i, block in enumerate(blocks):
        if units and block.kind == "turn.summary" and units[-1][1] == i:
            head = blocks[units[-1][0]]
            if head.kind == "turn.header" and head.turn == block.turn:
                units[-1] = (units[-1][0], i + 1)
                continue
        units.append((i, i + 1))
    return units


@dataclass
class Window:
    """Renders stage requests from the journal within the budget."""

    journal: Journal
    ctx: StageContext
    estimator: TokenEstimator = field(default_factory=TokenEstimator)
    debug: Callable[[str], None] | None = None
    _last_chars: int = 0

    @property
    def budget(self) -> int:
        return self.ctx.config.llm.context_budget_tokens

    @property
    def ttl(self) -> int:
        """The provider cache TTL in seconds; 0 (no pruning) for the offline provider."""
        if self.ctx.provider.name == "offline":
            return 0
        return self.ctx.config.restore.cache_ttl_seconds

    async def _render(
        self, prompt: RenderedPrompt, base: LLMRequest, notes: list[str]
    ) -> LLMRequest:
        request = await policy.render(
            self.journal,
            base,
            system=prompt.system,
            header=prompt.context,
            task=prompt.task,
            ttl_seconds=self.ttl,
            prune_buffer_seconds=self.ctx.config.restore.cache_prune_buffer_seconds,
            announcements=notes,
            consume=False,
        )
        # Everything, the stream of earlier summaries and the facts included: nothing
        # unredacted reaches a provider (ctx.redact remembers the texts it has seen).
        return redact_request(request, self.ctx.redact, facts=self.ctx.reads_facts)

    def _base(
        self,
        prompt: RenderedPrompt,
        stage: str,
        facts: dict[str, Any],
        schema: type[BaseModel] | None,
    ) -> LLMRequest:
        llm = self.ctx.config.llm
        return LLMRequest(
            messages=[],
            response_schema=schema,
            max_tokens=llm.max_tokens,
            temperature=llm.temperature,
            template=prompt.template,
            stage=stage,
            facts=facts,
            cache_key=self.ctx.session.id,
        )

    def _notices(self) -> list[str]:
        if not self._last_chars:
            return []
        tokens = self.estimator.tokens(self._last_chars)
        ranges = [b for b in self.journal.blocks if b.kind == "range.summary"]
        note = f"Context budget: the previous request used about {tokens} of {self.budget} tokens."
        if ranges:
            note += f" Turns 1–{ranges[-1].meta.get('last_turn')} are compacted into a summary."
        return [note]

    async def request(
        self,
        prompt: RenderedPrompt,
        stage: str,
        *,
        facts: dict[str, Any] | None = None,
        schema: type[BaseModel] | None = None,
        refit: Refit | None = None,
    ) -> LLMRequest:
        """The stage's request over the journal, compacting or cutting to fit the budget."""
        facts = facts or {}
        notes = self._notices()
        request = await self._render(prompt, self._base(prompt, stage, facts, schema), notes)
        chars = request_chars(request)
        if self.estimator.tokens(chars) > self.budget:
            stream = sum(len(t) for t in stream_texts([b.view() for b in self.journal.blocks]))
            if await self._compact(chars - stream):
                notes = self._notices()
                request = await self._render(
                    prompt, self._base(prompt, stage, facts, schema), notes
                )
                chars = request_chars(request)
        over = self.estimator.tokens(chars) - self.budget
        if over > 0 and refit is not None:
            # The current turn alone is too big: cut its transcript (marked in the middle).
            excess = math.ceil(over * 3.5 / self.estimator.factor) + 200
            prompt = refit(excess)
            request = await self._render(prompt, self._base(prompt, stage, facts, schema), notes)
            chars = request_chars(request)
        self.journal.notices.clear()
        self._last_chars = chars
        if self.debug is not None:
            self.debug(debug_view(request, self.estimator.tokens(chars), self.budget))
        return request

    def observe(self, request: LLMRequest, result: LLMResult) -> None:
        """Learn from the reported usage; a network provider's cache was touched."""
        u = result.usage
        self.estimator.observe(request_chars(request), u.input + u.cache_read + u.cache_write)
        self.journal.token_factor = self.estimator.factor
        if self.ttl:
            policy.touch(self.journal, self.ttl)

    # -- compaction ----------------------------------------------------------------

    def _range_cap_chars(self) -> int:
        return int(min(self.budget * RANGE_SHARE, RANGE_MAX_TOKENS) * 3.5)

    async def _compact(self, fixed_chars: int) -> bool:
        """Fold the earlier blocks into one range summary; False when nothing can go."""
        blocks = self.journal.blocks
        room = int(self.budget * LOW_WATER) - self.estimator.tokens(fixed_chars)
        room -= self.estimator.tokens(self._range_cap_chars())
        cut = len(blocks)
        used = 0
        for start, end in reversed(_units(blocks)):
            size = self.estimator.tokens(
                sum(len(t) for t in stream_texts([b.view() for b in blocks[start:end]]))
            )
            if used + size > room or blocks[start].kind == "range.summary":
                break
            used += size
            cut = start
        if cut == 0 or (cut == 1 and blocks[0].kind == "range.summary"):
            return False
        folded = blocks[:cut]
        text, fallback = await self._summarize_range(folded)
        previous = folded[0] if folded[0].kind == "range.summary" else None
        turns = [b.turn for b in folded if b.turn is not None]
        first = int(previous.meta["first_turn"]) if previous else min(turns, default=1)
        last = max(turns, default=int(previous.meta["last_turn"]) if previous else 0)
        await self.journal.compact(
            cut, text, {"first_turn": first, "last_turn": last, "fallback": fallback}
        )
        return True

    async def _summarize_range(self, folded: list[Block]) -> tuple[str, bool]:
        previous = folded[0].text if folded[0].kind == "range.summary" else ""
        fresh = folded[1:] if previous else folded
        numbers = sorted({b.turn for b in fresh if b.turn is not None})
        records = [
            r.summary for r in self.journal.turns if r.number in numbers and r.summary is not None
        ]
        ctx = self.ctx
        prompt = render_prompt(
            "range_summary",
            ctx.config.prompts.dir,
            session=ctx.session_header,
            previous_summary=previous,
            blocks_text=quote_log("\n\n".join(stream_texts([b.view() for b in fresh]))),
            first_turn=numbers[0] if numbers else 0,
            last_turn=numbers[-1] if numbers else 0,
            max_words=int(self._range_cap_chars() / 2 / 6),
        )
        request = ctx.request(prompt, "range_summary", facts={"turn_summaries": records})
        request.max_tokens = min(request.max_tokens, RANGE_MAX_TOKENS)
        text = ""
        if self.estimator.tokens(request_chars(request)) <= self.budget:
            try:
                result = await call_with_retry(ctx.provider, request, ctx.policy, ctx.ledger)
                self.observe(request, result)
                text = result.text.strip()
            except (ProviderError, RestoreError):
                text = ""
        fallback = not text
        if fallback:
            text = fallback_summary(records, numbers)
        combined = f"{previous}\n{text}" if previous else text
        return _cap_lines(combined, self._range_cap_chars()), fallback
