"""The `check` command: one tiny request with the parameters a restore would send.

The request carries what a turn-summary call carries (the model's output limit,
sampling and reasoning parameters, the prompt-cache key, the strict output schema)
plus the evidence-search tools, built by the same provider code a restore uses. What
the server refuses is corrected as in a restore (once per parameter) and the request
sent again, so the report ends with what a restore will send from then on. One line
per parameter: accepted, refused (with the server's message and the correction), or
unknown when the call failed for another reason.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from .. import event_loop
from ..config import load_config
from ..errors import ProviderError
from ..llm.base import ChatMessage, LLMRequest, LLMResult, SystemBlock, ToolsUnsupportedError
from ..llm.registry import close_provider, get_provider
from ..llm.retry import RetryPolicy, call_with_retry
from ..llm.sdk_provider import SDKProvider
from ..llm.settings import ProviderSettings
from ..pipeline.evidence.tools import TOOL_SPECS
from ..pipeline.schemas import TurnSummary
from .exits import friendly_errors
from .options import provider_options

# Parts of the body that are the conversation, not parameters to check.
_CONVERSATION = frozenset({"model", "messages", "system"})
_PROMPT = (
    "This is a connection check by opencode-restore. Fill in the turn summary for turn 1: "
    "the user asked to check the connection; you answered that it works."
)


@dataclass
class CheckReport:
    """The outcome of `check`: one line per parameter, then the reply."""

    lines: list[str] = field(default_factory=list)
    ok: bool = False


def _shown(key: str, value: Any) -> str:
    """A parameter's value, short enough for one line."""
    if key == "response_format" and isinstance(value, dict):
        spec = value.get("json_schema") or {}
        strict = " (strict)" if spec.get("strict") else ""
        return f"{value.get('type')} {spec.get('name', '')}{strict}".strip()
    if key == "tools" and isinstance(value, list):
        return f"{len(value)} tools"
    if key == "tool_choice" and isinstance(value, dict):
        return f"{value.get('type')} {value.get('name', '')}".strip()
    text = str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def check_request(max_tokens: int, temperature: float | None) -> LLMRequest:
    """The tiny request: a turn summary's parameters and the evidence tools."""
    return LLMRequest(
        messages=[ChatMessage("user", _PROMPT)],
        system=[SystemBlock("You summarize coding-agent sessions.", cache_breakpoint=True)],
        response_schema=TurnSummary,
        tools=list(TOOL_SPECS),
        max_tokens=max_tokens,
        temperature=temperature,
        template="check",
        stage="check",
        cache_key="opencode-restore-check",
    )


async def _call(
    provider: SDKProvider, request: LLMRequest, policy: RetryPolicy
) -> tuple[LLMResult | None, str, dict[str, Any]]:
    """Send the request (again without native tools if the server refuses them)."""
    tools_refused = ""
    try:
        return await call_with_retry(provider, request, policy), "", {}
    except ToolsUnsupportedError as exc:
        tools_refused = str(exc)
    except ProviderError as exc:
        return None, str(exc), {}
    try:
        result = await call_with_retry(provider, request, policy)
    except ProviderError as exc:
        return None, str(exc), {"tools": tools_refused}
    return result, "", {"tools": tools_refused}


async def run_check_async(
    provider: SDKProvider, request: LLMRequest, policy: RetryPolicy
) -> CheckReport:
    """Check `provider` with `request`; the report's lines, in order."""
    report = CheckReport()
    provider.notify = lambda _line: None  # the report says it, one line per parameter
    first = provider.params(request)
    result, error, other_refusals = await _call(provider, request, policy)
    final = provider.params(request)
    refused = {**provider.refused, **{k: v for k, v in other_refusals.items() if v}}
    rules = provider.rules
    room = f", {rules.reasoning_tokens} tokens of room to reason" if rules.reasoning_tokens else ""
    report.lines.append(f"{'model':<22} {provider.name}:{provider.model} ({rules.family}{room})")
    for key, value in first.items():
        if key in _CONVERSATION:
            continue
        if key in refused:
            action = provider.corrections.get(key, "the text tool protocol instead")
            report.lines.append(
                f"{key:<22} refused  {_shown(key, value)}: {refused[key]} -> {action}"
            )
        elif error:
            report.lines.append(f"{key:<22} unknown  {_shown(key, value)} (the call failed)")
        else:
            report.lines.append(f"{key:<22} accepted {_shown(key, value)}")
    for key in final.keys() - first.keys():
        if not error:
            report.lines.append(f"{key:<22} accepted {_shown(key, final[key])} (corrected)")
    if result is None:
        report.lines.append(f"{'reply':<22} FAILED   {error}")
        return report
    parsed = "parsed TurnSummary" if result.parsed is not None else "no valid TurnSummary"
    report.lines.append(
        f"{'reply':<22} ok       finish_reason={result.finish_reason}, {parsed}, "
        f"{result.usage.input + result.usage.cache_read} in / {result.usage.output} out tokens"
    )
    report.ok = True
    return report


def run_check(
    model: str | None, base_url: str | None, config_path: Path | None
) -> tuple[int, list[str]]:
    """The `check` command: (exit code, report lines)."""
    config = load_config(config_path, overrides={"llm": {"model": model, "base_url": base_url}})
    settings = ProviderSettings.from_config(config)
    provider = get_provider(config.llm.model, settings)
    if not isinstance(provider, SDKProvider):
        return 0, [f"{config.llm.model}: no server to check (it answers locally)"]
    request = check_request(config.llm.max_tokens, config.llm.temperature)
    policy = RetryPolicy.from_settings(settings)

    async def job() -> CheckReport:
        try:
            return await run_check_async(provider, request, policy)
        finally:
            await close_provider(provider)

    report = event_loop.run(job)
    return (0 if report.ok else 1), report.lines


@click.command()
@provider_options
@friendly_errors
def check(model: str | None, base_url: str | None, config_path: Path | None) -> None:
    """Send one tiny request with the parameters a restore would use; say what the server
    accepted or refused, one line each (exit 1 when the call fails)."""
    code, lines = run_check(model, base_url, config_path)
    for line in lines:
        click.echo(line)
    sys.exit(code)
