"""An opencode export whose part, message and call ids were redacted (``REDACTED``):
every message keeps an id of its own (fixtures/opencode/redacted-ids, a real excerpt)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources import iter_messages, open_session


def _path(fixtures: Path) -> Path:
    return fixtures / "opencode" / "redacted-ids" / "export.json"


def test_no_two_messages_share_an_id(fixtures: Path) -> None:
    messages = open_session([_path(fixtures)], WarningSink()).messages()
    counts = Counter(m.id for m in messages)
    assert counts.most_common(1)[0][1] == 1
    assert not any("REDACTED" in m.id for m in messages)


def test_redacted_part_takes_its_position(fixtures: Path) -> None:
    messages = open_session([_path(fixtures)], WarningSink()).messages()
    tools = [m for m in messages if m.type in ("tool_use", "tool_result")]
    use, result = tools[0], tools[1]
    assert use.id == f"0:{use.entry_index}"
    assert result.id == f"0:{use.entry_index}:result"
    # The redacted call id pairs the call with its own result, not with every other one.
    assert use.tool_call_id == result.tool_call_id == use.id
    assert len({m.tool_call_id for m in tools}) == len(tools) // 2


def test_real_ids_are_kept(fixtures: Path) -> None:
    messages = open_session([_path(fixtures)], WarningSink()).messages()
    assert messages[0].id == "prt_ce5b46f21002JtpchsiuWp5vte"
    call = next(m for m in messages if m.tool_call_id == "call_biCGvWY0dGSKpjQYhmLGUS5m")
    assert call.id.startswith("0:")  # its part id was redacted, its call id was not


def test_redacted_message_ids_do_not_join_steps(fixtures: Path) -> None:
    messages = open_session([_path(fixtures)], WarningSink()).messages()
    groups = {m.group for m in messages if m.role == "assistant"}
    assert "REDACTED" not in groups
    assert len(groups) == 4


def test_stream_gives_the_same_ids(fixtures: Path) -> None:
    whole = [m.id for m in open_session([_path(fixtures)], WarningSink()).messages()]
    streamed = [m.id for m in iter_messages([_path(fixtures)], WarningSink())]
    assert streamed == whole
