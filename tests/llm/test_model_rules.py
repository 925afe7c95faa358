"""The model family table, config rows over it, and the output limit it implies."""

from __future__ import annotations

from pathlib import Path

import pytest

from opencode_restore.config import ModelRule, load_config
from opencode_restore.errors import ConfigError
from opencode_restore.llm.model_rules import model_params, output_limit
from opencode_restore.llm.registry import get_provider
from opencode_restore.llm.sdk_provider import SDKProvider
from opencode_restore.llm.settings import ProviderSettings


@pytest.mark.parametrize(
    "model", ["o4-mini", "o3", "o1-preview", "gpt-5.1", "gpt-5-mini", "openai/gpt-5.1-codex"]
)
def test_openai_reasoning_models_get_no_sampling_and_max_completion_tokens(model: str) -> None:
    params = model_params("openai", model)
    assert not params.sampling
    assert params.limit_param == "max_completion_tokens"
    assert params.reasoning_tokens == 8192
    assert params.reasoning_effort is None  # only from config


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1-mini", "llama3.1:8b", "claude-sonnet-4-5"])
def test_chat_models_keep_the_classic_parameters(model: str) -> None:
    params = model_params("openai", model)
    assert params.sampling
    assert params.limit_param is None
    assert params.reasoning_tokens == 0
    assert params.reasoning_effort is None


def test_configured_effort_reaches_reasoning_models_only_and_sizes_the_room() -> None:
    assert model_params("openai", "gpt-5.1", reasoning_effort="low").reasoning_effort == "low"
    assert model_params("openai", "gpt-5.1", reasoning_effort="low").reasoning_tokens == 4096
    assert model_params("openai", "gpt-4o", reasoning_effort="low").reasoning_effort is None


def test_local_reasoning_models_keep_sampling_but_get_room_to_think() -> None:
    params = model_params("openai", "deepseek-r1:14b")
    assert params.sampling
    assert params.limit_param is None
    assert params.reasoning_tokens > 0


def test_config_rows_override_the_table_most_specific_last() -> None:
    table = {
        "acme-*": ModelRule(reasoning=True),
        "openai:acme-think-2": ModelRule(reasoning_tokens=100, reasoning_effort="high"),
    }
    unknown = model_params("openai", "acme-think-2", table=table)
    assert (unknown.sampling, unknown.limit_param) == (False, "max_completion_tokens")
    assert (unknown.reasoning_tokens, unknown.reasoning_effort) == (100, "high")
    assert "config" in unknown.family
    # A row can also give a known reasoning model its sampling back.
    tuned = model_params("openai", "o4-mini", table={"o4-*": ModelRule(sampling=True)})
    assert tuned.sampling
    assert model_params("anthropic", "acme-think-2", table=table).reasoning_effort is None


def test_output_limit_adds_room_and_doubles_within_the_ceiling() -> None:
    params = model_params("openai", "o4-mini")
    assert output_limit(2048, params, 0, 32768) == 2048 + 8192
    assert output_limit(2048, params, 1, 32768) == 2 * (2048 + 8192)
    assert output_limit(2048, params, 3, 32768) == 32768
    # A first limit above the ceiling is never lowered.
    assert output_limit(40000, model_params("openai", "gpt-4o"), 2, 32768) == 40000


def test_config_file_rows_reach_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    user = tmp_path / "config.toml"
    user.write_text(
        '[llm]\nreasoning_effort = "minimal"\n[llm.models."acme-*"]\nreasoning = true\n',
        encoding="utf-8",
    )
    config = load_config(user, env={})
    provider = get_provider("openai:acme-think", ProviderSettings.from_config(config))
    assert isinstance(provider, SDKProvider)
    assert provider.rules.reasoning_effort == "minimal"
    assert provider.rules.limit_param == "max_completion_tokens"
    bad = tmp_path / "bad.toml"
    bad.write_text('[llm.models."x"]\nreasoning_effort = "extreme"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"llm\.models\.x\.reasoning_effort"):
        load_config(bad, env={})
