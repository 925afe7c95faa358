"""A ledger of LLM calls and the price table that turns their usage into dollars.

The offline provider is no model: its answers are the fact rules' (``OFFLINE``). The
ledger counts them apart (``offline_answers``), with no tokens and no cost, so no
report, table or JSON says a model was called when none was. (The provider still sets a
characters/3.5 estimate on its results, which the context budget reads; the ledger does
not keep it.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from opencode_restore.llm.settings import ModelPrice
from opencode_restore.model import Usage

_PER_TOKEN = 1_000_000

#: The offline provider's name (``offline:rules`` as a ``provider:model`` spec).
OFFLINE = "offline"
#: What every report says instead of calls and tokens when the offline rules wrote it.
OFFLINE_NOTE = "offline rules: no model called"


def is_offline(provider: str) -> bool:
    """True for the offline provider, by name or by its ``provider:model`` spec."""
    return provider.split(":", 1)[0] == OFFLINE


class PriceTable:
    """Model prices in $/MTok, as passed by the config layer.

    A key may be a bare model name, `provider:model`, or a prefix of dated names
    (`claude-sonnet-4-5` prices `claude-sonnet-4-5-20250929`); the most specific
    key wins. An unknown model costs None, never a guessed number.
    """

    def __init__(self, prices: Mapping[str, ModelPrice | Mapping[str, float]] | None = None):
        self._prices = {
            key: value if isinstance(value, ModelPrice) else ModelPrice(**value)
            for key, value in (prices or {}).items()
        }

    def price(self, provider: str, model: str) -> ModelPrice | None:
        """The price of `model` served by `provider`, or None when unknown."""
        for key in (f"{provider}:{model}", model):
            if key in self._prices:
                return self._prices[key]
        prefixes = [key for key in self._prices if model.startswith(key)]
        return self._prices[max(prefixes, key=len)] if prefixes else None

    def cost(self, provider: str, model: str, usage: Usage) -> float | None:
        """Dollars for `usage`, or None when the model has no price."""
        price = self.price(provider, model)
        if price is None:
            return None
        return (
            usage.input * price.input
            + usage.output * price.output
            + usage.cache_read * price.cache_read
            + usage.cache_write * price.cache_write
        ) / _PER_TOKEN


@dataclass(slots=True)
class CallRecord:
    """One LLM call as the ledger saw it; `error` is set when it failed for good."""

    stage: str
    template: str
    provider: str
    model: str
    usage: Usage
    attempts: int
    cost: float | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the call returned a result."""
        return self.error is None


@dataclass(slots=True)
class StageTotals:
    """Sums over the calls of one stage; `cost` is None if any priced call was unknown.

    `calls` counts calls to a model; the offline rules' answers are `offline` (with no
    usage and no cost: nothing was sent anywhere).
    """

    calls: int = 0
    offline: int = 0
    errors: int = 0
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0


class UsageLedger:
    """Collects every call of a run (successes and failures) with its cost.

    The totals are kept up to date as calls are recorded: the progress bar asks for
    them after every turn, and summing every call each time made a long restore's
    per-turn cost grow with its length.
    """

    def __init__(self, prices: PriceTable | None = None) -> None:
        self.prices = prices or PriceTable()
        self.calls: list[CallRecord] = []
        self._total = StageTotals()
        self._stages: dict[str, StageTotals] = {}

    def record(
        self,
        *,
        stage: str,
        template: str,
        provider: str,
        model: str,
        usage: Usage | None,
        attempts: int,
        error: str | None = None,
    ) -> CallRecord:
        """Add one call; a failed call is recorded with zero usage.

        An answer of the offline provider is recorded with zero usage and a cost of 0.0
        whatever the provider estimated: no model read or wrote those tokens.
        """
        offline = is_offline(provider)
        usage = usage if usage is not None and not offline else Usage()
        record = CallRecord(
            stage=stage,
            template=template,
            provider=provider,
            model=model,
            usage=usage,
            attempts=attempts,
            cost=0.0 if offline else self.prices.cost(provider, model, usage),
            error=error,
        )
        self.calls.append(record)
        _add(self._total, record)
        _add(self._stages.setdefault(stage, StageTotals()), record)
        return record

    def by_stage(self) -> dict[str, StageTotals]:
        """Totals per stage, in first-seen order (copies: the ledger keeps counting)."""
        return {stage: _copy(totals) for stage, totals in self._stages.items()}

    def total(self) -> StageTotals:
        """Totals over every call (a copy: the ledger keeps counting)."""
        return _copy(self._total)


def _copy(totals: StageTotals) -> StageTotals:
    return replace(totals, usage=replace(totals.usage))


def _add(totals: StageTotals, call: CallRecord) -> None:
    if is_offline(call.provider):
        totals.offline += 1
    else:
        totals.calls += 1
    totals.errors += 0 if call.ok else 1
    totals.attempts += call.attempts
    totals.usage.add(call.usage)
    # A failed call has no usage, so its unknown price must not poison the sum.
    if call.ok and call.usage.total and call.cost is None:
        totals.cost = None
    elif totals.cost is not None and call.cost is not None:
        totals.cost += call.cost
