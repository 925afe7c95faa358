"""A turn longer than ``max_turn_chars`` is summarized in consecutive segments, never cut."""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.config import load_config
from opencode_restore.llm.registry import close_provider, get_provider
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.model import Message
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.pipeline.stages.turn_summarizer import segments
from tests.fakes.fake_llm_server import FakeLLMServer
from tests.fakes.tokens import text_chars, tokens

from ..helpers import make_session

PLANTED = "clean_alias() silently truncates aliases to 24 characters"
CALLS = 40


def _long_turn() -> list[Message]:
    """One request answered by 40 tool calls; a finding sits in the middle (call 20)."""
    msgs = [Message("u1", "user", "text", "Validate the whole API in one go.", entry_index=1)]
    for k in range(CALLS):
        output = f"line {k}: " + "ok " * 150
        if k == CALLS // 2:
            output = f"Note: {PLANTED} (alias[:24]). " + output
        msgs += [
            Message(
                f"a{k}",
                "assistant",
                "tool_use",
                "",
                tool_name="Bash",
                tool_call_id=f"c{k}",
                tool_input={"command": f"grep -n check{k} src"},
                entry_index=2 + 2 * k,
            ),
            Message(
                f"r{k}", "tool", "tool_result", output, tool_call_id=f"c{k}", entry_index=3 + 2 * k
            ),
        ]
    msgs.append(Message("z", "assistant", "text", "All checks pass.", entry_index=200))
    return msgs


def _turn(outcome: str) -> dict[str, Any]:
    return {
        "turn_number": 1,
        "user_request_summary": "validate the API [M1]",
        "agent_response_summary": "ran the checks [M2]",
        "key_outcomes": [outcome],
    }


def test_segments_in_order_carry_the_running_summary_and_keep_the_middle() -> None:
    config = load_config(env={})
    config.restore.max_turn_chars = 6000
    script: list[Any] = [_turn(f"outcome of part {k} [M2]") for k in range(1, 20)]
    script.append({"goal": "validate [M1]"})
    provider = ScriptedProvider(script, auto=True)
    restored = anyio.run(
        lambda: restore_session(
            make_session(_long_turn()),
            config,
            provider,
            options=RestoreOptions(skip_evidence_search=True),
        )
    )
    calls = [r for r in provider.requests if r.stage == "turn_summary"]
    texts = [r.messages[-1].content for r in calls]
    parts = [re.search(r'part="(\d+) of (\d+)"', t) for t in texts]
    assert all(parts)
    n = len(calls)
    assert n >= 3
    # In order, one call per segment.
    assert [(int(p.group(1)), int(p.group(2))) for p in parts if p] == [
        (k, n) for k in range(1, n + 1)
    ]
    # Each call after the first extends the summary the previous call returned.
    assert "Your TURN SUMMARY of parts" not in texts[0]
    for k in range(1, n):
        assert f"outcome of part {k} [M2]" in texts[k]
    # Every message reaches the model whole, the planted finding among them, once.
    assert sum(PLANTED in t for t in texts) == 1
    assert not any("omitted" in t for t in texts)
    for k in range(CALLS):  # (commands are in every call too: the whole turn's facts)
        assert sum(f"line {k}: ok ok" in t for t in texts) == 1
    # The last call's answer, which covers every part, is the turn's summary.
    assert restored.turns[0].key_outcomes == [f"outcome of part {n} [M2]"]
    assert not restored.failed_turns


class UsageServer(FakeLLMServer):
    """The strict fake Anthropic API, keeping each request body with the usage it reported."""

    def __init__(self) -> None:
        super().__init__(strict=True)
        self.usages: list[tuple[dict[str, Any], dict[str, int]]] = []

    def _anthropic_usage(self, body: dict[str, Any]) -> dict[str, int]:
        usage = super()._anthropic_usage(body)
        self.usages.append((body, usage))
        return usage


def test_later_segments_read_the_turns_state_and_facts_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    config = load_config(env={})
    config.restore.max_turn_chars = 6000
    with UsageServer() as server:

        async def go() -> None:
            provider = get_provider(
                "anthropic:fake-model", ProviderSettings(base_url=server.base_url)
            )
            try:
                options = RestoreOptions(skip_evidence_search=True)
                await restore_session(make_session(_long_turn()), config, provider, options=options)
            finally:
                await close_provider(provider)

        anyio.run(go)
    turn_calls = [
        (body, usage)
        for body, usage in server.usages
        if body["tool_choice"]["name"] == "emit_turn_summary"
    ]
    assert len(turn_calls) >= 3
    for body, usage in turn_calls[1:]:
        [user] = body["messages"]
        blocks = user["content"]
        [shared] = [i for i, b in enumerate(blocks) if b["text"].startswith("Accumulated state")]
        assert "Parsed facts" in blocks[shared]["text"]
        assert "cache_control" in blocks[shared]
        # Only the notice and this segment's task are new: the state and facts, like the
        # instructions and the header before them, are read from the cache.
        assert usage["cache_creation_input_tokens"] == 0
        assert usage["cache_read_input_tokens"] > 0
        assert usage["input_tokens"] == sum(tokens(text_chars(b)) for b in blocks[shared + 1 :])


def test_a_short_turn_is_one_call_with_no_parts() -> None:
    config = load_config(env={})
    provider = ScriptedProvider([], auto=True)
    anyio.run(
        lambda: restore_session(
            make_session(_long_turn()[:5]),
            config,
            provider,
            options=RestoreOptions(skip_evidence_search=True),
        )
    )
    [call] = [r for r in provider.requests if r.stage == "turn_summary"]
    assert "part=" not in call.messages[-1].content


@given(
    st.lists(st.text(alphabet="ab \n", min_size=1, max_size=120), min_size=1, max_size=30),
    st.integers(min_value=40, max_value=400),
)
def test_segments_keep_every_message_within_the_limit(bodies: list[str], limit: int) -> None:
    units = [f"[M{k}] {b.strip() or 'x'}" for k, b in enumerate(bodies, start=1)]
    transcript = "\n".join(units)
    parts = segments(transcript, limit)
    assert all(len(p) <= limit for p in parts)
    if len(transcript) <= limit:
        assert parts == [transcript]
    elif all(len(u) <= limit for u in units):
        # Split between messages only: joined again they are the transcript.
        assert "\n".join(parts) == transcript
