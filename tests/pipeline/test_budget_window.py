"""The budget within the model's real context window: segments that fit it, an overflow
the server reports shrinks the window and the turn is fitted again, a window too small
for any turn request is one error for the run, and a big window changes nothing."""

from __future__ import annotations

import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from opencode_restore.config import Config
from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import ChatMessage, LLMRequest, LLMResult
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.llm.registry import get_provider
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.llm.window import SOURCE_CONFIG, SOURCE_ERROR, SOURCE_SERVER, Overflow
from opencode_restore.model import Message, Session
from opencode_restore.pipeline.budget import ContextWindowError, TokenEstimator, Window
from opencode_restore.pipeline.context import MIN_OUTPUT_TOKENS
from opencode_restore.pipeline.journal.data import Journal
from opencode_restore.pipeline.prompting.prompts import RenderedPrompt
from opencode_restore.pipeline.prompting.render import request_chars
from opencode_restore.pipeline.run import make_context, model_window
from opencode_restore.pipeline.tokens import raw_tokens

from .helpers import make_session
from .journal_helpers import Counting, config, restore, session_of


def big_turn(results: int = 40, size: int = 1500) -> Session:
    """One request answered by ``results`` tool calls whose outputs are ``size`` chars."""
    messages = [Message("u1", "user", "text", "fix the parser", entry_index=1)]
    for i in range(results):
        messages += [
            Message(
                f"a{i}",
                "assistant",
                "tool_use",
                "",
                tool_name="Bash",
                tool_call_id=f"c{i}",
                tool_input={"command": f"pytest -k case{i}"},
                entry_index=10 + 2 * i,
            ),
            Message(
                f"r{i}",
                "tool",
                "tool_result",
                f"case{i} " + "y" * size,
                tool_call_id=f"c{i}",
                entry_index=11 + 2 * i,
            ),
        ]
    messages.append(Message("t1", "assistant", "text", "all fixed", entry_index=999))
    return make_session(messages, id="sess/1", cwd="/w", title="one big turn", files=["l.jsonl"])


def windowed(window: int | None, **restore_options: Any) -> Config:
    cfg = config(**restore_options)
    cfg.llm.context_window = window
    return cfg


def window_of(cfg: Config, provider: Any = None) -> Window:
    session = session_of(1)
    ctx = make_context(session, cfg, provider or OfflineProvider())
    ctx.context_window = cfg.llm.context_window
    return Window(Journal(session, "fingerprint"), ctx, TokenEstimator())


def test_the_budget_takes_the_window_less_the_answer_and_a_margin() -> None:
    cfg = windowed(8192)
    window = window_of(cfg)
    assert window.ctx.output_tokens == 2048  # llm.max_tokens: a quarter of the window
    assert window.budget == 8192 - 2048 - 820
    # Segments shrink to 40% of the budget; the caller's config is left as it was.
    assert window.ctx.config.restore.max_turn_chars == int(5324 * 0.4 * 3.5)
    assert cfg.restore.max_turn_chars == 60_000
    small = window_of(windowed(2048))
    assert small.ctx.output_tokens == MIN_OUTPUT_TOKENS
    assert small.budget == 2048 - 512 - 205


def test_a_big_or_unknown_window_changes_nothing() -> None:
    for size in (None, 200_000):
        window = window_of(windowed(size))
        assert window.budget == 100_000
        assert window.ctx.config.restore.max_turn_chars == 60_000
        assert window.ctx.output_tokens == 2048


def test_a_long_turn_goes_in_segments_that_fit_the_window(tmp_path: Path) -> None:
    provider = Counting()
    cfg = windowed(8192, max_tool_output_chars=100_000)
    r = restore(big_turn(), provider, tmp_path, cfg)
    turn_calls = [q for q in provider.requests if q.stage == "turn_summary"]
    assert len(turn_calls) > 3  # ~64k characters in ~9k segments
    assert not r.failed_turns
    for q in provider.requests:
        assert raw_tokens(request_chars(q)) + q.max_tokens <= 8192
        # A doubled limit may not pass it either.
        assert q.window_room is not None
        assert raw_tokens(request_chars(q)) + q.window_room <= 8192
    assert all("characters of this turn omitted" not in q.messages[-1].content for q in turn_calls)


class Overflowing(Counting):
    """Refuses turn requests over ``window`` tokens as llama-cpp-python does."""

    def __init__(self, window: int) -> None:
        super().__init__()
        self.window = window
        self.refused: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResult:
        tokens = raw_tokens(request_chars(request))
        if tokens > self.window:
            self.refused.append(request)
            raise ProviderError(
                "offline",
                "rules",
                f"Requested tokens ({tokens}) exceed context window of {self.window}",
                400,
            )
        return await super().complete(request)


def test_an_overflow_shrinks_the_window_and_the_turn_is_fitted_again(tmp_path: Path) -> None:
    # The server's window (6000) is smaller than the configured one: the error says so.
    provider = Overflowing(6000)
    cfg = windowed(16_384, max_tool_output_chars=100_000)
    r = restore(big_turn(), provider, tmp_path, cfg)
    assert len(provider.refused) == 1
    assert not r.failed_turns
    sent = [q for q in provider.requests if q.stage == "turn_summary"]
    assert all(raw_tokens(request_chars(q)) <= 6000 for q in sent)
    assert r.usage.failed_calls == 1


def test_a_window_too_small_for_any_turn_is_one_error(tmp_path: Path) -> None:
    provider = Counting()
    with pytest.raises(ContextWindowError) as info:
        restore(session_of(10), provider, tmp_path, windowed(1024))
    assert str(info.value).startswith(
        f"the model's context window (1,024 tokens, {SOURCE_CONFIG}) cannot hold a "
        "turn_summary request"
    )
    assert provider.requests == []  # known before any call: nothing sent
    assert info.value.exit_code == 2


def test_an_overflow_naming_a_tiny_window_is_one_error(tmp_path: Path) -> None:
    provider = Overflowing(600)
    with pytest.raises(ContextWindowError, match=f"600 tokens, {SOURCE_ERROR}"):
        restore(session_of(10), provider, tmp_path, windowed(None))
    assert len(provider.refused) == 1  # the first turn's call, then the run stops


def test_the_window_comes_from_the_config_or_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    listing = {"object": "list", "data": [{"id": "smollm2", "max_model_len": 8192}]}

    def vllm(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json=listing)
        return httpx2.Response(404)

    local = get_provider("openai:smollm2", ProviderSettings(base_url="http://127.0.0.1:8000/v1"))
    remote = get_provider("openai:gpt-test", ProviderSettings())

    async def ask(cfg: Config, provider: Any) -> tuple[int | None, str]:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(vllm)) as client:
            return await model_window(cfg, provider, client)

    assert anyio.run(ask, windowed(None), local) == (8192, SOURCE_SERVER)
    assert anyio.run(ask, windowed(4096), local) == (4096, SOURCE_CONFIG)
    assert anyio.run(ask, windowed(None), remote) == (None, "")
    assert anyio.run(ask, windowed(None), OfflineProvider()) == (None, "")


def test_a_local_server_is_not_asked_twice_about_a_read_timeout() -> None:
    local = get_provider("openai:smollm2", ProviderSettings(base_url="http://127.0.0.1:8000/v1"))
    assert make_context(session_of(1), windowed(None), local).policy.local
    assert not make_context(session_of(1), windowed(None), OfflineProvider()).policy.local


def many_files_turn(files: int = 150) -> Session:
    """One turn editing ``files`` files: its facts JSON alone outgrows a small window."""
    messages = [Message("u1", "user", "text", "rename the module everywhere", entry_index=1)]
    for i in range(files):
        messages += [
            Message(
                f"a{i}",
                "assistant",
                "tool_use",
                "",
                tool_name="Edit",
                tool_call_id=f"c{i}",
                tool_input={"file_path": f"/w/src/package_{i}/module_{i}.py"},
                entry_index=10 + 2 * i,
            ),
            Message(
                f"r{i}", "tool", "tool_result", "ok", tool_call_id=f"c{i}", entry_index=11 + 2 * i
            ),
        ]
    messages.append(Message("t1", "assistant", "text", "renamed", entry_index=9999))
    return make_session(messages, id="sess/1", cwd="/w", title="many files", files=["l.jsonl"])


def test_state_and_facts_too_big_for_the_window_are_cut_not_failed(tmp_path: Path) -> None:
    provider = Counting()
    r = restore(many_files_turn(), provider, tmp_path, windowed(4096))
    assert not r.failed_turns
    turns = [q for q in provider.requests if q.stage == "turn_summary"]
    for turn in turns:  # every segment carries the whole turn's facts: each is cut
        [shared] = [m.content for m in turn.messages if "Parsed facts" in m.content]
        assert "characters of the facts JSON omitted" in shared
        assert raw_tokens(request_chars(turn)) + turn.max_tokens <= 4096
    # Without a window nothing is cut.
    whole = Counting()
    restore(many_files_turn(), whole, None, windowed(None))
    assert "JSON omitted" not in whole.requests[0].messages[-2].content


def test_a_refit_keeps_the_repair_round_and_asks_for_what_fits() -> None:
    window = window_of(windowed(None))
    prompt = RenderedPrompt("turn_summary.j2", "rules " * 300, "header", "task " * 1000)

    async def go() -> tuple[LLMRequest | None, LLMRequest | None]:
        sent = await window.request(prompt, "turn_summary")
        repair = [ChatMessage("assistant", "not json"), ChatMessage("user", "again")]
        boosted = replace(sent, messages=[*sent.messages, *repair], output_boost=1)
        overflow = Overflow("exceed context window of 4096", 4096, 2600)
        fitted = await window.refit_overflow(boosted, overflow)
        other = LLMRequest(messages=[ChatMessage("user", "range")], stage="range_summary")
        return fitted, await window.refit_overflow(other, overflow)

    fitted, other = anyio.run(go)
    assert fitted is not None
    assert (window.ctx.context_window, window.ctx.window_source) == (4096, SOURCE_ERROR)
    assert [m.content for m in fitted.messages[-2:]] == ["not json", "again"]
    assert fitted.output_boost == 0
    assert fitted.max_tokens == 1024  # a quarter of the learned window
    assert other is None  # not a request this window rendered: its stage falls back
    # 2600 prompt tokens for these characters: the estimate counts more per character now.
    assert window.estimator.factor > 1


@pytest.mark.usefixtures("no_gc")
def test_a_closed_window_is_freed_by_reference_counting() -> None:
    window = window_of(windowed(None))
    ctx = window.ctx
    prompt = RenderedPrompt("turn_summary.j2", "rules", "header", "task")
    anyio.run(window.request, prompt, "turn_summary")  # how to render it again
    held = weakref.ref(window)
    window.close()
    del window
    assert held() is None  # the journal behind it goes with it
    assert ctx.policy.refit is None
