"""A client-side rate limit shared by every worker that calls one provider.

Two token buckets (requests and tokens per minute, each refilled continuously and
holding at most one minute's worth) and one shared "pause until" instant. Every
call waits for the pause and then for both buckets; a 429 from any worker moves
the pause forward by the server's ``retry-after`` (or ``pause_seconds``), so all
workers back off together instead of each one hammering the server on its own.

`RateLimitedProvider` wraps any provider, so the pipeline (and its one retry
policy in ``retry.call_with_retry``) needs no change: each attempt passes through
the limiter, and a retried attempt after a 429 waits for the shared pause.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from opencode_restore.config import RateLimitConfig, RateLimitRule
from opencode_restore.llm.base import LLMRequest, LLMResult, Provider
from opencode_restore.llm.registry import close_provider
from opencode_restore.llm.retry import error_status, retry_after_seconds

_CHARS_PER_TOKEN = 4
_MINUTE = 60.0


def estimate_tokens(request: LLMRequest) -> int:
    """A cheap upper-ish estimate of what a call costs against a tokens-per-minute limit.

    Providers count the requested ``max_tokens`` against the limit up front, so it is
    added to the prompt estimate (chars / 4).
    """
    chars = sum(len(b.text) for b in request.system)
    chars += sum(len(m.content) for m in request.messages)
    return math.ceil(chars / _CHARS_PER_TOKEN) + request.max_tokens


@dataclass(slots=True)
class _Bucket:
    per_minute: float
    level: float
    stamp: float

    def refill(self, now: float) -> None:
        rate = self.per_minute / _MINUTE
        self.level = min(self.per_minute, self.level + (now - self.stamp) * rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 when it already is)."""
        missing = amount - self.level
        return 0.0 if missing <= 0 else missing / (self.per_minute / _MINUTE)


@dataclass
class RateLimiter:
    """Shared limits for one provider; safe to use from many tasks of one event loop."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    pause_seconds: float = 2.0
    clock: Callable[[], float] = time.monotonic
    pause_until: float = 0.0
    pauses: int = 0
    _requests: _Bucket | None = field(default=None, init=False)
    _tokens: _Bucket | None = field(default=None, init=False)
    _lock: anyio.Lock = field(default_factory=anyio.Lock, init=False)

    def __post_init__(self) -> None:
        now = self.clock()
        if self.requests_per_minute:
            self._requests = _Bucket(self.requests_per_minute, self.requests_per_minute, now)
        if self.tokens_per_minute:
            self._tokens = _Bucket(self.tokens_per_minute, self.tokens_per_minute, now)

    @classmethod
    def from_rule(cls, rule: RateLimitRule, pause_seconds: float) -> RateLimiter:
        """The limiter a config rule describes."""
        return cls(rule.requests_per_minute, rule.tokens_per_minute, pause_seconds)

    async def acquire(self, tokens: int = 0) -> None:
        """Wait for the shared pause and for one request and ``tokens`` tokens of budget."""
        # The lock makes waiters queue in arrival order; the one at the head sleeps for
        # whatever it lacks while the others wait behind it.
        async with self._lock:
            while True:
                now = self.clock()
                delay = self.pause_until - now
                if delay <= 0:
                    delay = self._take(now, tokens)
                    if delay <= 0:
                        return
                await anyio.sleep(delay)

    def _take(self, now: float, tokens: int) -> float:
        wait = 0.0
        if self._requests is not None:
            self._requests.refill(now)
            wait = max(wait, self._requests.wait_for(1))
        if self._tokens is not None:
            self._tokens.refill(now)
            # A request bigger than a whole minute's budget would never fit: let it
            # through when the bucket is full rather than wait forever.
            wait = max(wait, self._tokens.wait_for(min(tokens, self._tokens.per_minute)))
        if wait > 0:
            return wait
        if self._requests is not None:
            self._requests.level -= 1
        if self._tokens is not None:
            self._tokens.level -= min(tokens, self._tokens.per_minute)
        return 0.0

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token bucket once the real usage of a call is known."""
        if self._tokens is not None and actual:
            self._tokens.level = min(
                self._tokens.per_minute, self._tokens.level + estimated - actual
            )

    def pause(self, seconds: float | None) -> None:
        """Make every caller wait ``seconds`` (default ``pause_seconds``) from now."""
        seconds = self.pause_seconds if seconds is None else seconds
        until = self.clock() + seconds
        if until > self.pause_until:
            self.pause_until = until
            self.pauses += 1


def rule_for(config: RateLimitConfig, provider: str, model: str) -> RateLimitRule:
    """The most specific rule: ``provider:model``, then ``provider``, then the defaults."""
    for key in (f"{provider}:{model}", provider):
        if key in config.providers:
            return config.providers[key]
    return config


class RateLimitedProvider:
    """A provider whose every call goes through a shared `RateLimiter`.

    Everything but ``complete`` and ``aclose`` is the inner provider's: attributes are
    read from it and written to it, so a capability the pipeline asks about
    (``reads_facts``, ``supports_native_tools``, one added later) cannot be lost by the
    wrapper. Losing ``reads_facts`` once made every batch summary empty.
    """

    inner: Provider
    limiter: RateLimiter
    _OWN = frozenset({"inner", "limiter"})

    def __init__(self, provider: Provider, limiter: RateLimiter) -> None:
        object.__setattr__(self, "inner", provider)
        object.__setattr__(self, "limiter", limiter)

    def __getattr__(self, name: str) -> Any:
        # Called only for names the wrapper does not define itself (and for its own two
        # before __init__ set them, as when unpickling: no recursion then).
        if name in self._OWN:
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # The inner provider may switch a capability off mid-run (tool_mode = "auto"
        # sets supports_native_tools); the switch must reach the object that calls.
        if name in self._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    async def complete(self, request: LLMRequest) -> LLMResult:
        """One call, after waiting for the shared budget; a 429 pauses every worker."""
        estimated = estimate_tokens(request)
        await self.limiter.acquire(estimated)
        try:
            result = await self.inner.complete(request)
        except Exception as exc:
            if error_status(exc) == 429:
                self.limiter.pause(retry_after_seconds(exc))
            raise
        usage = result.usage
        self.limiter.settle(estimated, usage.input + usage.output + usage.cache_read)
        return result

    async def aclose(self) -> None:
        """Close the inner provider's connections."""
        await close_provider(self.inner)


def rate_limited(provider: Provider, config: RateLimitConfig) -> RateLimitedProvider:
    """``provider`` behind a limiter built from the config's rule for it."""
    rule = rule_for(config, provider.name, provider.model)
    return RateLimitedProvider(provider, RateLimiter.from_rule(rule, config.pause_seconds))
