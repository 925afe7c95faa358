"""A batch restores a session exactly as `restore` does, whatever wraps the provider.

Batch (and nightly, which runs a batch) puts the provider behind wrappers `restore` does
not use; a wrapper that hid a capability of the provider (``reads_facts``) once made every
batch summary of the default provider empty while `restore` was right.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import opencode_restore.llm
from opencode_restore.cli import cli
from opencode_restore.config import RateLimitConfig
from opencode_restore.llm.base import Provider
from opencode_restore.llm.ratelimit import RateLimiter
from opencode_restore.llm.registry import get_provider

from .helpers import CLAUDE_3_TURNS, CountingServer, cli_env


def _outputs(tmp: Path, args: list[str]) -> tuple[str, dict[str, Any]]:
    """(markdown, JSON) of the batch and of restore for the same log and provider."""
    runner = CliRunner(env=cli_env(tmp / "batch-data"))
    done = runner.invoke(
        cli, ["batch", str(CLAUDE_3_TURNS), "--out", str(tmp / "out"), "-q", *args]
    )
    assert done.exit_code in (0, 1), done.output
    [md] = (tmp / "out").glob("*.md")
    [js] = (tmp / "out").glob("*.json")
    batch = md.read_text(encoding="utf-8"), orjson.loads(js.read_bytes())
    restored = []
    for fmt in ("markdown", "json"):
        # Each restore from scratch: a second one would resume from the first's timeline.
        runner = CliRunner(env=cli_env(tmp / f"restore-data-{fmt}"))
        result = runner.invoke(cli, ["restore", str(CLAUDE_3_TURNS), "-q", "--format", fmt, *args])
        assert result.exit_code == done.exit_code, result.output
        restored.append(result.stdout)
    as_json = orjson.loads(
        restored[1].replace(str(tmp / "restore-data-json"), str(tmp / "batch-data"))
    )
    assert batch[0] == restored[0]
    assert batch[1] == as_json
    return batch


@pytest.mark.usefixtures("scripted_enabled")
@pytest.mark.parametrize("model", ["offline", "scripted"])
def test_batch_output_is_restore_output(tmp_path: Path, model: str) -> None:
    md, js = _outputs(tmp_path, ["-m", model])
    assert "(no user request found in the log)" not in md
    if model == "offline":
        assert "[M1]" in js["summary"]["goal"]


def test_batch_offline_fallback_is_restore_offline_fallback(tmp_path: Path) -> None:
    # Every model call fails: turns are recorded as failed and the SESSION SUMMARY is the
    # offline fallback, built from facts the network provider was never sent.
    with CountingServer([{"status": 400}] * 200) as server:
        md, js = _outputs(
            tmp_path,
            ["-m", "openai:fake", "--base-url", server.openai_base_url, "--skip-evidence-search"],
        )
    assert "**Offline fallback:**" in md
    assert "(no user request found in the log)" not in md
    assert "[M1]" in js["summary"]["goal"]


def _wrappers() -> list[type[Any]]:
    """Every class of the llm package built around another provider (its first argument)."""
    found = []
    for info in pkgutil.iter_modules(opencode_restore.llm.__path__):
        module = importlib.import_module(f"opencode_restore.llm.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            params = list(inspect.signature(cls.__init__).parameters.values())[1:]
            if params and params[0].annotation in ("Provider", Provider):
                found.append(cls)
    return found


def _wrap(cls: type[Any], inner: Provider) -> Any:
    if cls.__name__ == "RateLimitedProvider":
        return cls(inner, RateLimiter.from_rule(RateLimitConfig(), 1.0))
    raise AssertionError(f"{cls.__name__}: a new provider wrapper; teach this test to build it")


def test_the_wrappers_are_found() -> None:
    assert [c.__name__ for c in _wrappers()] == ["RateLimitedProvider"]


@pytest.mark.parametrize("cls", _wrappers(), ids=lambda c: c.__name__)
@pytest.mark.usefixtures("scripted_enabled")
@pytest.mark.parametrize("spec", ["offline", "scripted"])
def test_a_wrapper_shows_every_attribute_of_its_provider(cls: type[Any], spec: str) -> None:
    inner = get_provider(spec)
    inner.future_capability = "x"  # type: ignore[attr-defined]
    wrapped = _wrap(cls, inner)
    for name in dir(inner):
        value = getattr(inner, name)
        if name.startswith("_") or callable(value):
            continue
        assert getattr(wrapped, name) == value, name
    assert wrapped.reads_facts is True
    wrapped.supports_native_tools = False  # tool_mode "auto" switches it off mid-run
    assert inner.supports_native_tools is False
