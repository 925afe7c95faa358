"""Which messages an LLM sees, and how much of each.

A `MessagesPreprocessor` is applied to every message list before it is rendered and
numbered: a message it drops gets no ``[M#]`` label, so labels only ever point at
text the model was actually shown.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from opencode_restore.model import Message

Transform = Callable[[list[Message]], Awaitable[list[Message]]]

# Compaction markers and compaction summaries are kept even when system messages are
# dropped: they are the only trace of the context the agent lost, and without them a
# reader cannot tell why the conversation jumps.
_ALWAYS_SHOWN = frozenset({"compaction", "summary"})
#: What the agent's tools did: tool calls, their results and the files a step changed.
_TOOL_TYPES = frozenset({"tool_use", "tool_result", "file_changes"})


@dataclass(frozen=True, slots=True)
class MessagesPreprocessor:
    """Options that choose and trim the messages rendered for an LLM.

    The default drops system messages (the agent's own prompt: long, repeated in every
    session, and never something the user did) and keeps everything else.
    """

    exclude_system: bool = True
    """Drop ``system`` messages; compaction markers and summaries are always kept."""

    exclude_reasoning: bool = False
    """Drop ``thinking`` blocks."""

    exclude_tool_usage: bool = False
    """Drop ``tool_use`` and ``tool_result`` blocks."""

    max_tool_output_chars: int | None = 4000
    """Cap on a tool result's text and on each tool-call argument value (None: no cap)."""

    transform: Transform | None = None
    """An async rewrite of the whole list, applied before the options above."""

    def keeps(self, message: Message) -> bool:
        """True when ``message`` is rendered under these options."""
        if message.type in _ALWAYS_SHOWN:
            return True
        if self.exclude_system and message.role == "system":
            return False
        if self.exclude_reasoning and message.type == "thinking":
            return False
        return not (self.exclude_tool_usage and message.type in _TOOL_TYPES)

    async def apply(self, messages: list[Message]) -> list[Message]:
        """Run the custom transform, if any, then drop what these options exclude."""
        if self.transform is not None:
            messages = await self.transform(messages)
        return [m for m in messages if self.keeps(m)]

    def cap(self, text: str) -> str:
        """Shorten ``text`` to the tool-output cap, keeping its head and its tail.

        The tail is kept because tool output tends to end with what matters (a test
        summary, the error after a long traceback). The marker says how much was cut.
        """
        limit = self.max_tool_output_chars
        if limit is None or len(text) <= limit:
            return text
        tail = limit // 3
        head = limit - tail
        cut = len(text) - head - tail
        marker = f"\n[... {cut} of {len(text)} chars truncated ...]\n"
        return text[:head] + marker + (text[-tail:] if tail else "")


DEFAULT_PREPROCESSOR = MessagesPreprocessor()
