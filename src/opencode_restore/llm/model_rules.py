"""Which request parameters a model takes, by model family, overridable in config.

OpenAI's reasoning models (the o-series and the gpt-5 family) answer 400 to any
`temperature`/`top_p` but the default, refuse `max_tokens` (they want
`max_completion_tokens`, also behind OpenAI-compatible gateways), and count their
hidden reasoning tokens against that limit: a limit sized for the answer alone comes
back empty with `finish_reason: "length"`. Open-weight reasoning models served locally
(DeepSeek-R1, QwQ, gpt-oss, ...) take the usual parameters but also think inside the
limit. Everything else keeps the classic parameters.

The table only saves a refused first request: a model it does not know is corrected
from the server's own 400 (see `refusals`), and `[llm.models."PATTERN"]` in config
sets the rules of a name outright.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from ..config import Effort, LimitParam, ModelRule

# Room for hidden reasoning on top of the answer's own limit, by reasoning effort
# (OpenAI advises reserving about 25,000 tokens at first; a summary of one turn needs
# far less, and a cut-off answer is retried with a doubled limit anyway).
REASONING_TOKENS: dict[str | None, int] = {
    "none": 0,
    "minimal": 1024,
    "low": 4096,
    None: 8192,  # the server's default effort (medium)
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}


@dataclass(frozen=True, slots=True)
class ModelParams:
    """The resolved rules for one model: what a request to it carries."""

    family: str
    sampling: bool
    #: None: `max_completion_tokens` at api.openai.com, `max_tokens` at other servers.
    limit_param: LimitParam | None
    reasoning_effort: Effort | None
    reasoning_tokens: int


# (name pattern, family, rule). Matched against the model name without a gateway's
# "vendor/" prefix (OpenRouter's "openai/o4-mini", Azure deployments named like models).
FAMILIES: tuple[tuple[re.Pattern[str], str, ModelRule], ...] = (
    (re.compile(r"o\d"), "OpenAI o-series", ModelRule(reasoning=True)),
    (re.compile(r"gpt-5"), "OpenAI gpt-5 family", ModelRule(reasoning=True)),
    (
        re.compile(r"deepseek-r1|qwq|gpt-oss|magistral|phi-?4-(?:mini-)?reasoning"),
        "open-weight reasoning model",
        ModelRule(sampling=True, reasoning_tokens=REASONING_TOKENS[None]),
    ),
)
CLASSIC = ModelRule(reasoning=False)


def family_rule(model: str) -> tuple[str, ModelRule]:
    """The family of `model` in the table, or ("chat model", classic rules)."""
    name = model.rsplit("/", 1)[-1].lower()
    for pattern, family, rule in FAMILIES:
        if pattern.match(name):
            return family, rule
    return "chat model", CLASSIC


def config_rules(provider: str, model: str, table: dict[str, ModelRule]) -> list[ModelRule]:
    """The `[llm.models]` rows whose pattern matches, least specific (shortest) first.

    A pattern is an fnmatch glob against the model name or `provider:model`.
    """
    names = (model.lower(), f"{provider}:{model}".lower())
    hits = [
        (len(pattern), rule)
        for pattern, rule in table.items()
        if any(fnmatch.fnmatchcase(name, pattern.lower()) for name in names)
    ]
    return [rule for _, rule in sorted(hits, key=lambda hit: hit[0])]


def model_params(
    provider: str,
    model: str,
    *,
    table: dict[str, ModelRule] | None = None,
    reasoning_effort: Effort | None = None,
) -> ModelParams:
    """Resolve the parameters for `provider:model`: family table, then config rows.

    `reasoning_effort` is the `[llm]` default, used for reasoning models only.
    """
    family, base = family_rule(model)
    rows = [base, *config_rules(provider, model, table or {})]
    merged: dict[str, object] = {}
    for row in rows:
        merged.update(row.model_dump(exclude_none=True))
    rule = ModelRule.model_validate(merged)
    if len(rows) > 1:
        family = f"{family}, with config rules"
    reasoning = bool(rule.reasoning)
    effort = rule.reasoning_effort or (reasoning_effort if reasoning else None)
    room = rule.reasoning_tokens
    if room is None:
        room = REASONING_TOKENS.get(effort, REASONING_TOKENS[None]) if reasoning else 0
    return ModelParams(
        family=family,
        sampling=rule.sampling if rule.sampling is not None else not reasoning,
        limit_param=rule.limit_param or ("max_completion_tokens" if reasoning else None),
        reasoning_effort=effort,
        reasoning_tokens=room,
    )


def output_limit(answer: int, params: ModelParams, boost: int, ceiling: int) -> int:
    """The output-token limit to send: the answer's own limit plus room for reasoning,
    doubled `boost` times after cut-off answers, never above `ceiling` (unless the
    first limit already is)."""
    limit = answer + params.reasoning_tokens
    return max(limit, min(limit * 2**boost, ceiling)) if boost else limit
