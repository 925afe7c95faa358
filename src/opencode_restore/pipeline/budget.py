"""The context window: every request rendered from the journal stays under the budget.

Tokens are estimated offline (characters / 3.5) and corrected by a running factor learned
from the usage the provider reports. When a rendered request would exceed
``llm.context_budget_tokens``, the earlier blocks are compacted into one range summary
(an LLM call, stage ``range_summary``, with a deterministic fallback), leaving the request
at most ``LOW_WATER`` of the budget so compactions are rare and each one invalidates the
prompt cache only once. If the current turn alone is still too big, its transcript is cut.

When the model's context window is known (``StageContext.context_window``: the config,
the server, or an overflow error) the budget is also bounded by it: the window less the
output a request reserves and a margin for the estimate's error. A turn's transcript is
then sent in segments that fit (``restore.max_turn_chars`` shrinks with the window; a
request still too big has its state and facts JSON cut too, `capped_json`), an overflow
the server still reports shrinks the window to what it said and the request is fitted
again once, and a turn request that cannot fit even cut to its floor stops the run with
one `ContextWindowError` naming the window. A window at least
the budget plus that reserve and margin changes nothing (the prompt cache works as before).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from ..errors import ProviderError, RestoreError
from ..llm.base import LLMRequest, LLMResult
from ..llm.retry import call_with_retry
from ..llm.window import SOURCE_ERROR, SOURCE_GUESS, Overflow
from .context import MIN_OUTPUT_TOKENS, StageContext
from .journal import policy
from .journal.data import Block, Journal
from .prompting.prompts import RenderedPrompt, capped_json, quote_log
from .prompting.prompts import render as render_prompt
from .prompting.render import (
    debug_view,
    redact_facts,
    redact_request,
    request_chars,
    stream_texts,
)
from .tokens import CHARS_PER_TOKEN, raw_tokens

LOW_WATER = 0.6
RANGE_SHARE = 0.1
RANGE_MAX_TOKENS = 4000
RANGE_LINE_CHARS = 240
MIN_FACTOR, MAX_FACTOR = 0.25, 4.0
#: Share of a known window kept free for the token estimate's error (another tokenizer).
WINDOW_MARGIN = 0.1
#: Share of the budget a turn's transcript segment may take: the instructions, schema,
#: state, facts and earlier summaries share the rest.
SEGMENT_SHARE = 0.4
#: The shortest transcript segment (the turn stage cuts no transcript below this either).
MIN_SEGMENT_CHARS = 2000
#: Share of the budget each JSON value of a turn request (state, facts, running summary)
#: may take when the request does not fit the model's window otherwise, and its floor.
JSON_SHARE = 0.15
MIN_JSON_CHARS = 600
#: How much smaller a window is taken to be after an overflow error that did not say it.
UNSAID_SHRINK = 0.75

Refit = Callable[[int], RenderedPrompt]


class ContextWindowError(RestoreError):
    """The model's context window cannot hold the smallest request of a turn."""

    exit_code = 2


class WindowTooSmall(Exception):
    """Raised inside the stages, which record a failed turn for any `RestoreError` and go
    on: this one must stop the run at once. `run.restore_session` raises it again as a
    `ContextWindowError`."""


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
    #: The last request rendered and how to render it again (`refit_overflow`).
    _rendered: tuple[LLMRequest, Callable[[], Awaitable[LLMRequest]]] | None = field(
        default=None, init=False, repr=False
    )

    def __post_init__(self) -> None:
        self._turn_chars = self.ctx.config.restore.max_turn_chars
        # Every stage's call_with_retry gets the one chance to fit an overflowed request.
        self.ctx.policy = replace(self.ctx.policy, refit=self.refit_overflow)
        self.fit_turn_chars()

    def close(self) -> None:
        """Let go of what refers back to this window: the stages' retry policy stops
        refitting through it and the last rendered request (whose render-again closure
        holds the window) is dropped. Without this the window, the journal and the last
        request sat in reference cycles until a garbage collection, and a long restore's
        references and store save were built beside them (bench/scale.py's peak RSS)."""
        self._rendered = None
        if self.ctx.policy.refit == self.refit_overflow:
            self.ctx.policy = replace(self.ctx.policy, refit=None)

    @property
    def budget(self) -> int:
        """Tokens a request may take: ``llm.context_budget_tokens``, within the model's
        window less the output reserve and the margin when the window is known."""
        configured = self.ctx.config.llm.context_budget_tokens
        window = self.ctx.context_window
        if window is None:
            return configured
        room = window - self.ctx.output_tokens - self.margin
        return max(1, min(configured, room))

    @property
    def margin(self) -> int:
        """Tokens of a known window kept free for the estimate's error."""
        window = self.ctx.context_window
        return math.ceil(window * WINDOW_MARGIN) if window is not None else 0

    def fit_turn_chars(self) -> None:
        """Make ``restore.max_turn_chars`` (the turn stage's segment size) fit the budget.

        The stage reads it from ``ctx.config``, which gets a copy with the smaller value
        (the caller's config is shared, and the journal's fingerprint keeps the configured
        value: a saved turn stays valid whatever window later runs find).
        """
        target = self._turn_chars
        if self.ctx.context_window is not None:
            room = self.budget * SEGMENT_SHARE * CHARS_PER_TOKEN / self.estimator.factor
            target = min(target, max(MIN_SEGMENT_CHARS, int(room)))
        config = self.ctx.config
        if config.restore.max_turn_chars != target:
            restore = config.restore.model_copy(update={"max_turn_chars": target})
            self.ctx.config = config.model_copy(update={"restore": restore})

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
            turn=prompt.turn,
            ttl_seconds=self.ttl,
            prune_buffer_seconds=self.ctx.config.restore.cache_prune_buffer_seconds,
            announcements=notes,
            consume=False,
        )
        if self.ctx.reads_facts and self.debug is None:
            # A provider that answers from the facts (the offline one) sends nothing out
            # of the process and the rest was redacted when the session was read: only
            # the facts, which it writes into every output, are redacted again. Doing
            # the whole request again per turn was a third of a long restore's CPU.
            request.facts = redact_facts(request.facts, self.ctx.redact)
            return request
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
            max_tokens=self.ctx.output_tokens,
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
        """The stage's request over the journal, compacting or cutting to fit the budget.

        Raises `WindowTooSmall` when a request with a transcript to cut (``refit``) still
        leaves no room for an answer in the model's known window.
        """
        facts = facts or {}
        first = prompt
        notes = self._notices()
        request = await self._render(prompt, self._base(prompt, stage, facts, schema), notes)
        chars = request_chars(request)
        if self.estimator.tokens(chars) > self.budget:
            stream = sum(len(t) for t in self.journal.stream())
            if await self._compact(chars - stream):
                notes = self._notices()
                request = await self._render(
                    prompt, self._base(prompt, stage, facts, schema), notes
                )
                chars = request_chars(request)
        over = self.estimator.tokens(chars) - self.budget
        if over > 0 and refit is not None:
            # The current turn alone is too big: cut its transcript (marked in the middle).
            excess = self.chars(over) + 200
            prompt = refit(excess)
            request = await self._render(prompt, self._base(prompt, stage, facts, schema), notes)
            chars = request_chars(request)
            if self.estimator.tokens(chars) > self.budget and self.ctx.context_window:
                # Still too big for the model's window with the transcript at its floor:
                # the state and the facts of a long session or a huge turn are cut too.
                with capped_json(self.json_chars):
                    prompt = refit(excess)
                request = await self._render(
                    prompt, self._base(prompt, stage, facts, schema), notes
                )
                chars = request_chars(request)
        self._fit_output(request, self.estimator.tokens(chars), refit is not None)
        self.journal.notices.clear()
        self._last_chars = chars
        if self.debug is not None:
            self.debug(debug_view(request, self.estimator.tokens(chars), self.budget))

        async def again() -> LLMRequest:
            return await self.request(first, stage, facts=facts, schema=schema, refit=refit)

        self._rendered = (request, again)
        return request

    @property
    def json_chars(self) -> int:
        """Characters each ``*_json`` value of a prompt may take when the request must
        shrink into the model's window (the state and facts of a long session)."""
        cap = int(self.budget * JSON_SHARE * CHARS_PER_TOKEN / self.estimator.factor)
        return max(MIN_JSON_CHARS, cap)

    def chars(self, tokens: int) -> int:
        """The characters that make about ``tokens`` tokens by the current estimate."""
        return math.ceil(tokens * CHARS_PER_TOKEN / self.estimator.factor)

    def excess(self, request: LLMRequest) -> int:
        """Estimated tokens of ``request`` beyond the budget (0 or less when it fits)."""
        return self.estimator.tokens(request_chars(request)) - self.budget

    def fit_output(self, request: LLMRequest) -> None:
        """A request rendered outside `request` (the evidence conversation) gets the
        output room its prompt leaves in a known window."""
        self._fit_output(request, self.estimator.tokens(request_chars(request)), False)

    def _fit_output(self, request: LLMRequest, tokens: int, at_floor: bool) -> None:
        """Within a known window, leave the prompt's ``tokens`` and an answer room: the
        output limit shrinks to what is left (not under `MIN_OUTPUT_TOKENS`). A turn's
        request (``at_floor``: its transcript was cut as far as it goes) that leaves less
        raises `WindowTooSmall`; any other is sent, and its stage falls back if refused."""
        window = self.ctx.context_window
        if window is None:
            return
        left = window - tokens - self.margin
        if at_floor and window - tokens < MIN_OUTPUT_TOKENS:
            source = f", {self.ctx.window_source}" if self.ctx.window_source else ""
            raise WindowTooSmall(
                f"the model's context window ({window:,} tokens{source}) cannot hold a "
                f"{request.stage} request: about {tokens:,} tokens of prompt with its turn's "
                f"transcript, state and facts cut to the least, and {MIN_OUTPUT_TOKENS} for "
                "the answer; serve "
                "the model with a larger window (llama.cpp -c, llama-cpp-python --n_ctx, "
                "ollama num_ctx, vLLM --max-model-len) or set llm.context_window if the "
                "server's is larger"
            )
        request.window_room = max(MIN_OUTPUT_TOKENS, left)
        request.max_tokens = min(request.max_tokens, request.window_room)

    def learn(self, overflow: Overflow, chars: int) -> None:
        """Take in an overflow the server reported for a request of ``chars`` characters.

        The window shrinks to what the error says (or, when it says nothing, to a quarter
        less than what was sent); the prompt tokens it counted recalibrate the estimate.
        """
        if overflow.requested is not None and chars > 0:
            factor = overflow.requested / raw_tokens(chars)
            self.estimator.factor = min(MAX_FACTOR, max(self.estimator.factor, factor))
        window = overflow.window
        source = SOURCE_ERROR
        if window is None:
            sent = self.estimator.tokens(chars) + self.ctx.output_tokens
            window = int(min(self.ctx.context_window or sent, sent) * UNSAID_SHRINK)
            source = SOURCE_GUESS
        current = self.ctx.context_window
        if current is None or window < current:
            self.ctx.context_window = window
            self.ctx.window_source = source
        elif overflow.requested is None:
            # The window is as known, so the estimate was short: count more per character.
            self.estimator.factor = min(MAX_FACTOR, self.estimator.factor / UNSAID_SHRINK)
        self.journal.token_factor = self.estimator.factor
        self.fit_turn_chars()

    async def refit_overflow(self, request: LLMRequest, overflow: Overflow) -> LLMRequest | None:
        """The request to send instead of ``request``, which the server found too long for
        the window; None when it is not one this window rendered (its stage falls back).

        The window is learned from the error and the request rendered again within it;
        what the caller added after the rendered messages (a repair round) is kept, and
        the output limit is the one that fits (no doubling).
        """
        self.learn(overflow, request_chars(request))
        rendered = self._rendered
        if rendered is None:
            return None
        sent, again = rendered
        count = len(sent.messages)
        if request.system != sent.system or request.messages[:count] != sent.messages:
            return None
        fresh = await again()
        # A doubled output limit (a reply cut off before) is what overflowed a server
        # that counts the completion in (vLLM): the refitted request asks for what fits.
        return replace(
            request,
            messages=[*fresh.messages, *request.messages[count:]],
            system=fresh.system,
            max_tokens=min(request.max_tokens, fresh.max_tokens),
            output_boost=0,
        )

    def observe(self, request: LLMRequest, result: LLMResult) -> None:
        """Learn from the reported usage; a network provider's cache was touched."""
        u = result.usage
        self.estimator.observe(request_chars(request), u.input + u.cache_read + u.cache_write)
        self.journal.token_factor = self.estimator.factor
        self.fit_turn_chars()
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
