"""Post-processing passes of the timeline builder: utility agents and agent results.

A *utility* agent is an internal helper call that is not part of the agent's own
trajectory (a title extractor, a safety checker, a cache-priming warmup). The rules
follow inspect_ai's ``timeline_build``:

* a warmup call (``max_tokens == 1`` and a one-word user message) is always wrapped
  in a synthetic ``utility-<uuid>`` span;
* inside a span that runs a tool-calling loop, a direct model call with a different
  system prompt and no tool calls of its own is wrapped the same way;
* a child agent span is utility when its parent runs a tool-calling loop, its system
  prompt differs from the parent's, and it has a single turn (one model call, or two
  with a tool call between them).

System prompts are compared after dropping Claude Code's varying
``x-anthropic-billing-header:`` line; a prompt that is empty after that counts as none.
"""

from __future__ import annotations

from typing import Any

from ...model import TimelineEvent, TimelineSpan

#: Raw Inspect event dicts by ``id()`` of the TimelineEvent built from them.
RawEvents = dict[int, dict[str, Any]]

_BILLING_HEADER = "x-anthropic-billing-header:"


def _model_events(span: TimelineSpan) -> list[TimelineEvent]:
    return [e for e in span.events() if e.kind == "model" and e.model is not None]


def system_prompt(event: TimelineEvent) -> str | None:
    """The normalized system prompt of a model event, or None when it has none."""
    if event.model is None:
        return None
    texts = [m.text for m in event.model.input if m.role == "system" and m.type == "text"]
    if not texts:
        return None
    lines = "\n".join(texts).splitlines()
    kept = [line for line in lines if not line.startswith(_BILLING_HEADER)]
    return "\n".join(kept).strip() or None


def _calls_tools(event: TimelineEvent) -> bool:
    return event.model is not None and any(m.type == "tool_use" for m in event.model.output)


def has_tool_loop(span: TimelineSpan) -> bool:
    """True when the span's own events show a tool-calling loop."""
    return any(e.kind == "tool" or _calls_tools(e) for e in span.events())


def primary_prompt(span: TimelineSpan) -> str | None:
    """The system prompt of the span's main trajectory (its first tool-calling turn)."""
    models = _model_events(span)
    calling = [e for e in models if _calls_tools(e)]
    first = calling or models
    return system_prompt(first[0]) if first else None


def _is_warmup(event: TimelineEvent, raw: RawEvents) -> bool:
    config = raw.get(id(event), {}).get("config")
    if not isinstance(config, dict) or config.get("max_tokens") != 1 or event.model is None:
        return False
    users = [m for m in event.model.input if m.role == "user" and m.type == "text"]
    return bool(users) and len(users[-1].text.split()) == 1


def _is_synthetic(span: TimelineSpan) -> bool:
    return bool(span.meta.get("synthetic"))


def wrap_utility_calls(span: TimelineSpan, raw: RawEvents) -> None:
    """Wrap warmups and off-trajectory model calls in synthetic utility spans.

    Recurses into child spans and branches, never into a synthetic wrapper.
    """
    loop = has_tool_loop(span)
    primary = primary_prompt(span) if loop else None
    content: list[TimelineEvent | TimelineSpan] = []
    for item in span.content:
        if isinstance(item, TimelineEvent) and item.kind == "model":
            prompt = system_prompt(item)
            off_trajectory = (
                loop
                and primary is not None
                and prompt is not None
                and prompt != primary
                and not _calls_tools(item)
            )
            if off_trajectory or _is_warmup(item, raw):
                item = TimelineSpan(
                    id=f"utility-{item.uuid}",
                    name="utility",
                    span_type="agent",
                    content=[item],
                    utility=True,
                    meta={"source": "utility", "synthetic": True},
                )
        content.append(item)
    span.content = content
    for child in [*span.spans(), *span.branches]:
        if not _is_synthetic(child):
            wrap_utility_calls(child, raw)


def _is_single_turn(span: TimelineSpan) -> bool:
    kinds = [e.kind for e in span.events() if e.kind in ("model", "tool")]
    models = [i for i, k in enumerate(kinds) if k == "model"]
    if len(models) == 1:
        return True
    return len(models) == 2 and "tool" in kinds[models[0] + 1 : models[1]]


def classify_utility_agents(
    span: TimelineSpan, parent_prompt: str | None = None, parent_loop: bool = False
) -> None:
    """Mark child agent spans that are single-turn helpers of a tool-calling parent."""
    own = primary_prompt(span)
    if (
        parent_loop
        and parent_prompt is not None
        and own is not None
        and own != parent_prompt
        and _is_single_turn(span)
    ):
        span.utility = True
    prompt = own or parent_prompt
    loop = has_tool_loop(span)
    for child in span.spans():
        if not _is_synthetic(child):
            classify_utility_agents(child, prompt, loop)
    for branch in span.branches:
        for child in branch.spans():
            if not _is_synthetic(child):
                classify_utility_agents(child, primary_prompt(branch) or prompt, loop)


def _tool_result(after: list[TimelineEvent | TimelineSpan], call_id: str) -> str | None:
    """The text of the first tool message answering ``call_id`` in a later model input."""
    for event in after:
        if not isinstance(event, TimelineEvent) or event.model is None:
            continue
        for msg in event.model.input:
            if msg.type == "tool_result" and msg.tool_call_id == call_id:
                return msg.text
    return None


def attach_agent_results(span: TimelineSpan) -> None:
    """Record a bridge sub-agent's result from a later model input of its parent.

    A bridge agent span is named ``agent-<tool_call_id>``; its result is the tool
    message answering that call in the first later model call that carries it. Other
    model calls may come first (a title helper, another turn), as upstream allows.
    """
    for i, item in enumerate(span.content):
        if not isinstance(item, TimelineSpan):
            continue
        attach_agent_results(item)
        if not item.id.startswith("agent-") or "agent_result" in item.meta:
            continue
        result = _tool_result(span.content[i + 1 :], item.id.removeprefix("agent-"))
        if result is not None:
            item.meta["agent_result"] = result
    for branch in span.branches:
        attach_agent_results(branch)
