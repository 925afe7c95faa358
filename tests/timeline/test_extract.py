"""timeline_messages: the diagrams of seed 000, section 2, one test each, and more."""

from __future__ import annotations

from itertools import count

import pytest

from opencode_restore.model import (
    Compaction,
    CompactionKind,
    Message,
    ModelCall,
    Role,
    Timeline,
    TimelineEvent,
    TimelineSpan,
)
from opencode_restore.timeline.extract import (
    TimelineMessages,
    span_segments,
    timeline_messages,
    trimmed_prefix,
)
from opencode_restore.timeline.numbering import Numbering

pytestmark = pytest.mark.anyio

_uuid = count()


def msg(name: str, role: Role = "user", *, with_id: bool = True) -> Message:
    """A message whose text is its name; ``with_id=False`` gives it no id."""
    return Message(id=name if with_id else "", role=role, type="text", text=name)


def msgs(names: str, *, with_id: bool = True) -> list[Message]:
    return [msg(n, with_id=with_id) for n in names.split()]


def model(inputs: list[Message], output: str) -> TimelineEvent:
    call = ModelCall(input=inputs, output=[msg(output, "assistant")])
    return TimelineEvent(uuid=f"e{next(_uuid)}", kind="model", model=call)


def compaction(kind: CompactionKind) -> TimelineEvent:
    return TimelineEvent(uuid=f"e{next(_uuid)}", kind="compaction", compaction=Compaction(kind))


def marker(name: str, kind: CompactionKind) -> Message:
    return Message(
        id=name, role="system", type="compaction", text=name, compaction=Compaction(kind, name)
    )


def message_event(message: Message) -> TimelineEvent:
    return TimelineEvent(uuid=f"e{next(_uuid)}", kind="message", message=message)


def span(
    name: str,
    *content: TimelineEvent | TimelineSpan,
    utility: bool = False,
    branches: list[TimelineSpan] | None = None,
    span_type: str | None = "agent",
) -> TimelineSpan:
    return TimelineSpan(
        id=name,
        name=name,
        span_type=span_type,
        content=list(content),
        utility=utility,
        branches=branches or [],
    )


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


async def collect(
    timeline: Timeline | TimelineSpan, **kwargs: object
) -> list[tuple[str, list[str], int, int]]:
    return [
        (item.span.name, texts(item.messages), item.segment, item.segment_count)
        async for item in timeline_messages(timeline, **kwargs)  # type: ignore[arg-type]
    ]


# Span content:  [Model1, Model2, CompactionSummary, Model3, Model4]
#                  segment 0 = Model2.input + output; segment 1 = Model4.input + output
async def test_summary_compaction_splits_into_segments() -> None:
    root = span(
        "main",
        model(msgs("u1"), "a1"),
        model(msgs("u1 a1 u2"), "a2"),
        compaction("summary"),
        model(msgs("S u3"), "a3"),
        model(msgs("S u3 a3 u4"), "a4"),
    )
    assert await collect(Timeline(root)) == [
        ("main", ["u1", "a1", "u2", "a2"], 0, 2),
        ("main", ["S", "u3", "a3", "u4", "a4"], 1, 2),
    ]


async def test_n_summaries_give_n_plus_one_segments() -> None:
    root = span(
        "main",
        model(msgs("a"), "x"),
        compaction("summary"),
        model(msgs("b"), "y"),
        compaction("summary"),
        model(msgs("c"), "z"),
    )
    result = await collect(root)
    assert [(seg, total) for _, _, seg, total in result] == [(0, 3), (1, 3), (2, 3)]
    assert [t for _, t, _, _ in result] == [["a", "x"], ["b", "y"], ["c", "z"]]


# Model2.input = [A..H]; Model4.input = [D..H, I]: segment 0 = [A, B, C], segment 1 = Model4.
@pytest.mark.parametrize("with_id", [True, False])
async def test_trim_yields_only_the_trimmed_prefix(with_id: bool) -> None:
    root = span(
        "main",
        model(msgs("A B C D E F G", with_id=with_id), "X"),
        model(msgs("A B C D E F G H", with_id=with_id), "Y"),
        compaction("trim"),
        model(msgs("D E F G H I", with_id=with_id), "Z"),
        model(msgs("D E F G H I J", with_id=with_id), "W"),
    )
    assert await collect(root) == [
        ("main", ["A", "B", "C"], 0, 2),
        ("main", ["D", "E", "F", "G", "H", "I", "J", "W"], 1, 2),
    ]


async def test_trim_aligns_on_content_when_ids_differ_between_calls() -> None:
    before = msgs("A B C D E")
    after = [
        Message(id=f"new-{m.id}", role="user", type="text", text=m.text) for m in msgs("C D E F")
    ]
    assert texts(trimmed_prefix(before, after)) == ["A", "B"]


async def test_content_alignment_takes_the_longest_overlap() -> None:
    before = msgs("A B A B A B", with_id=False)
    after = msgs("A B A B C", with_id=False)
    assert texts(trimmed_prefix(before, after)) == ["A", "B"]
    # Repetitive content: the KMP failure table must fall back through partial matches.
    assert texts(
        trimmed_prefix(msgs("A A B A A", with_id=False), msgs("A A A", with_id=False))
    ) == [
        "A",
        "A",
        "B",
    ]
    assert texts(trimmed_prefix(msgs("X A", with_id=False), msgs("A", with_id=False))) == ["X"]


async def test_content_alignment_compares_tool_calls() -> None:
    def call(path: str) -> Message:
        return Message(
            id="",
            role="assistant",
            type="tool_use",
            text="",
            tool_name="Read",
            tool_input={"file_path": path},
        )

    before = [msg("q", with_id=False), call("a.py"), call("b.py")]
    assert texts(trimmed_prefix(before, [call("b.py")])) == ["q", ""]
    assert trimmed_prefix(before, [call("c.py")]) == []


async def test_trim_id_alignment_skips_a_notice_at_the_head_of_the_kept_context() -> None:
    before = msgs("A B C D")
    after = [msg("notice"), *msgs("C D E")]
    assert texts(trimmed_prefix(before, after)) == ["A", "B"]


async def test_trimmed_prefix_of_empty_lists() -> None:
    assert trimmed_prefix([], msgs("A")) == []
    assert trimmed_prefix(msgs("A"), []) == []


async def test_trim_that_dropped_nothing_yields_only_the_post_segment() -> None:
    root = span(
        "main",
        model(msgs("A B"), "X"),
        compaction("trim"),
        model(msgs("A B X C"), "Y"),
    )
    assert await collect(root) == [("main", ["A", "B", "X", "C", "Y"], 0, 1)]


async def test_trim_that_cannot_be_aligned_yields_no_prefix() -> None:
    root = span(
        "main",
        model(msgs("A B"), "X"),
        compaction("trim"),
        model(msgs("P Q"), "Y"),
    )
    assert await collect(root) == [("main", ["P", "Q", "Y"], 0, 1)]


async def test_trim_prefix_may_include_the_previous_output() -> None:
    root = span(
        "main",
        model(msgs("A B"), "X"),
        compaction("trim"),
        model([msg("X", "assistant"), msg("C")], "Y"),
    )
    assert await collect(root) == [
        ("main", ["A", "B"], 0, 2),
        ("main", ["X", "C", "Y"], 1, 2),
    ]


async def test_trim_without_a_later_call_keeps_the_whole_conversation() -> None:
    root = span("main", model(msgs("A B"), "X"), compaction("trim"))
    assert await collect(root) == [("main", ["A", "B", "X"], 0, 1)]


async def test_trim_before_any_call_is_not_a_split() -> None:
    root = span("main", compaction("trim"), model(msgs("A"), "X"))
    assert await collect(root) == [("main", ["A", "X"], 0, 1)]


async def test_consecutive_trims_and_a_trim_before_a_summary() -> None:
    root = span(
        "main",
        model(msgs("A B C"), "X"),
        compaction("trim"),
        compaction("trim"),
        model(msgs("B C D"), "Y"),
        compaction("trim"),
        model(msgs("D E"), "Z"),
        compaction("summary"),
        model(msgs("S"), "W"),
    )
    assert await collect(root) == [
        ("main", ["A"], 0, 4),
        ("main", ["B", "C"], 1, 4),
        ("main", ["D", "E", "Z"], 2, 4),
        ("main", ["S", "W"], 3, 4),
    ]


async def test_trim_then_summary_without_a_call_between() -> None:
    root = span(
        "main",
        model(msgs("A B"), "X"),
        compaction("trim"),
        compaction("summary"),
        model(msgs("S"), "Y"),
    )
    assert await collect(root) == [
        ("main", ["A", "B", "X"], 0, 2),
        ("main", ["S", "Y"], 1, 2),
    ]


# Edit compaction is not a split point: the last call of the span is used as-is.
async def test_edit_compaction_is_ignored() -> None:
    root = span(
        "main",
        model(msgs("A B"), "X"),
        compaction("edit"),
        model(msgs("A B X C"), "Y"),
    )
    assert await collect(root) == [("main", ["A", "B", "X", "C", "Y"], 0, 1)]


async def test_empty_segments_are_skipped() -> None:
    root = span(
        "main",
        compaction("summary"),
        model(msgs("A"), "X"),
        compaction("summary"),
        compaction("summary"),
        model(msgs("B"), "Y"),
        compaction("summary"),
    )
    assert await collect(root) == [
        ("main", ["A", "X"], 0, 2),
        ("main", ["B", "Y"], 1, 2),
    ]


def explore_plan_build() -> Timeline:
    """A container root over three agents, one utility span, one nested child, one branch."""
    return Timeline(
        span(
            "root",
            span("Explore", model(msgs("e1"), "e2")),
            span("Plan", model(msgs("p1"), "p2"), span("Build", model(msgs("nb1"), "nb2"))),
            span("title-generator", model(msgs("t1"), "t2"), utility=True),
            span(
                "Build",
                model(msgs("b1"), "b2"),
                span_type="agent",
                branches=[span("retry", model(msgs("r1"), "r2"), span_type="branch")],
            ),
            span_type=None,
        )
    )


async def test_default_filter_takes_non_utility_spans_with_their_own_calls() -> None:
    result = await collect(explore_plan_build())
    assert [(name, t) for name, t, _, _ in result] == [
        ("Explore", ["e1", "e2"]),
        ("Plan", ["p1", "p2"]),
        ("Build", ["nb1", "nb2"]),
        ("Build", ["b1", "b2"]),
        ("retry", ["r1", "r2"]),
    ]


async def test_string_filter_matches_name_case_insensitively() -> None:
    result = await collect(explore_plan_build(), include="build")
    assert [t for _, t, _, _ in result] == [["nb1", "nb2"], ["b1", "b2"]]


async def test_string_filter_can_select_a_utility_span() -> None:
    result = await collect(explore_plan_build(), include="Title-Generator")
    assert result == [("title-generator", ["t1", "t2"], 0, 1)]


async def test_callable_filter_and_children_of_rejected_spans() -> None:
    result = await collect(explore_plan_build(), include=lambda s: s.span_type == "branch")
    assert result == [("retry", ["r1", "r2"], 0, 1)]


async def test_filter_matching_a_container_yields_nothing_for_it() -> None:
    assert await collect(explore_plan_build(), include="root") == []


async def test_children_of_utility_spans_are_visited() -> None:
    root = span("helper", span("inner", model(msgs("i"), "o")), utility=True)
    assert await collect(root) == [("inner", ["i", "o"], 0, 1)]


async def test_a_span_subtree_can_be_scanned_directly() -> None:
    plan = explore_plan_build().root.content[1]
    assert isinstance(plan, TimelineSpan)
    result = await collect(plan)
    assert [name for name, _, _, _ in result] == ["Plan", "Build"]


async def test_deep_nesting_does_not_hit_the_recursion_limit() -> None:
    leaf = span("leaf", model(msgs("deep"), "end"))
    for depth in range(3000):
        leaf = span(f"level{depth}", leaf)
    assert await collect(leaf) == [("leaf", ["deep", "end"], 0, 1)]


async def test_yielded_items_carry_the_span_object() -> None:
    timeline = explore_plan_build()
    items = [item async for item in timeline_messages(timeline, include="Explore")]
    assert items == [TimelineMessages(timeline.root.content[0], items[0].messages, 0, 1)]  # type: ignore[arg-type]
    assert items[0].span is timeline.root.content[0]


# Spans that hold messages directly (our readers).
async def test_message_span_yields_its_messages_in_order() -> None:
    root = span("session", *(message_event(m) for m in msgs("u1 a1 u2")))
    assert await collect(root) == [("session", ["u1", "a1", "u2"], 0, 1)]


async def test_message_span_splits_at_a_summary_marker_which_opens_the_next_segment() -> None:
    root = span(
        "session",
        message_event(msg("u1")),
        message_event(msg("a1", "assistant")),
        message_event(marker("compacted", "summary")),
        message_event(msg("u2")),
    )
    assert await collect(root) == [
        ("session", ["u1", "a1"], 0, 2),
        ("session", ["compacted", "u2"], 1, 2),
    ]


async def test_message_span_splits_at_a_summary_compaction_event() -> None:
    root = span(
        "session",
        message_event(msg("u1")),
        compaction("summary"),
        message_event(msg("u2")),
    )
    assert await collect(root) == [
        ("session", ["u1"], 0, 2),
        ("session", ["u2"], 1, 2),
    ]


async def test_message_span_keeps_trim_and_edit_markers_in_line() -> None:
    root = span(
        "session",
        message_event(msg("u1")),
        message_event(marker("trimmed", "trim")),
        message_event(msg("u2")),
        compaction("trim"),
        message_event(marker("edited", "edit")),
        message_event(msg("u3")),
    )
    assert await collect(root) == [("session", ["u1", "trimmed", "u2", "edited", "u3"], 0, 1)]


async def test_compaction_message_without_details_is_not_a_split() -> None:
    bare = Message(id="c", role="system", type="compaction", text="compacted")
    root = span("session", message_event(msg("u1")), message_event(bare), message_event(msg("u2")))
    assert await collect(root) == [("session", ["u1", "compacted", "u2"], 0, 1)]


async def test_message_span_leading_summary_marker_gives_one_segment() -> None:
    root = span("session", message_event(marker("resumed", "summary")), message_event(msg("u")))
    assert await collect(root) == [("session", ["resumed", "u"], 0, 1)]


async def test_span_with_only_info_and_compaction_events_yields_nothing() -> None:
    info = TimelineEvent(uuid="i", kind="info", text="Context reset")
    root = span("session", info, compaction("summary"))
    assert await collect(root) == []
    assert span_segments(root) == []


async def test_segment_with_calls_uses_the_model_rule_beside_message_events() -> None:
    root = span(
        "mixed",
        message_event(msg("loose")),
        model(msgs("A"), "X"),
        compaction("summary"),
        message_event(msg("after")),
    )
    assert await collect(root) == [
        ("mixed", ["A", "X"], 0, 2),
        ("mixed", ["after"], 1, 2),
    ]


async def test_numbering_across_extracted_segments() -> None:
    numbering = Numbering()
    rendered = [
        await numbering.messages_as_str(item.messages)
        async for item in timeline_messages(explore_plan_build())
    ]
    assert rendered[0] == "[M1] USER:\ne1\n\n[M2] ASSISTANT:\ne2\n"
    assert rendered[-1].startswith("[M9] USER:\nr1\n")
    refs = numbering.extract_references("Explored [M1]; retried [M9-M10]; planned [M3]")
    assert [r.id for r in refs] == ["e1", "r1", "r2", "p1"]
