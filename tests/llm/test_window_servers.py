"""The window as each local server fake (tests/fakes/local_servers.py) says it, and the
overflow errors each answers, read through the real OpenAI SDK over HTTP on 127.0.0.1."""

from __future__ import annotations

import httpx2
import pytest

from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import ChatMessage, LLMRequest
from opencode_restore.llm.openai_provider import OpenAIProvider
from opencode_restore.llm.retry import RetryPolicy, call_with_retry
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.llm.window import discover_window, parse_overflow
from tests.fakes.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("profile", "model", "expected"),
    [
        ("vllm", "smollm2", 3000),
        ("llama_cpp", "smollm2", 3000),
        ("ollama", "smollm2", 3000),
        ("ollama", "smollm2:latest", 3000),
        ("llama_cpp_python", "smollm2", None),  # says no window anywhere
    ],
)
async def test_each_server_says_its_window(profile: str, model: str, expected: int | None) -> None:
    with FakeLLMServer(profile=profile, context_window=3000) as server:
        async with httpx2.AsyncClient() as client:
            found = await discover_window(server.openai_base_url, model, client)
    assert found == expected


@pytest.mark.parametrize(
    ("profile", "window"), [("llama_cpp_python", 2048), ("llama_cpp", 2048), ("vllm", 2048)]
)
async def test_each_server_overflow_names_the_window(profile: str, window: int) -> None:
    request = LLMRequest(messages=[ChatMessage("user", "word " * 4000)], max_tokens=256)
    with FakeLLMServer(profile=profile, context_window=window) as server:
        settings = ProviderSettings(base_url=server.openai_base_url, structured_output="text")
        provider = OpenAIProvider("smollm2", settings, "k", http_client=httpx2.AsyncClient())
        try:
            with pytest.raises(ProviderError) as info:
                await call_with_retry(provider, request, RetryPolicy(max_attempts=1))
        finally:
            await provider.aclose()
    overflow = parse_overflow(info.value.__cause__ or info.value)
    assert overflow is not None
    assert overflow.window == window
    assert overflow.requested is not None
    assert overflow.requested > window - 256
