"""What the SDK-backed providers share: settings, one client per provider, closing it.

One provider object (so one SDK client and one connection pool) serves every worker
of a batch; the subclass says which SDK client class to build.

The SDKs' own HTTP stack (httpx2 over httpcore2 and h11) costs about 2 ms of CPU per
call, more than the whole pipeline around it; both SDKs ship an aiohttp transport
(their ``aiohttp`` extra) whose C parser cuts that by about 40%, so it is the default.
Tests inject an ``httpx2`` client with a mock transport instead.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx2

from opencode_restore.llm.retry import is_retryable_response
from opencode_restore.llm.settings import ProviderSettings


class SDKProvider:
    """Base of `OpenAIProvider` and `AnthropicProvider`; retries belong to `call_with_retry`."""

    name: str
    #: The SDK's async client class (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``).
    client_class: ClassVar[Any]
    #: The SDK's "no answer" and "error status" exception classes.
    connection_error: ClassVar[type[Exception]]
    #: Its instances carry the ``httpx2.Response`` as ``response``.
    status_error: ClassVar[type[Any]]
    #: The SDK's ``DefaultAioHttpClient`` (an ``httpx2.AsyncClient`` on aiohttp).
    aiohttp_client_class: ClassVar[type[httpx2.AsyncClient]]

    def __init__(
        self,
        model: str,
        settings: ProviderSettings,
        api_key: str,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.model = model
        self.settings = settings
        self.supports_native_tools = settings.tool_mode != "text"
        # max_retries=0: the SDK's own retries would multiply ours (call_with_retry).
        self._client = self.client_class(
            api_key=api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
            http_client=http_client or self.aiohttp_client_class(),
        )

    async def aclose(self) -> None:
        """Close the SDK client's connection pool (call before the event loop ends)."""
        await self._client.close()

    def should_retry(self, exc: BaseException) -> bool:
        """Timeouts, dropped connections, 408/409/429/5xx/529 (unless `x-should-retry` says no)."""
        if isinstance(exc, self.connection_error):
            return True
        if isinstance(exc, self.status_error):
            return is_retryable_response(exc.response)
        return False
