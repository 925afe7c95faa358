"""Proof that an unmocked SDK call fails inside the test run instead of reaching the network.

pytest-socket (`--disable-socket --allow-hosts=127.0.0.1,...` in pyproject) blocks every
connection to a non-loopback host. This matters here: the sandbox has a transparent
proxy, so without the guard a TLS handshake to an arbitrary address does happen.
"""

from __future__ import annotations

import pytest
import pytest_socket

from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import ChatMessage, LLMRequest
from opencode_restore.llm.registry import close_provider, get_provider
from opencode_restore.llm.retry import RetryPolicy, call_with_retry
from opencode_restore.llm.settings import ProviderSettings

pytestmark = pytest.mark.anyio


def blocked_in_chain(exc: BaseException | None) -> bool:
    """True when pytest-socket's error is anywhere in the cause/context chain or groups."""
    while exc is not None:
        if isinstance(
            exc, pytest_socket.SocketBlockedError | pytest_socket.SocketConnectBlockedError
        ):
            return True
        if isinstance(exc, BaseExceptionGroup) and any(
            blocked_in_chain(inner) for inner in exc.exceptions
        ):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@pytest.mark.parametrize(
    ("spec", "base_url"),
    [
        ("openai:gpt-test", "https://203.0.113.7/v1"),  # TEST-NET-3
        ("anthropic:claude-test", "https://203.0.113.7"),
        ("openai:gpt-test", "http://198.51.100.9:8000/v1"),  # TEST-NET-2, plain HTTP
    ],
)
async def test_unmocked_sdk_call_is_blocked(spec: str, base_url: str) -> None:
    provider = get_provider(spec, ProviderSettings(base_url=base_url, timeout=5))
    request = LLMRequest(messages=[ChatMessage("user", "hello")])
    try:
        with (
            pytest.warns(UserWarning, match=r"socket\.socket\.connect\(\) with host"),
            # Depending on the transport the refusal arrives wrapped as a connection error
            # (-> ProviderError), as anyio's ExceptionGroup, or as pytest-socket's own
            # error. Either way nothing leaves the machine.
            pytest.raises(
                (ProviderError, ExceptionGroup, pytest_socket.SocketConnectBlockedError)
            ) as info,
        ):
            await call_with_retry(provider, request, RetryPolicy(max_attempts=1))
    finally:
        await close_provider(provider)
    assert blocked_in_chain(info.value)


async def test_loopback_stays_allowed() -> None:
    # The guard is not simply "no sockets": a refused loopback port gives an ordinary
    # connection error, which is what lets the fake server tests run.
    provider = get_provider("openai:m", ProviderSettings(base_url="http://127.0.0.1:9/v1"))
    request = LLMRequest(messages=[ChatMessage("user", "hi")])
    try:
        with pytest.raises(ProviderError, match=r"connection refused by 127\.0\.0\.1:9 ") as info:
            await call_with_retry(provider, request, RetryPolicy(max_attempts=1))
    finally:
        await close_provider(provider)
    assert not blocked_in_chain(info.value)
