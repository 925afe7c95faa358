"""Unit behaviour of the Inspect timeline builder beyond the upstream fixtures."""

from __future__ import annotations

from typing import Any

from opencode_restore.model import TimelineEvent, TimelineSpan
from opencode_restore.sources.inspect.builder import build_timeline, chat_messages_to_messages
from opencode_restore.sources.inspect.events import to_timeline_event, usage_of


def _model(uuid: str, user: str, *, system: str = "sys", **extra: Any) -> dict[str, Any]:
    return {
        "event": "model",
        "uuid": uuid,
        "timestamp": "2024-01-01T00:00:00Z",
        "input": [
            {"id": f"{uuid}-s", "role": "system", "content": system},
            {"id": f"{uuid}-u", "role": "user", "content": user},
        ],
        "output": {
            "choices": [{"message": {"id": f"{uuid}-a", "content": f"re: {user}"}}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        **extra,
    }


def _uuids(span: TimelineSpan) -> list[str]:
    return [e.uuid for e in span.events()]


# --- chat messages ------------------------------------------------------------------


def test_chat_message_blocks_and_ids() -> None:
    messages = chat_messages_to_messages(
        [
            {
                "id": "a1",
                "role": "assistant",
                "model": "m",
                "source": "generate",
                "content": [
                    {"type": "reasoning", "reasoning": "think", "signature": "sig"},
                    {"type": "text", "text": "hello"},
                    {"type": "image", "image": "data:..."},
                    {"type": "data", "data": {"k": 1}},
                    {"type": "tool_use", "id": "srv1", "name": "web", "arguments": "q"},
                ],
                "tool_calls": [{"id": "c1", "function": "bash", "arguments": {"cmd": "ls"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "function": "bash", "content": "out"},
        ]
    )
    assert [m.id for m in messages] == ["a1", "a1#1", "a1#2", "a1#3", "a1#4", "a1#5", "0:2"]
    assert [m.type for m in messages] == [
        "thinking",
        "text",
        "text",
        "text",
        "tool_use",
        "tool_use",
        "tool_result",
    ]
    assert {m.group for m in messages[:6]} == {"a1"}
    assert messages[0].text == "think"
    assert (messages[2].text, messages[2].meta["media"]) == ("<image />", "image")
    assert messages[3].text == '{"k":1}'
    assert (messages[4].tool_name, messages[4].tool_input) == ("web", {"arguments": "q"})
    assert (messages[5].tool_call_id, messages[5].tool_input) == ("c1", {"cmd": "ls"})
    assert all(m.model == "m" and m.meta["source"] == "generate" for m in messages[:6])
    result = messages[6]
    assert (result.role, result.tool_call_id, result.tool_name, result.text) == (
        "tool",
        "c1",
        "bash",
        "out",
    )
    assert not result.is_error
    assert result.entry_index == 2


def test_chat_message_edge_cases() -> None:
    messages = chat_messages_to_messages(
        [
            "not a message",
            {"role": "robot", "content": "skip me"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": "f"}]},
            {"role": "assistant", "content": [{"type": "reasoning", "redacted": True}]},
            {
                "role": "assistant",
                "content": [{"type": "reasoning", "summary": "s", "redacted": 1}],
            },
            {"role": "tool", "content": "", "error": {"type": "timeout", "message": "slow"}},
            {"role": "user", "content": None},
            {"role": "user", "content": ["plain", 3]},
        ],
        file_index=2,
        id_prefix="x:",
    )
    assert [m.id for m in messages] == ["x:3", "x:4", "x:5", "x:6", "x:7", "x:8", "x:8#1"]
    assert messages[0].type == "tool_use"
    assert messages[0].tool_input == {}
    assert (messages[1].type, messages[1].text, messages[1].meta) == (
        "thinking",
        "",
        {"redacted": True},
    )
    assert messages[2].text == "s"
    assert (messages[3].is_error, messages[3].text) == (True, "slow")
    assert messages[3].meta["error"]["type"] == "timeout"
    assert (messages[4].type, messages[4].text) == ("text", "")
    assert [m.text for m in messages[5:]] == ["plain", "3"]
    assert {m.file_index for m in messages} == {2}


# --- single events ------------------------------------------------------------------


def test_event_kinds() -> None:
    model = to_timeline_event(_model("m1", "hi"), "m1")
    assert model.kind == "model"
    assert model.model is not None
    assert [m.id for m in model.model.input] == ["m1-s", "m1-u"]
    assert [(m.id, m.role, m.text) for m in model.model.output] == [("m1-a", "assistant", "re: hi")]
    assert model.model.usage is not None
    assert model.model.usage.total == 15
    assert model.model.output[0].usage is model.model.usage

    tool = to_timeline_event(
        {
            "event": "tool",
            "id": "c1",
            "function": "bash",
            "arguments": {"cmd": "ls"},
            "result": [{"type": "text", "text": "a.txt"}],
            "error": {"type": "timeout", "message": "took too long"},
        },
        "t1",
    )
    assert tool.tool is not None
    assert (tool.tool.id, tool.tool.function, tool.tool.result) == ("c1", "bash", "a.txt")
    assert tool.tool.error == "took too long"

    compaction = to_timeline_event(
        {"event": "compaction", "type": "trim", "tokens_before": 900, "tokens_after": 100}, "c"
    )
    assert compaction.compaction is not None
    assert (compaction.kind, compaction.compaction.kind) == ("compaction", "trim")
    assert (compaction.compaction.tokens_before, compaction.compaction.tokens_after) == (900, 100)
    assert to_timeline_event({"event": "compaction", "type": "odd"}, "c").text == (
        "compaction: summary"
    )


def test_info_event_texts() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {"event": "span_begin", "type": "solver", "name": "generate"},
            "span_begin: solver generate",
        ),
        ({"event": "span_end", "id": "s1"}, "span_end: s1"),
        ({"event": "info", "source": "x", "data": {"a": 1}}, 'info: x {"a":1}'),
        ({"event": "info", "data": "note"}, "info: note"),
        ({"event": "error", "error": {"message": "bad"}}, "error: bad"),
        ({"event": "score", "score": {"value": "C"}}, "score: C"),
        ({"event": "logger", "message": {"message": "log"}}, "logger: log"),
        ({"event": "sandbox", "action": "exec", "cmd": "ls"}, "sandbox: exec ls"),
        ({"event": "branch", "from_anchor": "m1"}, "branch: from m1"),
        ({"event": "sample_limit", "message": "limit hit"}, "sample_limit: limit hit"),
        ({"event": "state"}, "state"),
        ({}, "unknown"),
    ]
    for event, text in cases:
        assert to_timeline_event(event, "u").text == text


def test_usage_of() -> None:
    usage = usage_of(
        {
            "input_tokens": 1,
            "output_tokens": 2,
            "input_tokens_cache_read": 3,
            "input_tokens_cache_write": True,
        }
    )
    assert usage is not None
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (1, 2, 3, 0)
    assert usage_of("nope") is None


# --- tree building ------------------------------------------------------------------


def test_empty_and_junk_events() -> None:
    root = build_timeline([]).root
    assert (root.id, root.name, root.span_type, root.content) == ("root", "main", None, [])
    assert build_timeline(["junk", 3, None]).root.content == []


def test_synthetic_uuids_and_root_name() -> None:
    events = [{"event": "info", "data": "a"}, {"event": "info", "uuid": "given", "data": "b"}]
    timeline = build_timeline(events, root_name="run")
    assert _uuids(timeline.root) == ["event-1", "given"]
    assert timeline.root.name == "run"
    assert timeline.name == "Default"


def test_tool_agent_nested_uuids() -> None:
    tool = {
        "event": "tool",
        "uuid": "t",
        "id": "c9",
        "agent": "helper",
        "events": [{"event": "info", "data": "x"}, "junk", {"event": "model", "uuid": "inner"}],
    }
    child = next(build_timeline([tool]).root.spans())
    assert (child.id, child.name, child.meta["source"]) == ("tool-agent-c9", "helper", "tool")
    assert _uuids(child) == ["t/1", "inner"]
    assert "agent_result" not in child.meta


def test_malformed_spans_never_lose_events() -> None:
    events = [
        {"event": "span_begin", "id": "a", "parent_id": "b", "type": "agent", "name": "A"},
        {"event": "span_begin", "id": "b", "parent_id": "a", "type": "agent", "name": "B"},
        {"event": "span_begin", "id": "a", "name": "duplicate"},
        {"event": "span_begin", "name": "no id"},
        {"event": "info", "uuid": "in-b", "span_id": "b"},
        {"event": "info", "uuid": "nowhere", "span_id": "zzz"},
        {"event": "span_end", "id": "unknown"},
        {"event": "span_end", "id": "b"},
        {"event": "span_end", "id": "b"},
    ]
    root = build_timeline(events).root
    seen: list[str] = []
    for span in root.walk():
        seen += [e.text or "" for e in span.events()]
    # A's parent began later, so A is top level and B nests under A (no cycle).
    a = next(root.spans())
    assert (a.id, next(a.spans()).id) == ("a", "b")
    assert _uuids(next(a.spans())) == ["in-b"]
    assert sum(t.startswith("span_begin") for t in seen) == 2
    assert sum(t.startswith("span_end") for t in seen) == 2
    assert "info" in seen


def test_top_level_events_beside_phase_spans_are_kept() -> None:
    events = [
        {"event": "span_begin", "id": "i", "name": "init", "type": "init"},
        {"event": "info", "uuid": "setup", "span_id": "i"},
        {"event": "span_end", "id": "i"},
        {"event": "span_begin", "id": "s", "name": "solvers"},
        {"event": "model", "uuid": "m", "span_id": "s"},
        {"event": "span_end", "id": "s"},
        {"event": "info", "uuid": "late", "data": "after solvers"},
    ]
    root = build_timeline(events).root
    assert root.id == "s"
    assert _uuids(root) == ["m", "late"]
    assert [s.span_type for s in root.spans()] == ["init"]


def test_empty_solvers_and_orphan_items_with_several_agents() -> None:
    empty = [
        {"event": "span_begin", "id": "s", "name": "solvers"},
        {"event": "span_end", "id": "s"},
    ]
    assert build_timeline(empty).root.span_type is None
    events = [
        {"event": "span_begin", "id": "s", "name": "solvers"},
        {"event": "info", "uuid": "orphan", "span_id": "s"},
        {"event": "span_begin", "id": "w", "name": "wrap", "type": "custom", "parent_id": "s"},
        {"event": "info", "uuid": "wrapped", "span_id": "w"},
        {"event": "span_end", "id": "w"},
        {"event": "span_begin", "id": "a1", "name": "one", "type": "agent", "parent_id": "s"},
        {"event": "model", "uuid": "m1", "span_id": "a1"},
        {"event": "span_begin", "id": "a2", "name": "two", "type": "agent", "parent_id": "s"},
        {"event": "model", "uuid": "m2", "span_id": "a2"},
    ]
    root = build_timeline(events).root
    assert (root.id, root.name) == ("root", "main")
    # As upstream: each loose item goes in front of the ones before it (last first),
    # an unrolled span keeping its begin, content and end in order.
    assert _uuids(root) == ["event-3", "wrapped", "event-5", "orphan"]
    assert [s.id for s in root.spans()] == ["a1", "a2"]


def test_several_loose_events_come_out_last_first_as_upstream_gives_them() -> None:
    events = [
        {"event": "span_begin", "id": "s", "name": "solvers"},
        {"event": "info", "uuid": "first", "span_id": "s"},
        {"event": "span_begin", "id": "a1", "name": "one", "type": "agent", "parent_id": "s"},
        {"event": "model", "uuid": "m1", "span_id": "a1"},
        {"event": "span_end", "id": "a1"},
        {"event": "info", "uuid": "between", "span_id": "s"},
        {"event": "span_begin", "id": "a2", "name": "two", "type": "agent", "parent_id": "s"},
        {"event": "model", "uuid": "m2", "span_id": "a2"},
        {"event": "span_end", "id": "a2"},
        {"event": "info", "uuid": "last", "span_id": "s"},
    ]
    root = build_timeline(events).root
    content = [i.uuid if isinstance(i, TimelineEvent) else i.id for i in root.content]
    assert content == ["last", "between", "first", "a1", "a2"]


def test_agent_span_description_and_empty_branch() -> None:
    events = [
        {
            "event": "span_begin",
            "id": "a",
            "name": "A",
            "type": "agent",
            "metadata": {"description": "does things"},
        },
        {"event": "model", "uuid": "m", "span_id": "a"},
        {"event": "span_begin", "id": "br", "name": "b", "type": "branch", "parent_id": "a"},
        {"event": "span_end", "id": "br"},
    ]
    agent = next(build_timeline(events).root.spans())
    assert agent.meta["description"] == "does things"
    assert agent.branches == []


def test_explicit_branch_without_anchor_uses_last_shared_message() -> None:
    events = [
        {"event": "span_begin", "id": "a", "name": "A", "type": "agent"},
        _model("m1", "go", span_id="a"),
        {"event": "span_begin", "id": "br", "name": "b1", "type": "branch", "parent_id": "a"},
        _model("m2", "go", span_id="br"),
        {"event": "span_begin", "id": "br2", "name": "b2", "type": "branch", "parent_id": "br"},
        {"event": "info", "uuid": "deep", "span_id": "br2"},
        {"event": "span_end", "id": "br2"},
        {"event": "span_end", "id": "br"},
        {"event": "span_end", "id": "a"},
    ]
    agent = next(build_timeline(events).root.spans())
    (branch,) = agent.branches
    assert (branch.id, branch.span_type, branch.branched_from) == ("br", "branch", "m2-u")
    assert _uuids(branch) == ["m2"]
    (nested,) = branch.branches
    assert (_uuids(nested), nested.branched_from) == (["deep"], None)


# --- re-rolls, compaction and utility calls ------------------------------------------


def test_rerolls_become_branches_only_when_asked() -> None:
    events = [
        _model("m1", "task"),
        {"event": "tool", "uuid": "t1", "id": "c1", "function": "f"},
        _model("m2", "task"),
        _model("m3", "next"),
    ]
    assert _uuids(build_timeline(events).root) == ["m1", "t1", "m2", "m3"]
    root = build_timeline(events, detect_reroll_branches=True).root
    assert _uuids(root) == ["m2", "m3"]
    (branch,) = root.branches
    assert (branch.id, branch.branched_from, _uuids(branch)) == ("reroll-m1", "m1-u", ["m1", "t1"])


def test_compaction_is_a_hard_boundary_for_rerolls() -> None:
    events = [
        _model("m1", "task"),
        {"event": "compaction", "uuid": "c", "type": "summary"},
        _model("m2", "task"),
    ]
    root = build_timeline(events, detect_reroll_branches=True).root
    assert _uuids(root) == ["m1", "c", "m2"]
    assert root.branches == []


def test_overlapping_rerolls_keep_the_first() -> None:
    events = [
        _model("a1", "A"),
        _model("b1", "B"),
        _model("a2", "A"),
        _model("b2", "B"),
        {"event": "span_begin", "id": "x", "name": "X", "type": "agent"},
        _model("x1", "X", span_id="x"),
        _model("x2", "X", span_id="x"),
    ]
    root = build_timeline(events, detect_reroll_branches=True).root
    assert [_uuids(b) for b in root.branches] == [["a1", "b1"]]
    assert _uuids(root) == ["a2", "b2"]
    child = next(root.spans())
    assert [_uuids(b) for b in child.branches] == [["x1"]]


def test_off_trajectory_call_in_a_tool_loop_is_wrapped() -> None:
    looping = _model("m1", "go", system="main")
    looping["output"]["choices"][0]["message"]["tool_calls"] = [{"id": "c1", "function": "f"}]
    events = [
        looping,
        {"event": "tool", "uuid": "t1", "id": "c1", "function": "f"},
        _model("m2", "title", system="x-anthropic-billing-header: a\nExtract a title"),
        _model("m3", "warm", system="main", config={"max_tokens": 1}),
        _model("m4", "done", system="x-anthropic-billing-header: b\nmain"),
    ]
    root = build_timeline(events).root
    assert _uuids(root) == ["m1", "t1", "m4"]
    wrapped = list(root.spans())
    assert [(s.id, s.name, s.utility) for s in wrapped] == [
        ("utility-m2", "utility", True),
        ("utility-m3", "utility", True),
    ]
    assert all(isinstance(s.content[0], TimelineEvent) for s in wrapped)


def test_bridge_agent_result_needs_a_matching_tool_message() -> None:
    events = [
        {"event": "span_begin", "id": "agent-c1", "name": "sub", "type": "agent"},
        _model("m1", "sub task", span_id="agent-c1"),
        {"event": "span_end", "id": "agent-c1"},
        {
            "event": "model",
            "uuid": "m2",
            "input": [{"role": "tool", "tool_call_id": "other", "content": "nope"}],
        },
    ]
    child = next(build_timeline(events).root.spans())
    assert "agent_result" not in child.meta
    events[-1]["input"].append({"role": "tool", "tool_call_id": "c1", "content": "sub done"})
    child = next(build_timeline(events).root.spans())
    assert child.meta["agent_result"] == "sub done"


def test_bridge_agent_result_found_past_other_model_calls() -> None:
    # The parent asks a helper model (a title, a check) before the call that carries the
    # sub-agent's tool result: the result is still the sub-agent's.
    events = [
        {"event": "span_begin", "id": "p", "name": "lead", "type": "agent"},
        _model("m0", "delegate", span_id="p"),
        {"event": "span_begin", "id": "agent-c7", "name": "sub", "type": "agent", "parent_id": "p"},
        _model("m1", "sub task", span_id="agent-c7"),
        {"event": "span_end", "id": "agent-c7"},
        {
            "event": "model",
            "uuid": "m2",
            "span_id": "p",
            "input": [{"role": "user", "content": "x"}],
        },
        {
            "event": "model",
            "uuid": "m3",
            "span_id": "p",
            "input": [{"role": "assistant", "content": "thinking it over"}],
        },
        {
            "event": "model",
            "uuid": "m4",
            "span_id": "p",
            "input": [{"role": "tool", "tool_call_id": "c7", "content": "found it"}],
        },
        {
            "event": "model",
            "uuid": "m5",
            "span_id": "p",
            "input": [{"role": "tool", "tool_call_id": "c7", "content": "a later copy"}],
        },
    ]
    child = next(s for s in build_timeline(events).root.walk() if s.id == "agent-c7")
    assert child.meta["agent_result"] == "found it"
