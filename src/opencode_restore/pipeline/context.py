"""What every LLM stage of one restore shares: provider, retry policy, ledger, numbering."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config import Config
from ..fields import one_line
from ..llm.base import ChatMessage, LLMRequest, Provider, SystemBlock
from ..llm.retry import RetryPolicy
from ..llm.usage import UsageLedger
from ..model import Session
from ..redact import Redactor
from ..timeline.numbering import Numbering
from ..timeline.preprocess import MessagesPreprocessor
from .prompting.prompts import RenderedPrompt, quote_messages
from .prompting.render import RedactCache, redact_request

#: The smallest output limit a request keeps when a small window is shared with the
#: prompt: a turn summary's JSON rarely needs more, and less cuts it off.
MIN_OUTPUT_TOKENS = 512


@dataclass
class StageContext:
    """The shared machinery of one restore run."""

    session: Session
    config: Config
    provider: Provider
    ledger: UsageLedger
    policy: RetryPolicy
    numbering: Numbering = field(init=False)
    redactor: Redactor = field(default_factory=Redactor)
    #: The model's context window in tokens, when known (``llm.context_window``, the
    #: server, or an overflow error: `budget.Window` keeps it up to date); None: unknown.
    context_window: int | None = None
    #: Where `context_window` came from, for the error that names it.
    window_source: str = ""
    _redacted: RedactCache = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # The system prompt and the stream of earlier summaries are sent again with every
        # call: each text is redacted once.
        self._redacted = RedactCache(self.redactor.redact)
        # Message bodies are quoted so log text cannot pass for a message header.
        self.numbering = Numbering(
            MessagesPreprocessor(
                max_tool_output_chars=self.config.restore.max_tool_output_chars,
                transform=quote_messages,
            )
        )

    @property
    def session_header(self) -> dict[str, Any]:
        """The session's metadata for the prompt header, one line each.

        The templates print these with the ``field`` filter (a JSON string, data tags
        quoted); a template from ``[prompts] dir`` that prints them bare still gets
        one-line values, which cannot start a heading or a header line of their own.
        """
        s = self.session
        return {
            "agent": s.agent,
            "id": one_line(s.id),
            "title": one_line(s.title) if s.title else None,
            "cwd": one_line(s.cwd) if s.cwd else None,
        }

    @property
    def output_tokens(self) -> int:
        """The output limit a request reserves: ``llm.max_tokens``, within a quarter of a
        known window (never under `MIN_OUTPUT_TOKENS`), so the prompt keeps the rest."""
        limit = self.config.llm.max_tokens
        if self.context_window is None:
            return limit
        return min(limit, max(MIN_OUTPUT_TOKENS, self.context_window // 4))

    @property
    def reads_facts(self) -> bool:
        """Whether the provider answers from ``LLMRequest.facts`` (the offline one does)."""
        return bool(getattr(self.provider, "reads_facts", False))

    def redact(self, text: str) -> str:
        """Secrets out before anything reaches a provider (unless disabled in config)."""
        return self._redacted(text) if self.config.restore.redact else text

    def request(
        self,
        prompt: RenderedPrompt,
        stage: str,
        *,
        facts: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> LLMRequest:
        """An LLM request from a rendered prompt: stable parts first, cache points marked."""
        messages = []
        if prompt.context:
            messages.append(ChatMessage("user", prompt.context, cache_breakpoint=True))
        if prompt.turn:
            messages.append(ChatMessage("user", prompt.turn, cache_breakpoint=True))
        messages.append(ChatMessage("user", prompt.task))
        request = LLMRequest(
            messages=messages,
            system=[SystemBlock(prompt.system, cache_breakpoint=True)],
            max_tokens=self.output_tokens,
            temperature=self.config.llm.temperature,
            template=prompt.template,
            stage=stage,
            facts=facts or {},
            cache_key=self.session.id,
            **kwargs,
        )
        return redact_request(request, self.redact, facts=self.reads_facts)
