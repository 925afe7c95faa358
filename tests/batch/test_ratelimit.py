"""The shared limiter: buckets, the shared 429 pause, rules, and the provider wrapper."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest

from opencode_restore.config import RateLimitConfig, RateLimitRule
from opencode_restore.llm.base import ChatMessage, LLMRequest, LLMResult, SystemBlock
from opencode_restore.llm.ratelimit import (
    RateLimitedProvider,
    RateLimiter,
    estimate_tokens,
    rate_limited,
    rule_for,
)
from opencode_restore.model import Usage


class Clock:
    """Virtual time: ``anyio.sleep`` is replaced so tests never wait."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr("opencode_restore.llm.ratelimit.anyio.sleep", c.sleep)
    return c


def _run(fn: Any) -> Any:
    return anyio.run(fn)


def test_requests_per_minute_spaces_calls_after_the_burst(clock: Clock) -> None:
    limiter = RateLimiter(requests_per_minute=2, clock=clock)

    async def main() -> None:
        for _ in range(4):
            await limiter.acquire()

    _run(main)
    # Two calls fit the first minute's budget; each later one waits for 1/2 minute of refill.
    assert clock.slept == [30.0, 30.0]


def test_tokens_per_minute_and_settling(clock: Clock) -> None:
    limiter = RateLimiter(tokens_per_minute=1000, clock=clock)

    async def main() -> None:
        await limiter.acquire(800)
        limiter.settle(800, 200)  # the call used less than estimated: 600 tokens come back
        await limiter.acquire(800)  # fits now (without settling it would wait 36 s)
        await limiter.acquire(5000)  # more than a minute's budget waits for a full bucket only
        limiter.settle(1000, 1500)  # used more than estimated: the bucket goes below zero
        await limiter.acquire(100)

    _run(main)
    assert clock.slept == [60.0, 36.0]


def test_a_pause_holds_every_caller(clock: Clock) -> None:
    limiter = RateLimiter(clock=clock, pause_seconds=3.0)
    limiter.pause(5.0)
    limiter.pause(1.0)  # a shorter pause never shortens the current one
    assert limiter.pauses == 1

    async def main() -> None:
        await limiter.acquire()
        limiter.pause(None)
        await limiter.acquire()

    _run(main)
    assert clock.slept == [5.0, 3.0]


def test_unlimited_never_waits(clock: Clock) -> None:
    limiter = RateLimiter(clock=clock)

    async def main() -> None:
        for _ in range(100):
            await limiter.acquire(10**9)

    _run(main)
    assert clock.slept == []


def test_rules_most_specific_first() -> None:
    config = RateLimitConfig(
        requests_per_minute=10,
        providers={
            "openai": RateLimitRule(requests_per_minute=20),
            "openai:gpt-4o": RateLimitRule(tokens_per_minute=30),
        },
    )
    assert rule_for(config, "openai", "gpt-4o").tokens_per_minute == 30
    assert rule_for(config, "openai", "gpt-4o-mini").requests_per_minute == 20
    assert rule_for(config, "anthropic", "x").requests_per_minute == 10


def test_estimate_counts_prompt_and_reply_budget() -> None:
    request = LLMRequest(
        messages=[ChatMessage("user", "x" * 400)], system=[SystemBlock("y" * 400)], max_tokens=50
    )
    assert estimate_tokens(request) == 250


class RateLimited(Exception):
    """Shaped like an SDK error: a status code and the HTTP response."""

    def __init__(self, retry_after: str | None) -> None:
        super().__init__("slow down")
        self.status_code = 429
        headers = {"retry-after": retry_after} if retry_after else {}
        self.response = httpx2.Response(429, headers=headers)


class FakeProvider:
    name = "fake"
    model = "m"
    supports_native_tools = True

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        self.closed = False

    async def complete(self, request: LLMRequest) -> LLMResult:
        if self.errors:
            raise self.errors.pop(0)
        return LLMResult("ok", usage=Usage(input=10, output=5))

    def should_retry(self, exc: BaseException) -> bool:
        return isinstance(exc, RateLimited)

    async def aclose(self) -> None:
        self.closed = True


def test_a_429_pauses_the_shared_limiter_by_retry_after(clock: Clock) -> None:
    inner = FakeProvider([RateLimited("7"), RateLimited(None), ValueError("boom")])
    wrapped = RateLimitedProvider(inner, RateLimiter(clock=clock, pause_seconds=2.0))
    request = LLMRequest(messages=[ChatMessage("user", "hi")])

    async def main() -> None:
        with pytest.raises(RateLimited):
            await wrapped.complete(request)
        assert wrapped.limiter.pause_until == clock.now + 7
        with pytest.raises(RateLimited):
            await wrapped.complete(request)  # waits out the 7 s, then no hint: pause_seconds
        with pytest.raises(ValueError, match="boom"):
            await wrapped.complete(request)  # not a 429: no pause
        assert (await wrapped.complete(request)).text == "ok"
        await wrapped.aclose()

    _run(main)
    assert clock.slept == [7.0, 2.0]
    assert wrapped.limiter.pauses == 2
    assert inner.closed
    assert wrapped.should_retry(RateLimited(None))
    assert not wrapped.should_retry(ValueError())


def test_the_wrapper_mirrors_the_provider() -> None:
    inner = FakeProvider([])
    wrapped = rate_limited(inner, RateLimitConfig(requests_per_minute=60))
    assert (wrapped.name, wrapped.model, wrapped.supports_native_tools) == ("fake", "m", True)
    wrapped.supports_native_tools = False  # auto tool mode switches it off mid-run
    assert inner.supports_native_tools is False
    assert wrapped.limiter.requests_per_minute == 60
