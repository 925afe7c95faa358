"""sources.ids: placeholder ids and repeated ids fall back to positions, in order."""

from __future__ import annotations

import pytest

from opencode_restore.model import Message, Session, Timeline, TimelineEvent, TimelineSpan
from opencode_restore.sources.ids import IdGuard, is_placeholder_id, source_id, unique_ids


def _m(mid: str, entry: int, file_index: int = 0) -> Message:
    return Message(mid, "assistant", "text", "t", file_index=file_index, entry_index=entry)


@pytest.mark.parametrize(
    "value",
    ["REDACTED", "[REDACTED]", "<redacted>", "REDACTED:result", "***", "", "  ", "null", "xxxx"],
)
def test_placeholders(value: str) -> None:
    assert is_placeholder_id(value)
    assert source_id(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "prt_ce5b46f21002JtpchsiuWp5vte",
        "0:12",
        "toolu_01FdQ8qTyVyZjE3Kw4dguQGx",
        "c06a9fe4-ba05-44f2-b619-a057c18101e5#1",
        "redacted_thinking_1",
        "call_REDACTED_1",
    ],
)
def test_real_ids_are_kept(value: str) -> None:
    assert not is_placeholder_id(value)
    assert source_id(value) == value


def test_source_id_refuses_non_strings() -> None:
    assert source_id(None) is None
    assert source_id(12) is None


def test_guard_keeps_unique_ids() -> None:
    out = list(IdGuard().stream([_m("a", 1), _m("b", 2)]))
    assert [m.id for m in out] == ["a", "b"]
    assert all("original_id" not in m.meta for m in out)


def test_guard_repeated_and_placeholder_ids_become_positions() -> None:
    out = list(IdGuard().stream([_m("a", 1), _m("a", 2), _m("REDACTED", 3), _m("REDACTED", 4)]))
    assert [m.id for m in out] == ["a", "0:2", "0:3", "0:4"]
    assert out[1].meta["original_id"] == "a"
    assert out[2].meta["original_id"] == "REDACTED"


def test_guard_position_taken_gets_a_suffix() -> None:
    # Two blocks of one record (one entry index) whose ids were both redacted.
    out = list(IdGuard().stream([_m("0:5", 5), _m("REDACTED", 5), _m("REDACTED", 5)]))
    assert [m.id for m in out] == ["0:5", "0:5#2", "0:5#3"]


def test_unique_ids_root_first_then_spans_and_bodies_agree() -> None:
    child = TimelineSpan("sub", "agent")
    root = TimelineSpan("root", "main")
    root.content = [
        TimelineEvent("e1", "message", message=_m("REDACTED", 1)),
        child,
        TimelineEvent("e2", "message", message=_m("x", 2)),
    ]
    child.content = [TimelineEvent("e3", "message", message=_m("x", 7, file_index=1))]
    whole = [_m("REDACTED", 1), _m("x", 2)]
    session = Session("s", "opencode", ["f"], Timeline(root), bodies=lambda: iter(whole))
    unique_ids(session)
    assert [m.id for m in session.messages()] == ["0:1", "x"]
    assert child.messages()[0].id == "1:7"  # the root kept "x"
    assert session.bodies is not None
    assert [m.id for m in session.bodies()] == ["0:1", "x"]
