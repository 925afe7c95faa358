"""Choose a provider from a `"provider:model"` spec; SDK-backed modules load lazily."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from opencode_restore.errors import ConfigError
from opencode_restore.llm.base import Provider
from opencode_restore.llm.settings import ProviderSettings

if TYPE_CHECKING:
    import httpx2

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
PROVIDERS = ("openai", "anthropic", "offline")
#: The scripted provider answers from a script or fills schemas with placeholders: a test
#: double, accepted only when the test suite sets this variable, never offered to users.
SCRIPTED_VARIABLE = "OPENCODE_RESTORE_SCRIPTED_PROVIDER"
#: Bare model names by the provider that serves them (name pattern, provider, how to
#: reach it): a model given without its provider is answered with a suggestion.
_MODEL_NAMES = (
    # Open-weight models (gpt-oss too) are served by OpenAI-compatible local servers.
    (
        re.compile(
            r"(?:llama|qwen|qwq|mistral|mixtral|gemma|phi|deepseek|codellama|granite|smollm"
            r"|gpt-oss)",
            re.IGNORECASE,
        ),
        "openai",
        " with --base-url of its server (Ollama: http://127.0.0.1:11434/v1)",
    ),
    (re.compile(r"(?:gpt-|chatgpt-|o\d+(?:-|$)|ft:gpt-)", re.IGNORECASE), "openai", ""),
    (re.compile(r"claude-", re.IGNORECASE), "anthropic", ""),
)
#: Local servers named as if they were providers (``ollama:qwen3``): their usual URL.
_LOCAL_SERVERS = {
    "ollama": "http://127.0.0.1:11434/v1",
    "vllm": "http://127.0.0.1:8000/v1",
    "llama.cpp": "http://127.0.0.1:8080/v1",
    "llamacpp": "http://127.0.0.1:8080/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
}
# Local OpenAI-compatible servers ignore the key, but the SDK insists on one.
_LOCAL_DUMMY_KEY = "not-needed"


def _did_you_mean(spec: str) -> str | None:
    """The provider spec a bare model name (``gpt-4o``, ``claude-sonnet-4-5``, ``qwen3:8b``)
    or a local server's name (``ollama:qwen3``) most likely meant, with how to reach it;
    None when the name says nothing."""
    name = spec.strip()
    server, _, model = name.partition(":")
    if model and server.lower() in _LOCAL_SERVERS:
        return f"openai:{model} --base-url {_LOCAL_SERVERS[server.lower()]}"
    for pattern, kind, how in _MODEL_NAMES:
        if pattern.match(name):
            return f"{kind}:{name}{how}"
    return None


def parse_spec(spec: str) -> tuple[str, str]:
    """Split `"openai:gpt-5-mini"` into `("openai", "gpt-5-mini")`; the model may be empty."""
    kind, _, model = spec.strip().partition(":")
    kind = kind.lower()
    scripted = kind == "scripted" and os.environ.get(SCRIPTED_VARIABLE) == "1"
    if kind not in PROVIDERS and not scripted:
        choices = "openai:MODEL, anthropic:MODEL, offline"
        guess = _did_you_mean(spec)
        if guess is not None:
            raise ConfigError(
                f"unknown LLM provider {spec!r}: did you mean {guess}? (use one of {choices})"
            )
        raise ConfigError(f"unknown LLM provider {spec!r}: use one of {choices}")
    if kind in KEY_VARIABLES and not model:
        raise ConfigError(f"LLM provider {spec!r} needs a model, e.g. {kind}:MODEL")
    return kind, model


def api_key(kind: str, settings: ProviderSettings) -> str:
    """The API key from the environment; a missing key is a one-line ConfigError."""
    variable = KEY_VARIABLES[kind]
    key = os.environ.get(variable, "").strip()
    if key:
        return key
    if kind == "openai" and settings.base_url:
        return _LOCAL_DUMMY_KEY
    raise ConfigError(
        f"{kind} needs an API key: set {variable} in the environment (or use -m offline)"
    )


def get_provider(
    spec: str,
    settings: ProviderSettings | None = None,
    http_client: httpx2.AsyncClient | None = None,
) -> Provider:
    """Build the provider named by `spec` (`openai:MODEL`, `anthropic:MODEL`, `offline`;
    `scripted` in tests). `http_client` lets tests inject a transport under the real SDK."""
    settings = settings or ProviderSettings()
    kind, model = parse_spec(spec)
    if kind == "openai":
        from opencode_restore.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(model, settings, api_key(kind, settings), http_client)
    if kind == "anthropic":
        from opencode_restore.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(model, settings, api_key(kind, settings), http_client)
    if kind == "offline":
        from opencode_restore.llm.offline import OfflineProvider

        return OfflineProvider()
    from opencode_restore.llm.scripted import ScriptedProvider

    return ScriptedProvider(model=model or "scripted", auto=True)


async def close_provider(provider: Provider) -> None:
    """Release a provider's HTTP connections, if it holds any (network providers do).

    Unclosed pools are finalized after the event loop ends and then fail noisily.
    """
    aclose = getattr(provider, "aclose", None)
    if aclose is not None:
        await aclose()
