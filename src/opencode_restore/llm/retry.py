"""The one retry policy for every LLM call.

SDK clients are built with `max_retries=0`, so this module is the only layer that
retries: transient failures (408, 409, 429, 5xx, timeouts, dropped connections, as
judged by `provider.should_retry`) are retried with jittered exponential backoff,
and a server's `retry-after-ms` / `retry-after` hint wins when present (capped).
Whatever still fails leaves as `errors.ProviderError` carrying the server's message.

Against a local server (`RetryPolicy.local`) a read timeout is not retried: the server
is still computing the answer it was asked for (a small CPU box writes a token a
second), and asking again only queues the same work behind it. A refused or reset
connection is still retried: the server is starting or restarting.

A request too long for the model's context window can be made to fit once
(`RetryPolicy.refit`, given the overflow the server reported); each answered call's
output tokens and seconds go to `RetryPolicy.speed`.

httpx2 is imported by the functions that look at a failure, not with the module: the
offline provider has none, and its restore does without the HTTP stack (2 MB of every
restore's memory, bench/scale.py).
"""

from __future__ import annotations

import email.utils
import errno
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity import wait_exponential_jitter as _wait_exponential_jitter

from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import LLMRequest, LLMResult, Provider
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.llm.speed import SpeedLog
from opencode_restore.llm.usage import UsageLedger
from opencode_restore.llm.window import Overflow, parse_overflow

if TYPE_CHECKING:
    import httpx2

RETRYABLE_STATUS = frozenset({408, 409, 429})
#: Said after a local server's read timeout, which is not retried.
LOCAL_TIMEOUT_HINT = (
    "(the local server did not answer within llm.timeout and was not asked again: it may "
    "still be computing; a slow model needs a longer llm.timeout)"
)

#: Given the request the server found too long and what it said, the request to send
#: instead, or None when it cannot be made shorter.
Refit = Callable[[LLMRequest, Overflow], Awaitable[LLMRequest | None]]


def _call_failures() -> tuple[type[BaseException], ...]:
    """Failures that mean "the call did not work", as opposed to bugs in our own code,
    which must keep their traceback instead of becoming a ProviderError.

    An SDK's errors can only occur once its provider imported it, so the SDKs are not
    imported here (importing both costs about a second of start-up).
    """
    import httpx2

    found: list[type[BaseException]] = [httpx2.HTTPError, OSError]
    for name in ("openai", "anthropic"):
        module = sys.modules.get(name)
        if module is not None:
            found.append(module.APIError)
    return tuple(found)


def is_retryable_response(response: httpx2.Response) -> bool:
    """Decide from an error response; the server's `x-should-retry` header wins."""
    hint = response.headers.get("x-should-retry", "").lower()
    if hint in ("true", "false"):
        return hint == "true"
    return response.status_code in RETRYABLE_STATUS or response.status_code >= 500


def is_read_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a timeout waiting for an answer, not a failure to connect.

    The SDKs raise one "Request timed out." for both (the aiohttp transport even for a
    refused port); the exception chain underneath tells: a refused or reset connection
    (``ConnectionError``) or an ``httpx2.ConnectTimeout`` never reached a busy server.
    """
    import httpx2

    timed_out = False
    for seen in _chain(exc):
        if isinstance(seen, ConnectionError | httpx2.ConnectTimeout | httpx2.ConnectError):
            return False
        if isinstance(seen, TimeoutError | httpx2.TimeoutException) or (
            type(seen).__name__ == "APITimeoutError"
        ):
            timed_out = True
    return timed_out


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions under it (its cause, else its context), outermost first."""
    seen: BaseException | None = exc
    for _ in range(32):  # a chain is short; the bound only guards against a cycle
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


def _refused_address(exc: BaseException) -> str | None:
    """``host:port`` (or "the server" when no request names it) when ``exc`` is a
    connection the server refused; None for any other failure."""
    import httpx2

    chain = list(_chain(exc))
    if not any(
        isinstance(e, ConnectionRefusedError)
        or (isinstance(e, OSError) and e.errno == errno.ECONNREFUSED)
        for e in chain
    ):
        return None
    for e in chain:
        try:
            request = getattr(e, "request", None)
        except RuntimeError:  # httpx2's errors raise it when made without a request
            continue
        if isinstance(request, httpx2.Request):
            url = request.url
            port = url.port or {"http": 80, "https": 443}.get(url.scheme)
            host = f"[{url.host}]" if ":" in url.host else url.host
            return f"{host}:{port}" if port else host
    return "the server"


def retry_after_seconds(exc: BaseException, now: float | None = None) -> float | None:
    """The delay a server asked for in `retry-after-ms` or `retry-after`, if any."""
    import httpx2

    response = getattr(exc, "response", None)
    if not isinstance(response, httpx2.Response):
        return None
    headers = response.headers
    try:
        return max(0.0, float(headers["retry-after-ms"]) / 1000)
    except (KeyError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def error_message(exc: BaseException) -> str:
    """The provider's own error text (the JSON `error.message`), else the exception text,
    with the socket error under it when there is one."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    where = _refused_address(exc)
    if where is not None:
        # The aiohttp transport calls a refused port "Request timed out." and even an
        # http:// URL "ssl:default": say what happened, and where.
        return f"connection refused by {where} (is a server running there? check the base URL)"
    message = str(exc) or type(exc).__name__
    # The SDKs say only "Connection error." or (aiohttp transport, even for a refused
    # port) "Request timed out."; the OSError underneath is what tells a user which.
    cause = exc.__cause__
    while cause is not None and not isinstance(cause, OSError):
        cause = cause.__cause__
    if cause is not None and str(cause) not in message:
        return f"{message} ({cause})"
    return message


def error_status(exc: BaseException) -> int | None:
    """The HTTP status of a failed call, when there was a response."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Attempts and waits; `sleep` is injectable so tests never really wait.

    `local`: the server is on this machine or a private network, so a read timeout is
    not retried. `refit`: makes a request the server found too long fit (once per call).
    `speed`: where each answered call's output tokens and seconds are recorded.
    """

    max_attempts: int = 4
    multiplier: float = 0.5
    max_wait: float = 8.0
    retry_after_cap: float = 60.0
    sleep: Callable[[float], Awaitable[Any]] = field(default=anyio.sleep)
    local: bool = False
    refit: Refit | None = None
    speed: SpeedLog | None = None
    clock: Callable[[], float] = field(default=time.monotonic)

    @classmethod
    def from_settings(cls, settings: ProviderSettings) -> RetryPolicy:
        """The policy described by a provider's settings."""
        return cls(
            max_attempts=settings.max_attempts,
            multiplier=settings.retry_multiplier,
            max_wait=settings.retry_max_wait,
            retry_after_cap=settings.retry_after_cap,
            local=settings.local,
        )

    def should_retry(self, provider: Provider, exc: BaseException) -> bool:
        """Whether to try ``exc``'s call again: transient for the provider, and not a
        read timeout of a local server (it is still working on the same request)."""
        if not provider.should_retry(exc):
            return False
        return not (self.local and is_read_timeout(exc))

    def wait(self, state: RetryCallState) -> float:
        """Seconds to wait before the next attempt."""
        exc = state.outcome.exception() if state.outcome is not None else None
        hinted = retry_after_seconds(exc) if exc is not None else None
        if hinted is not None:
            return min(hinted, self.retry_after_cap)
        # Jitter proportional to the base delay keeps tiny test policies tiny.
        backoff = _wait_exponential_jitter(
            multiplier=self.multiplier, max=self.max_wait, jitter=self.multiplier
        )
        return backoff(state)


async def call_with_retry(
    provider: Provider,
    request: LLMRequest,
    policy: RetryPolicy | None = None,
    ledger: UsageLedger | None = None,
) -> LLMResult:
    """Run `provider.complete(request)` under the retry policy and record the outcome.

    Returns the result with `attempts` set. Raises `ProviderError` when the call
    fails for good; errors that are not call failures (bugs) propagate unchanged.
    A context overflow is answered once by `policy.refit`'s shorter request (the
    overflowed call is recorded as a failed one).
    """
    policy = policy or RetryPolicy()
    try:
        return await _call(provider, request, policy, ledger)
    except ProviderError as exc:
        if policy.refit is None:
            raise
        overflow = parse_overflow(exc.__cause__ or exc)
        if overflow is None:
            raise
        shorter = await policy.refit(request, overflow)
        if shorter is None:
            raise
    return await _call(provider, shorter, policy, ledger)


async def _call(
    provider: Provider, request: LLMRequest, policy: RetryPolicy, ledger: UsageLedger | None
) -> LLMResult:
    attempts = 0
    started = policy.clock()

    async def attempt() -> LLMResult:
        nonlocal attempts, started
        attempts += 1
        started = policy.clock()
        return await provider.complete(request)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=policy.wait,
        retry=retry_if_exception(lambda exc: policy.should_retry(provider, exc)),
        sleep=policy.sleep,
        reraise=True,
    )
    try:
        result: LLMResult = await retrying(attempt)
    except ProviderError as exc:
        _record(ledger, provider, request, None, attempts, str(exc))
        raise
    except Exception as exc:
        if not (isinstance(exc, _call_failures()) or provider.should_retry(exc)):
            raise
        message = error_message(exc)
        if policy.local and is_read_timeout(exc):
            message += f" {LOCAL_TIMEOUT_HINT}"
        error = ProviderError(provider.name, provider.model, message, error_status(exc))
        _record(ledger, provider, request, None, attempts, str(error))
        raise error from exc
    finally:
        # tenacity keeps its next steps as bound methods of the retrying object: a cycle
        # that held the request and the policy (whose refit holds the restore's window)
        # until a full garbage collection, every call of a long restore. Emptied, they
        # are freed as this returns.
        retrying.iter_state.reset()
    if policy.speed is not None:
        policy.speed.observe(result.usage.output, policy.clock() - started, result.wait_seconds)
    result.attempts = attempts
    _record(ledger, provider, request, result, attempts, None)
    return result


def _record(
    ledger: UsageLedger | None,
    provider: Provider,
    request: LLMRequest,
    result: LLMResult | None,
    attempts: int,
    error: str | None,
) -> None:
    if ledger is None:
        return
    ledger.record(
        stage=request.stage,
        template=request.template,
        provider=provider.name,
        model=result.model if result is not None and result.model else provider.model,
        usage=result.usage if result is not None else None,
        attempts=attempts,
        error=error,
    )
