"""Rendering the journal into one LLM request, ordered for the prompt cache.

The order runs from the most stable part to the most volatile one:

1. the stage's instructions (system prompt; the same for every call of a stage),
2. the session header (the same for the whole session),
3. the range summary, if earlier turns were compacted,
4. the earlier turns, one message each, append-only and never re-rendered,
5. the current turn's shared part (accumulated state, facts), the same for every call
   of the turn,
6. announcements (ephemeral notices, rendered for one call),
7. the current task (a segment of the current turn's transcript).

Cache breakpoints: one at the end of (4) and one a message earlier, which is where the
previous call's tail breakpoint was, so each call reads the prefix the previous one
wrote and writes only the newest turn; without history the earlier one sits on the
system prompt. A third ends (5): a turn sent in several segments (or asked again after a
failure) reads its state and facts from the cache instead of paying for them in every
call. The notices come after it because their figures change with every call. Anthropic
receives the breakpoints as ``cache_control``; OpenAI caches the same prefix by itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from ...llm.base import ChatMessage, LLMRequest, SystemBlock, ToolCallRequest
from ...llm.strict_schema import strict_json_schema
from ...redact import redact_value
from .prompts import quote_body

CHARS_PER_TOKEN = 3.5
PRUNED_KEEP_CHARS = 300
_DEBUG_CLIP = 400


@dataclass(frozen=True, slots=True)
class BlockView:
    """What the renderer needs of a timeline block."""

    kind: str
    text: str
    turn: int | None = None
    meta: dict[str, Any] | None = None


def header_text(number: int, labels: tuple[str, str] | None) -> str:
    """The turn header block: ``[TURN 5 · M31–M47]``."""
    span = f" · {labels[0]}–{labels[1]}" if labels else ""
    return f"[TURN {number}{span}]"


def summary_text(summary: dict[str, Any]) -> str:
    """A turn summary as compact text (fewer tokens than JSON, and stable byte for byte)."""
    lines = [
        f"Request: {summary.get('user_request_summary', '')}",
        f"Response: {summary.get('agent_response_summary', '')}",
    ]

    def section(title: str, items: Iterable[str]) -> None:
        items = [i for i in items if i]
        if items:
            lines.append(f"{title}:")
            lines.extend(f"- {i}" for i in items)

    section("Outcomes", summary.get("key_outcomes", []))
    section("State changes", summary.get("state_changes", []))
    section("Files", (f"{a['path']}: {a['note']}" for a in summary.get("artifacts_modified", [])))
    section("Constraints", summary.get("constraints_assumptions_added", []))
    section(
        "Decisions",
        (
            d["decision"] + (f" (because {d['reason']})" if d.get("reason") else "")
            for d in summary.get("decisions", [])
        ),
    )
    section("Errors and fixes", summary.get("errors_and_fixes", []))
    section("Open questions", summary.get("open_questions", []))
    section("Resolved questions", summary.get("resolved_questions", []))
    # A field with a line break must not start a line that reads like a header.
    return quote_body("\n".join(lines))


def failed_text(error: str) -> str:
    """The summary block of a turn that could not be summarized."""
    flat = " ".join(error.split())
    return f"(this turn could not be summarized: {flat[:200]})"


def block_text(block: BlockView) -> str:
    """One block as the model sees it; pruned blocks are cut and marked."""
    meta = block.meta or {}
    text = block.text
    if meta.get("pruned") and len(text) > PRUNED_KEEP_CHARS:
        text = f"[TRUNCATED] {text[:PRUNED_KEEP_CHARS].rstrip()}…"
    if block.kind == "range.summary":
        span = f"{meta.get('first_turn')}–{meta.get('last_turn')}"
        return f"[SUMMARY OF TURNS {span}]\n{quote_body(text)}"
    if block.kind == "system.message":
        return f"[SYSTEM MESSAGE] {text}"
    return text


class Stream:
    """The stable stream of blocks added one at a time: one message per turn (header and
    summary joined), one per other block.

    Evidence blocks are left out: the synthesis, their only reader, quotes them in its task.
    A journal keeps one as its blocks are appended (``Journal.stream``), so each block is
    rendered once, not again for every request of the restore; so is each block's
    message (``messages``), which every request shares (`build_request` copies the ones
    it marks).
    """

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.messages: list[ChatMessage] = []
        self._previous_turn: int | None = None

    def add(self, block: BlockView) -> None:
        """Render ``block`` at the end of the stream."""
        if block.kind == "evidence":
            return
        text = block_text(block)
        same_turn = block.kind == "turn.summary" and block.turn == self._previous_turn
        if same_turn and self.texts:
            self.texts[-1] = f"{self.texts[-1]}\n{text}"
            self.messages[-1] = ChatMessage("user", self.texts[-1])
        else:
            self.texts.append(text)
            self.messages.append(ChatMessage("user", text))
        self._previous_turn = block.turn if block.kind == "turn.header" else None


def stream_texts(blocks: Sequence[BlockView]) -> list[str]:
    """The stable stream of ``blocks`` (see `Stream`)."""
    stream = Stream()
    for block in blocks:
        stream.add(block)
    return stream.texts


def build_request(
    *,
    system: str,
    header: str,
    stream: Sequence[ChatMessage],
    announcements: Sequence[str],
    task: str,
    base: LLMRequest,
    turn: str = "",
) -> LLMRequest:
    """The request: ``base`` (stage, schema, facts, limits) with the rendered ``stream``
    (`Stream.messages`, shared: the ones marked as cache breakpoints are copied).

    ``turn`` is what every call of the current turn shares (empty: none).
    """
    messages = [ChatMessage("user", header), *stream]
    stable_end = len(messages) - 1
    if turn:
        messages.append(ChatMessage("user", turn, cache_breakpoint=True))
    messages += [ChatMessage("user", f"[NOTICE] {a}") for a in announcements]
    messages.append(ChatMessage("user", task))
    system_blocks = [SystemBlock(system)]
    messages[stable_end] = replace(messages[stable_end], cache_breakpoint=True)
    if stable_end >= 1:
        messages[stable_end - 1] = replace(messages[stable_end - 1], cache_breakpoint=True)
    else:
        system_blocks[0].cache_breakpoint = True
    base.messages = messages
    base.system = system_blocks
    return base


class RedactCache:
    """``redact`` remembered per text that comes back: the stable stream is sent again
    with every call.

    Redaction is a pure function of the text (and counts each secret once), so a text
    seen before is answered from the cache. A text over ``keep_chars`` characters is kept
    only when it comes a second time: a turn's task and facts are sent once, and
    remembering them held megabytes of transcript for nothing. A shorter one (a system
    prompt, a turn's summary, a label) is kept at once. The cache is dropped whole when
    it holds ``max_entries`` texts or ``max_chars`` characters.
    """

    def __init__(
        self,
        redact: Callable[[str], str],
        max_entries: int = 4096,
        max_chars: int = 8_000_000,
        keep_chars: int = 4000,
    ) -> None:
        self._redact = redact
        self._max = max_entries
        self._max_chars = max_chars
        self._keep_chars = keep_chars
        self._chars = 0
        self._done: dict[str, str] = {}
        #: Hashes of the long texts seen once (a collision only keeps a text one call early).
        self._seen: set[int] = set()

    def __call__(self, text: str) -> str:
        done = self._done.get(text)
        if done is not None:
            return done
        done = self._redact(text)
        key = hash(text)
        if len(text) > self._keep_chars and key not in self._seen:
            if len(self._seen) >= self._max:
                self._seen.clear()
            self._seen.add(key)
            return done
        if len(self._done) >= self._max or self._chars + len(text) > self._max_chars:
            self._done.clear()
            self._chars = 0
        self._done[text] = done
        self._chars += len(text)
        return done


class RedactedFacts(dict[str, Any]):
    """Facts whose every string is redacted already (`redact_facts`).

    The type carries that fact to whoever sends them, so facts redacted once (a turn's,
    for every segment of the turn and again in the synthesis) are not scanned again.
    """


def redact_facts(facts: dict[str, Any], redact: Callable[[str], str]) -> RedactedFacts:
    """``facts`` with every string redacted (`redact_value`); facts redacted already as
    they are."""
    if isinstance(facts, RedactedFacts):
        return facts
    return RedactedFacts(redact_value(facts, redact))


def redact_request(
    request: LLMRequest, redact: Callable[[str], str], *, facts: bool = True
) -> LLMRequest:
    """``request`` with every text a provider reads redacted, in place; returns it.

    System blocks, messages (the stream of earlier summaries and evidence included),
    tool-call arguments and the facts: the offline provider writes its answer from the
    facts, so a secret left there would reach every output. A provider that does not
    read them (``facts=False``: the network ones) gets none, which also spares their
    redaction on every call. Redacting twice changes nothing, so parts redacted earlier
    may pass again; facts already redacted (`RedactedFacts`) are not scanned again.
    """
    for block in request.system:
        block.text = redact(block.text)
    redact_messages(request.messages, redact)
    request.facts = redact_facts(request.facts, redact) if facts else {}
    return request


def redact_messages(messages: list[ChatMessage], redact: Callable[[str], str]) -> None:
    """``messages``' text and tool-call arguments redacted, in place.

    A message redaction changes is replaced by a redacted copy, never changed itself:
    the stream's messages are shared by every request (`Stream.messages`).
    """
    for i, message in enumerate(messages):
        content = redact(message.content)
        if content != message.content or message.tool_calls:
            calls = [
                ToolCallRequest(c.id, c.name, redact_value(c.arguments, redact))
                for c in message.tool_calls
            ]
            messages[i] = replace(message, content=content, tool_calls=calls)


def request_chars(request: LLMRequest) -> int:
    """Characters a provider will count as prompt: text, tool definitions, the schema."""
    chars = sum(len(b.text) for b in request.system)
    chars += sum(len(m.content) for m in request.messages)
    if request.response_schema is not None:
        chars += len(orjson.dumps(strict_json_schema(request.response_schema)))
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description) + len(orjson.dumps(tool.parameters))
    return chars


def raw_tokens(chars: int) -> int:
    """The offline estimate before correction: characters / 3.5, rounded up."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def _clip(text: str) -> str:
    flat = text.replace("\n", "⏎ ")
    if len(flat) <= _DEBUG_CLIP:
        return flat
    return f"{flat[:_DEBUG_CLIP]}… (+{len(flat) - _DEBUG_CLIP} chars)"


def debug_view(request: LLMRequest, estimated_tokens: int, budget: int) -> str:
    """The rendered stream, one line per block, cache breakpoints marked ``=>[1]``, ``=>[2]``."""
    lines = [
        f"── render {request.stage} ({request.template}): ~{estimated_tokens} tokens "
        f"of {budget} budget"
    ]
    mark = 0

    def line(role: str, text: str, breakpoint: bool) -> None:
        nonlocal mark
        suffix = ""
        if breakpoint:
            mark += 1
            suffix = f"  =>[{mark}]"
        lines.append(f"[{role}] {_clip(text)}{suffix}")

    for block in request.system:
        line("system", block.text, block.cache_breakpoint)
    for message in request.messages:
        line(message.role, message.content, message.cache_breakpoint)
    return "\n".join(lines) + "\n"
