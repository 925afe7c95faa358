"""The `check` command: a few tiny requests with the parameters a restore would send.

The first request carries what a turn-summary call carries (the model's output limit,
sampling and reasoning parameters, the prompt-cache key, the strict output schema)
plus the evidence-search tools, built by the same provider code a restore uses. What
the server refuses is corrected as in a restore (once per parameter, structured output
walked down its ladder, tools moved to the text protocol) and the request sent again,
so the report ends with what a restore will send from then on. One line per parameter:
accepted, refused (with the server's message and the correction), or unknown when the
call failed for another reason. Then what was learned: how structured output is asked
for, and how tools are called, found by a probe that asks for a tool call (and, when the
server ignored the tools, one that names the tool in `tool_choice`: llama-cpp-python
calls tools only then).

Every probe is one attempt: a slow local server that times out is not asked three more
times. `check` learns afresh, ignoring what earlier runs learned about the server, and
keeps what it found for the next run. It exits 0 when the server answered in some mode
(a degraded mode is no failure), 1 when no call worked.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import click

from .. import event_loop
from ..config import load_config
from ..errors import ProviderError
from ..llm.base import ChatMessage, LLMRequest, LLMResult, SystemBlock, ToolsUnsupportedError
from ..llm.registry import close_provider, get_provider
from ..llm.retry import RetryPolicy, call_with_retry
from ..llm.sdk_provider import SDKProvider, shown_rung
from ..llm.server_profile import ServerProfile
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
#: The tool the tools probe asks for: it takes no arguments.
PROBE_TOOL = "LIST_ARTIFACTS"
_TOOL_PROMPT = (
    f"This is a connection check by opencode-restore. Call the {PROBE_TOOL} tool now, "
    "with no arguments."
)
#: Output tokens for the tools probe: a call without arguments is a few dozen.
_TOOL_PROBE_TOKENS = 256


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


def tool_request() -> LLMRequest:
    """The tools probe: the evidence tools offered, one call of `PROBE_TOOL` asked for."""
    return LLMRequest(
        messages=[ChatMessage("user", _TOOL_PROMPT)],
        system=[SystemBlock("You search coding-agent sessions with tools.")],
        tools=list(TOOL_SPECS),
        max_tokens=_TOOL_PROBE_TOKENS,
        template="check_tools",
        stage="check",
    )


async def _call(
    provider: SDKProvider, request: LLMRequest, policy: RetryPolicy
) -> tuple[LLMResult | None, ProviderError | None]:
    """Send the request (again without native tools if the server refuses or ignores them)."""
    try:
        return await call_with_retry(provider, request, policy), None
    except ToolsUnsupportedError:
        pass
    except ProviderError as exc:
        return None, exc
    try:
        return await call_with_retry(provider, request, policy), None
    except ProviderError as exc:
        return None, exc


def _parameter_lines(
    provider: SDKProvider,
    first: dict[str, Any],
    final: dict[str, Any],
    error: ProviderError | None,
) -> list[str]:
    """One line per parameter of the first request: accepted, refused, or unknown."""
    lines = []
    refused = provider.refused
    for key, value in first.items():
        if key in _CONVERSATION:
            continue
        if key in refused:
            action = provider.corrections.get(key, "the text tool protocol instead")
            lines.append(f"{key:<22} refused  {_shown(key, value)}: {refused[key]} -> {action}")
        elif error:
            lines.append(f"{key:<22} unknown  {_shown(key, value)} (the call failed)")
        else:
            lines.append(f"{key:<22} accepted {_shown(key, value)}")
    for key in final.keys() - first.keys():
        if not error:
            lines.append(f"{key:<22} accepted {_shown(key, final[key])} (corrected)")
    return lines


def _structured_line(provider: SDKProvider, answered: bool) -> str:
    """How structured output is asked for from now on, and why."""
    label = f"{'structured output':<22}"
    refusals = "; ".join(
        f"{shown_rung(refused)} refused: {message.strip()}"
        for refused, message in provider.structured_refusals.items()
    )
    if provider.settings.structured_output != "auto":
        why = "set by llm.structured_output"
    elif refusals:
        why = refusals
    elif not answered:
        return f"{label} unknown (the call failed)"
    else:
        why = ""
    return f"{label} {shown_rung(provider.structured_output)}" + (f" ({why})" if why else "")


async def _tools_line(
    provider: SDKProvider, policy: RetryPolicy, refused: str, skip: bool
) -> tuple[str, bool]:
    """How tools are called from now on: (the report line, whether a probe was answered)."""
    label = f"{'tool calls':<22}"
    if provider.settings.tool_mode == "text":
        return f"{label} text protocol (set by llm.tool_mode)", False
    if refused:
        return f"{label} text protocol (tools refused: {refused})", False
    if skip:
        return f"{label} unknown (the call failed)", False
    probe = tool_request()
    try:
        result = await call_with_retry(provider, probe, policy)
    except ToolsUnsupportedError:
        result = None
    except ProviderError as exc:
        return f"{label} unknown (the tools probe failed: {exc})", False
    if result is not None and provider.supports_native_tools:
        if result.tool_calls:
            called = ", ".join(call.name for call in result.tool_calls)
            return f"{label} native (the model called {called})", True
        return f"{label} native (accepted; the model called no tool)", True
    if result is not None:  # the model wrote its call in a text protocol
        return f"{label} text protocol (the model {provider.tools_given_up})", True
    # The server answered, only without a call: it works, with the text protocol.
    forced = await _forced_probe(provider, replace(probe, tool_choice=PROBE_TOOL), policy)
    return f"{label} text protocol (server ignored tools{forced})", True


async def _forced_probe(provider: SDKProvider, probe: LLMRequest, policy: RetryPolicy) -> str:
    """Whether a server that ignored the tools calls one it is told to: the reason's tail
    (empty when that probe failed). Tools stay in the text protocol either way: the
    evidence search lets the model choose."""
    provider.supports_native_tools = True
    try:
        result = await call_with_retry(provider, probe, policy)
    except ToolsUnsupportedError:
        return ", even when tool_choice named one"
    except ProviderError:
        return ""
    finally:
        provider.supports_native_tools = False
    if result.tool_calls:
        return " unless tool_choice names one"
    return ", even when tool_choice named one"


async def run_check_async(
    provider: SDKProvider, request: LLMRequest, policy: RetryPolicy
) -> CheckReport:
    """Check `provider` with `request`, then its tool calls; the report's lines, in order."""
    report = CheckReport()
    provider.notify = lambda _line: None  # the report says it, one line per parameter
    provider.relearn()
    first = provider.params(request)
    result, error = await _call(provider, request, policy)
    tools_refused = provider.refused.get("tools", "")
    final = provider.params(request)
    rules = provider.rules
    room = f", {rules.reasoning_tokens} tokens of room to reason" if rules.reasoning_tokens else ""
    report.lines.append(f"{'model':<22} {provider.name}:{provider.model} ({rules.family}{room})")
    report.lines += _parameter_lines(provider, first, final, error)
    if result is None:
        report.lines.append(f"{'reply':<22} FAILED   {error}")
    else:
        parsed = "parsed TurnSummary" if result.parsed is not None else "no valid TurnSummary"
        report.lines.append(
            f"{'reply':<22} ok       finish_reason={result.finish_reason}, {parsed}, "
            f"{result.usage.input + result.usage.cache_read} in / {result.usage.output} out tokens"
        )
        if provider.settings.structured_output == "auto" and "response_format" in first:
            # What check found to work replaces what earlier runs learned.
            provider.remember(ServerProfile(structured_output=provider.structured_output))
    if "response_format" in first or provider.structured_output == "text":
        # (Other providers ask for the structure their own way: Anthropic a forced tool.)
        report.lines.append(_structured_line(provider, result is not None))
    # No answer at all (connection, timeout): a second probe would only wait as long.
    unreachable = error is not None and error.status is None
    line, tools_ok = await _tools_line(provider, policy, tools_refused, unreachable)
    report.lines.append(line)
    report.ok = result is not None or tools_ok
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
    # One attempt per probe: the report says what failed instead of waiting out retries.
    policy = replace(RetryPolicy.from_settings(settings), max_attempts=1)

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
    """Send tiny requests with the parameters a restore would use; say what the server
    accepted or refused, one line each, and how structured output and tools will be asked
    for (exit 1 when no call worked)."""
    code, lines = run_check(model, base_url, config_path)
    for line in lines:
        click.echo(line)
    sys.exit(code)
