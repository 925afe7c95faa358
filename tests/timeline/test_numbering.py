"""Global [M#] numbering across spans, citation extraction, and resumable maps."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.model import Message, Role
from opencode_restore.timeline.numbering import (
    Citations,
    Labeler,
    Numbering,
    Reference,
    message_numbering,
    messages_as_str,
    parse_label,
)
from opencode_restore.timeline.preprocess import MessagesPreprocessor

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def conversation(prefix: str, count: int, file_index: int = 0) -> list[Message]:
    roles: tuple[Role, Role] = ("user", "assistant")
    return [
        Message(
            id=f"{prefix}-{n}",
            role=roles[n % 2],
            type="text",
            text=f"{prefix} message {n}",
            file_index=file_index,
            entry_index=n + 1,
            timestamp=T0,
        )
        for n in range(count)
    ]


def labels_in(text: str) -> list[str]:
    return re.findall(r"^\[(M\d+)\] ", text, flags=re.MULTILINE)


async def three_spans() -> tuple[Numbering, list[str]]:
    numbering = Numbering(MessagesPreprocessor(exclude_reasoning=True))
    texts = [
        await numbering.messages_as_str(conversation("explore", 12)),
        await numbering.messages_as_str(conversation("plan", 8, file_index=1)),
        await numbering.messages_as_str(conversation("build", 25, file_index=2)),
    ]
    return numbering, texts


async def test_numbering_continues_across_spans() -> None:
    numbering, (explore, plan, build) = await three_spans()
    assert labels_in(explore) == [f"M{n}" for n in range(1, 13)]
    assert labels_in(plan) == [f"M{n}" for n in range(13, 21)]
    assert labels_in(build) == [f"M{n}" for n in range(21, 46)]
    assert len(numbering) == 45
    assert plan.startswith("[M13] USER:\nplan message 0\n")


async def test_citations_resolve_from_every_span() -> None:
    numbering, _ = await three_spans()
    refs = numbering.extract_references("Explored [M2], planned [M14] and built [M35].")
    assert [(r.label, r.id) for r in refs] == [
        ("M2", "explore-1"),
        ("M14", "plan-1"),
        ("M35", "build-14"),
    ]
    plan_ref = refs[1]
    assert plan_ref.cite == "[M14]"
    assert (plan_ref.file_index, plan_ref.entry_index, plan_ref.timestamp) == (1, 2, T0)
    assert plan_ref.message is not None
    assert plan_ref.message.text == "plan message 1"


async def test_message_numbering_pair_shares_one_scope() -> None:
    as_str, extract = message_numbering(MessagesPreprocessor(exclude_reasoning=True))
    first = await as_str(conversation("a", 3))
    second = await as_str(conversation("b", 2))
    assert labels_in(first) == ["M1", "M2", "M3"]
    assert labels_in(second) == ["M4", "M5"]
    assert [r.id for r in extract("[M1] then [M5]")] == ["a-0", "b-1"]


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("see [M14]", ["M14"]),
        ("see [M3, M7]", ["M3", "M7"]),
        ("see [M3-M5]", ["M3", "M4", "M5"]),
        ("see [M3–M5]", ["M3", "M4", "M5"]),
        ("see [M3 - 5]", ["M3", "M4", "M5"]),
        ("see [M5-M3]", ["M3", "M4", "M5"]),
        ("see [M2, M4-M6]", ["M2", "M4", "M5", "M6"]),
        ("see [M2][M1]", ["M2", "M1"]),
        ("[see M9 and M1]", ["M9", "M1"]),
        ("[M1, M1] and again [M1]", ["M1"]),
        ("[M4-M6] then [M5, M2]", ["M4", "M5", "M6", "M2"]),
        ("M3 outside brackets, [SUM3], [M3x], (M4)", []),
        ("[M\n3] [M3\n]", []),
    ],
)
async def test_citation_forms(text: str, labels: list[str]) -> None:
    numbering, _ = await three_spans()
    assert [r.label for r in numbering.extract_references(text)] == labels


async def test_unknown_labels_are_reported_not_resolved() -> None:
    numbering, _ = await three_spans()
    result = numbering.resolve("[M2] [M99] [M0] [M44-M50] [M99] [M0-M1]")
    assert isinstance(result, Citations)
    assert [r.label for r in result.refs] == ["M2", "M44", "M45", "M1"]
    assert result.unknown == ["M99", "M0", "M46-M50"]
    assert numbering.unknown("[M46]") == ["M46"]
    assert numbering.unknown("[M45]") == []


async def test_range_wholly_beyond_issued_labels_is_one_unknown_entry() -> None:
    numbering, _ = await three_spans()
    assert numbering.unknown("[M100-M999999999999]") == ["M100-M999999999999"]
    assert numbering.extract_references("[M100-M999999999999]") == []


async def test_nothing_resolves_before_anything_is_numbered() -> None:
    numbering = Numbering()
    assert numbering.resolve("[M1, M2-M3]") == Citations([], ["M1", "M2-M3"])


async def test_label_for_and_reference_lookup() -> None:
    numbering, _ = await three_spans()
    assert numbering.label_for("plan-0") == "M13"
    assert numbering.label_for("never-shown") is None
    ref = numbering.reference("M13")
    assert ref is not None
    assert ref.id == "plan-0"
    assert numbering.reference("M46") is None
    assert numbering.reference("M0") is None
    assert numbering.reference("E1") is None
    assert [r.label for r in numbering][:2] == ["M1", "M2"]


async def test_excluded_messages_take_no_label() -> None:
    messages = [
        Message(id="sys", role="system", type="text", text="prompt"),
        Message(id="u", role="user", type="text", text="hi"),
        Message(id="t", role="assistant", type="thinking", text="hmm"),
        Message(id="empty", role="assistant", type="text", text=""),
        Message(id="a", role="assistant", type="text", text="hello"),
    ]
    numbering = Numbering(MessagesPreprocessor(exclude_reasoning=True))
    text = await numbering.messages_as_str(messages)
    assert text == "[M1] USER:\nhi\n\n[M2] ASSISTANT:\nhello\n"
    assert numbering.label_for("sys") is None
    assert numbering.label_for("a") == "M2"


async def test_same_message_twice_gets_two_labels_by_default() -> None:
    numbering = Numbering()
    messages = conversation("x", 2)
    await numbering.messages_as_str(messages)
    again = await numbering.messages_as_str(messages)
    assert labels_in(again) == ["M3", "M4"]
    assert numbering.label_for("x-0") == "M1"
    # Two labels, one message: cited once.
    assert [r.label for r in numbering.extract_references("[M3] [M1]")] == ["M3"]


async def test_reuse_labels_keeps_first_label() -> None:
    numbering = Numbering(reuse_labels=True)
    messages = conversation("x", 2)
    await numbering.messages_as_str(messages)
    again = await numbering.messages_as_str([*messages, *conversation("y", 1)])
    assert labels_in(again) == ["M1", "M2", "M3"]
    assert len(numbering) == 3


async def test_round_trip_through_saved_map_continues_numbering() -> None:
    numbering, _ = await three_spans()
    saved = numbering.to_dict()
    assert saved["version"] == 1
    assert saved["labels"][13] == {
        "id": "plan-1",
        "file_index": 1,
        "entry_index": 2,
        "timestamp": "2026-01-05T10:00:00+00:00",
    }
    as_str, extract = message_numbering(start_map=saved)
    later = await as_str(conversation("later", 2))
    assert labels_in(later) == ["M46", "M47"]
    refs = extract("[M14] [M47]")
    assert refs[0] == Reference("M14", "plan-1", 1, 2, T0, None)
    assert refs[1].id == "later-1"
    assert refs[1].message is not None


async def test_restored_numbering_keeps_label_for_and_missing_timestamps() -> None:
    numbering = Numbering()
    await numbering.messages_as_str([Message(id="q", role="user", type="text", text="?")])
    restored = Numbering.from_dict(numbering.to_dict(), reuse_labels=True)
    assert restored.label_for("q") == "M1"
    assert restored.reference("M1") == Reference("M1", "q")
    again = await restored.messages_as_str([Message(id="q", role="user", type="text", text="?")])
    assert again == "[M1] USER:\n?\n"


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"version": 2, "labels": []},
        {"version": 1, "labels": {}},
        {"version": 1, "labels": [{"id": "a"}]},
        {
            "version": 1,
            "labels": [{"id": "a", "file_index": "x", "entry_index": 1, "timestamp": None}],
        },
        {
            "version": 1,
            "labels": [{"id": "a", "file_index": 0, "entry_index": 1, "timestamp": "soon"}],
        },
        {"version": 1, "labels": ["M1"]},
    ],
)
def test_bad_saved_map_is_rejected(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="numbering"):
        Numbering.from_dict(data)


async def test_standalone_messages_as_str_with_ids() -> None:
    text, extract = await messages_as_str(conversation("s", 3), include_ids=True)
    assert labels_in(text) == ["M1", "M2", "M3"]
    assert [r.id for r in extract("[M1-M3]")] == ["s-0", "s-1", "s-2"]


async def test_standalone_messages_as_str_without_ids() -> None:
    messages = [
        Message(id="sys", role="system", type="text", text="prompt"),
        *conversation("s", 2),
    ]
    text, extract = await messages_as_str(messages)
    assert text == "USER:\ns message 0\n\nASSISTANT:\ns message 1\n"
    assert extract("[M1]") == []


async def test_numbering_is_deterministic() -> None:
    (_, first), (_, second) = await three_spans(), await three_spans()
    assert first == second


@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    numbering = Numbering.from_dict(
        {
            "version": 1,
            "labels": [
                {"id": f"id{n}", "file_index": 0, "entry_index": n, "timestamp": None}
                for n in range(1, 21)
            ],
        }
    )
    result = numbering.resolve(text)
    ids = [r.id for r in result.refs]
    assert len(ids) == len(set(ids))
    assert all(1 <= int(r.label[1:]) <= 20 for r in result.refs)


@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(0, 40))),
        max_size=8,
    ),
    st.sampled_from([", ", ",", " ", "; "]),
)
def test_generated_citations_resolve_exactly(
    items: list[tuple[int, int | None]], separator: str
) -> None:
    numbering = Numbering.from_dict(
        {
            "version": 1,
            "labels": [
                {"id": f"id{n}", "file_index": 0, "entry_index": n, "timestamp": None}
                for n in range(1, 21)
            ],
        }
    )
    tokens = [f"M{a}" if b is None else f"M{a}-M{b}" for a, b in items]
    expected: list[str] = []
    for a, b in items:
        low, high = (a, a) if b is None else (min(a, b), max(a, b))
        for n in range(max(low, 1), min(high, 20) + 1):
            if f"M{n}" not in expected:
                expected.append(f"M{n}")
    text = f"claims [{separator.join(tokens)}] end" if tokens else "no citations"
    assert [r.label for r in numbering.extract_references(text)] == expected


def test_uncite_turns_what_the_parser_would_cite_into_parentheses() -> None:
    from opencode_restore.timeline.numbering import Numbering, uncite

    text = "done [M2] and [see M3-M5], keep [draft] and [SUM3]"
    assert uncite(text) == "done (M2) and (see M3-M5), keep [draft] and [SUM3]"
    assert Numbering().resolve(uncite(text)).unknown == []


async def test_a_labeler_issues_the_labels_a_numbering_issues() -> None:
    # A system prompt and an empty text get no label; a tool call, a result and
    # thinking do. The labeler counts across its calls as the numbering does across spans.
    messages = [
        Message("s", "system", "text", "You are an agent."),
        *conversation("a", 2),
        Message("empty", "assistant", "text", "  "),
        Message("call", "assistant", "tool_use", "", tool_name="Bash", tool_input={"cmd": "ls"}),
        Message("out", "tool", "tool_result", "", tool_name="Bash"),
        Message("think", "assistant", "thinking", ""),
        *conversation("b", 2),
    ]
    numbering = Numbering()
    await numbering.messages_as_str(messages[:4])
    await numbering.messages_as_str(messages[4:])
    labeler = Labeler()
    labels = {m.id: label for m in messages if (label := labeler.label(m)) is not None}
    assert labels == {ref.id: ref.label for ref in numbering}
    assert list(labels) == ["a-0", "a-1", "call", "out", "think", "b-0", "b-1"]
    assert labeler.issued == len(numbering) == 7


@pytest.mark.parametrize(
    ("text", "label"),
    [("M22", "M22"), ("[M22]", "M22"), (" m7 ", "M7"), ("M0", None), ("M2-M4", None), ("22", None)],
)
def test_parse_label(text: str, label: str | None) -> None:
    assert parse_label(text) == label
