"""Provider specs, keys from the environment, lazy provider modules."""

from __future__ import annotations

import sys
import types

import pytest

from opencode_restore.errors import ConfigError
from opencode_restore.llm.anthropic_provider import AnthropicProvider
from opencode_restore.llm.openai_provider import OpenAIProvider
from opencode_restore.llm.registry import close_provider, get_provider, parse_spec
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.llm.settings import ProviderSettings


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai:gpt-5-mini", ("openai", "gpt-5-mini")),
        ("anthropic:claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
        ("OpenAI:qwen3:8b", ("openai", "qwen3:8b")),
        (" offline ", ("offline", "")),
    ],
)
def test_parse_spec(spec: str, expected: tuple[str, str]) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize("spec", ["gemini:pro", "", "gpt-4o"])
def test_unknown_provider(spec: str) -> None:
    with pytest.raises(ConfigError, match="unknown LLM provider"):
        parse_spec(spec)


@pytest.mark.parametrize(
    ("spec", "guess"),
    [
        ("gpt-4o", "openai:gpt-4o"),
        ("o3-mini", "openai:o3-mini"),
        ("o1", "openai:o1"),
        (" claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("qwen3:8b", "openai:qwen3:8b with --base-url of its server"),
        ("gpt-oss:20b", "openai:gpt-oss:20b with --base-url of its server"),
        ("ollama:qwen3:8b", "openai:qwen3:8b --base-url http://127.0.0.1:11434/v1"),
        ("LMStudio:gemma-3", "openai:gemma-3 --base-url http://127.0.0.1:1234/v1"),
    ],
)
def test_a_bare_model_name_gets_its_provider_suggested(spec: str, guess: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec(spec)
    assert f"unknown LLM provider {spec!r}: did you mean {guess}" in str(info.value)
    assert str(info.value).endswith("(use one of openai:MODEL, anthropic:MODEL, offline)")


@pytest.mark.parametrize("spec", ["gemini:pro", "ollama:", "o", "o3x"])
def test_no_suggestion_for_a_name_that_says_nothing(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec(spec)
    assert "did you mean" not in str(info.value)


def test_the_scripted_test_double_is_hidden_from_users() -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec("scripted")
    assert str(info.value) == (
        "unknown LLM provider 'scripted': use one of openai:MODEL, anthropic:MODEL, offline"
    )


@pytest.mark.usefixtures("scripted_enabled")
def test_the_test_suite_can_ask_for_the_scripted_provider() -> None:
    assert parse_spec("scripted") == ("scripted", "")


def test_model_is_required_for_network_providers() -> None:
    with pytest.raises(ConfigError, match=r"needs a model, e\.g\. anthropic:MODEL"):
        parse_spec("anthropic:")


def test_openai_and_anthropic_get_keys_from_the_environment() -> None:
    openai_provider = get_provider("openai:gpt-test")
    assert isinstance(openai_provider, OpenAIProvider)
    assert (openai_provider.name, openai_provider.model) == ("openai", "gpt-test")
    assert openai_provider.supports_native_tools is True
    anthropic_provider = get_provider("anthropic:claude-test", ProviderSettings(tool_mode="text"))
    assert isinstance(anthropic_provider, AnthropicProvider)
    assert anthropic_provider.supports_native_tools is False


@pytest.mark.parametrize(
    ("spec", "variable"),
    [("openai:gpt-test", "OPENAI_API_KEY"), ("anthropic:c", "ANTHROPIC_API_KEY")],
)
def test_missing_key_is_a_one_line_config_error(
    monkeypatch: pytest.MonkeyPatch, spec: str, variable: str
) -> None:
    monkeypatch.delenv(variable)
    with pytest.raises(ConfigError) as info:
        get_provider(spec)
    message = str(info.value)
    assert variable in message
    assert "\n" not in message


def test_blank_key_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "  ")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        get_provider("anthropic:c")


def test_local_openai_compatible_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    provider = get_provider(
        "openai:qwen3:8b", ProviderSettings(base_url="http://127.0.0.1:11434/v1")
    )
    assert provider.model == "qwen3:8b"


@pytest.mark.usefixtures("scripted_enabled")
def test_scripted_spec_answers_automatically() -> None:
    provider = get_provider("scripted:fake-model")
    assert isinstance(provider, ScriptedProvider)
    assert (provider.model, provider.auto) == ("fake-model", True)
    assert get_provider("scripted").model == "scripted"


def test_offline_is_imported_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeOffline:
        name = "offline"
        model = "rules"
        supports_native_tools = False

    module = types.ModuleType("opencode_restore.llm.offline")
    module.OfflineProvider = FakeOffline  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "opencode_restore.llm.offline", module)
    assert isinstance(get_provider("offline"), FakeOffline)


@pytest.mark.anyio
async def test_close_provider_ignores_providers_without_connections() -> None:
    provider = ScriptedProvider()
    await close_provider(provider)
    network = get_provider("anthropic:c")
    await close_provider(network)
    assert network.should_retry(ValueError("not an API error")) is False
