"""Compaction-aware extraction of the conversations held by timeline spans.

`timeline_messages` walks a timeline and yields, per span, the message lists worth
scanning. A span holds its conversation in one of two ways:

* **model events** (Inspect logs): every `ModelCall` repeats the whole conversation, so
  a segment's conversation is its *last* call's ``input + output``. A summary
  compaction ends a segment. A trim compaction yields only the messages the trim
  dropped (the rest reappear in the next call's input); edit compaction is ignored.
* **message events** (our Claude, Codex, pi, Gemini and opencode readers): each message
  appears once, in order. Only a summary compaction splits the span, and the compaction
  marker message opens the following segment, because it carries the summary that the
  rest of that segment builds on. Trim and edit markers stay in line: nothing is
  repeated, so there is nothing to de-duplicate.

A segment with model events uses the model rule even if message events sit beside them.
Empty segments are skipped; ``segment``/``segment_count`` number the yielded ones.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Hashable, Iterator
from dataclasses import dataclass, field

from opencode_restore.model import (
    Compaction,
    Message,
    ModelCall,
    Timeline,
    TimelineEvent,
    TimelineSpan,
)
from opencode_restore.timeline.render import value_text

SpanFilter = Callable[[TimelineSpan], bool]


@dataclass(frozen=True, slots=True)
class TimelineMessages:
    """Messages extracted from a single span segment."""

    span: TimelineSpan
    messages: list[Message]
    segment: int
    """0-based index of this segment among the span's yielded segments."""
    segment_count: int
    """How many segments the span yielded (1 when nothing split it)."""


async def timeline_messages(
    timeline: Timeline | TimelineSpan,
    *,
    include: SpanFilter | str | None = None,
) -> AsyncIterator[TimelineMessages]:
    """Yield the message lists of the timeline's spans, split at compactions.

    Args:
        timeline: a timeline (walked from its root) or any span subtree.
        include: which spans yield. None: every non-utility span with model or message
            events of its own; a str: spans with that name (case-insensitive); a
            callable: spans it accepts. Children (content spans and branches) are
            always visited, whether or not their parent yields.
    """
    root = timeline.root if isinstance(timeline, Timeline) else timeline
    accept = _span_filter(include)
    for span in _walk(root):
        if not accept(span):
            continue
        segments = span_segments(span)
        for index, messages in enumerate(segments):
            yield TimelineMessages(span, messages, index, len(segments))


def span_segments(span: TimelineSpan) -> list[list[Message]]:
    """The non-empty conversation segments of one span's own events, in order."""
    groups = _split(span)
    segments: list[list[Message]] = []
    for index, group in enumerate(groups):
        if not group.models:
            messages = group.messages
        elif group.trimmed and index + 1 < len(groups) and groups[index + 1].models:
            messages = _dropped_by_trim(group.models[-1], groups[index + 1].models[0])
        else:
            messages = _conversation(group.models[-1])
        if messages:
            segments.append(messages)
    return segments


def trimmed_prefix(before: list[Message], after: list[Message]) -> list[Message]:
    """The messages at the start of ``before`` that a trim left out of ``after``.

    Aligns on ids: the first message of ``after`` whose id ``before`` holds is the
    first one kept. When no id is shared, aligns on content: the longest suffix of
    ``before`` equal to a prefix of ``after``. Returns [] when nothing was dropped or
    the lists do not align.
    """
    if not before or not after:
        return []
    position: dict[str, int] = {}
    for index, message in enumerate(before):
        if message.id:
            position.setdefault(message.id, index)
    # The first kept message is the first one of ``after`` that ``before`` holds: a
    # notice the agent put at the head of the trimmed context is not in ``before``.
    for message in after:
        if message.id in position:
            return before[: position[message.id]]
    overlap = _suffix_prefix_overlap(
        [_content_key(m) for m in before], [_content_key(m) for m in after]
    )
    return before[: len(before) - overlap] if overlap else []


def has_own_content(span: TimelineSpan) -> bool:
    """True when the span holds model calls or messages itself (not only child spans)."""
    return any(e.model is not None or e.message is not None for e in span.events())


@dataclass(slots=True)
class _Group:
    """The events between two split points, and whether a trim ended the group."""

    models: list[ModelCall] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    trimmed: bool = False


def _split(span: TimelineSpan) -> list[_Group]:
    groups = [_Group()]
    for event in span.events():
        compaction = _compaction_of(event)
        current = groups[-1]
        if compaction is not None and compaction.kind == "summary":
            groups.append(_Group())
        elif compaction is not None and compaction.kind == "trim" and current.models:
            # A trim with no call before it since the last split drops nothing new.
            current.trimmed = True
            groups.append(_Group())
        if event.model is not None:
            groups[-1].models.append(event.model)
        if event.message is not None:
            groups[-1].messages.append(event.message)
    return groups


def _dropped_by_trim(before: ModelCall, after: ModelCall) -> list[Message]:
    # The seed aligns the two inputs. When they share nothing, the trim may have cut
    # the whole input and kept only the reply, so align on the reply as well.
    return trimmed_prefix(before.input, after.input) or trimmed_prefix(
        _conversation(before), after.input
    )


def _compaction_of(event: TimelineEvent) -> Compaction | None:
    if event.kind == "compaction":
        return event.compaction
    message = event.message
    if message is not None and message.type == "compaction":
        return message.compaction
    return None


def _conversation(call: ModelCall) -> list[Message]:
    return [*call.input, *call.output]


def _content_key(message: Message) -> Hashable:
    """What two copies of one message share across model calls (ids and times may not)."""
    tool_input = None if message.tool_input is None else value_text(message.tool_input)
    return (
        message.role,
        message.type,
        message.text,
        message.tool_name,
        message.tool_call_id,
        tool_input,
    )


def _suffix_prefix_overlap(before: list[Hashable], after: list[Hashable]) -> int:
    """Length of the longest suffix of ``before`` that is a prefix of ``after``.

    Knuth-Morris-Pratt over ``after``: linear, where trying every suffix would be
    quadratic in the conversation length.
    """
    failure = [0] * len(after)
    matched = 0
    for i in range(1, len(after)):
        while matched and after[i] != after[matched]:
            matched = failure[matched - 1]
        if after[i] == after[matched]:
            matched += 1
        failure[i] = matched
    matched = 0
    for key in before:
        while matched and (matched == len(after) or key != after[matched]):
            matched = failure[matched - 1]
        if matched < len(after) and key == after[matched]:
            matched += 1
    return matched


def _span_filter(include: SpanFilter | str | None) -> SpanFilter:
    if include is None:
        return lambda span: not span.utility and has_own_content(span)
    if isinstance(include, str):
        name = include.casefold()
        return lambda span: span.name.casefold() == name
    return include


def _walk(root: TimelineSpan) -> Iterator[TimelineSpan]:
    """Depth-first, pre-order: a span, its content spans, then its branches.

    Iterative, so a deeply nested timeline cannot hit the recursion limit.
    """
    stack = [root]
    while stack:
        span = stack.pop()
        yield span
        children = [*span.spans(), *span.branches]
        stack.extend(reversed(children))
