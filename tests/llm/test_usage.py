"""Usage ledger and price table."""

from __future__ import annotations

import pytest

from opencode_restore.llm.settings import ModelPrice
from opencode_restore.llm.usage import PriceTable, UsageLedger, is_offline
from opencode_restore.model import Usage

PRICES = PriceTable(
    {
        "claude-sonnet-4-5": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),
        "claude-sonnet-4-5-20250929": {"input": 2, "output": 10},
        "claude": {"input": 100},
        "openai:gpt-test": {"input": 1, "output": 2, "cache_read": 0.25},
    }
)


def test_cost_per_million_tokens_for_every_kind() -> None:
    usage = Usage(input=1_000_000, output=200_000, cache_read=2_000_000, cache_write=400_000)
    assert PRICES.cost("anthropic", "claude-sonnet-4-5", usage) == pytest.approx(3 + 3 + 0.6 + 1.5)


def test_lookup_exact_provider_scoped_then_longest_prefix() -> None:
    assert PRICES.price("anthropic", "claude-sonnet-4-5-20250929") == ModelPrice(input=2, output=10)
    assert PRICES.price("anthropic", "claude-sonnet-4-5-20991231") == ModelPrice(
        input=3, output=15, cache_read=0.3, cache_write=3.75
    )
    assert PRICES.price("anthropic", "claude-haiku") == ModelPrice(input=100)
    assert PRICES.price("openai", "gpt-test") == ModelPrice(input=1, output=2, cache_read=0.25)
    assert PRICES.price("other", "gpt-test") is None


def test_unknown_model_costs_none() -> None:
    assert PRICES.cost("openai", "mystery", Usage(input=10)) is None
    assert PriceTable().cost("openai", "gpt-test", Usage(input=10)) is None


def test_ledger_totals_per_stage() -> None:
    ledger = UsageLedger(PRICES)
    ledger.record(
        stage="turn",
        template="t.j2",
        provider="openai",
        model="gpt-test",
        usage=Usage(input=1_000_000, output=500_000),
        attempts=1,
    )
    ledger.record(
        stage="turn",
        template="t.j2",
        provider="openai",
        model="gpt-test",
        usage=None,
        attempts=4,
        error="openai:gpt-test (HTTP 503): down",
    )
    ledger.record(
        stage="synthesis",
        template="s.j2",
        provider="openai",
        model="gpt-test",
        usage=Usage(input=100, cache_read=1_000_000),
        attempts=2,
    )
    stages = ledger.by_stage()
    assert list(stages) == ["turn", "synthesis"]
    turn = stages["turn"]
    assert (turn.calls, turn.errors, turn.attempts) == (2, 1, 5)
    assert turn.usage == Usage(input=1_000_000, output=500_000)
    assert turn.cost == pytest.approx(2.0)
    assert stages["synthesis"].cost == pytest.approx(0.25 + 0.0001)
    total = ledger.total()
    assert (total.calls, total.errors) == (3, 1)
    assert total.cost == pytest.approx(2.2501)
    assert [c.ok for c in ledger.calls] == [True, False, True]


def test_an_unpriced_model_makes_the_total_unknown() -> None:
    ledger = UsageLedger(PRICES)
    ledger.record(
        stage="a",
        template="",
        provider="openai",
        model="gpt-test",
        usage=Usage(input=10),
        attempts=1,
    )
    ledger.record(
        stage="a", template="", provider="ollama", model="qwen3", usage=Usage(input=10), attempts=1
    )
    ledger.record(
        stage="a",
        template="",
        provider="openai",
        model="gpt-test",
        usage=Usage(input=10),
        attempts=1,
    )
    assert ledger.total().cost is None
    # A failed unpriced call used nothing, so it does not hide the known cost.
    clean = UsageLedger(PRICES)
    clean.record(stage="a", template="", provider="x", model="y", usage=None, attempts=1, error="e")
    assert clean.total().cost == 0


def test_totals_are_kept_as_calls_come_and_handed_out_as_copies() -> None:
    ledger = UsageLedger(PRICES)
    for n in range(1, 4):
        ledger.record(
            stage="turn",
            template="t.j2",
            provider="openai",
            model="gpt-test",
            usage=Usage(input=10, output=1),
            attempts=1,
        )
        assert ledger.total().calls == n
        assert ledger.by_stage()["turn"].usage == Usage(input=10 * n, output=n)
    mine = ledger.total()
    mine.usage.add(Usage(input=1))
    mine.calls += 1
    ledger.by_stage()["turn"].usage.add(Usage(input=1))
    assert (ledger.total().calls, ledger.total().usage.input) == (3, 30)
    assert ledger.by_stage()["turn"].usage.input == 30
    # The same figures as summing the calls afresh.
    fresh = Usage()
    for call in ledger.calls:
        fresh.add(call.usage)
    assert ledger.total().usage == fresh


def test_offline_answers_are_no_model_calls_and_cost_nothing() -> None:
    ledger = UsageLedger(PRICES)
    # The offline provider sets a characters/3.5 estimate on its results: not kept.
    for stage in ("turn", "turn", "synthesis"):
        ledger.record(
            stage=stage,
            template="t.j2",
            provider="offline",
            model="rules",
            usage=Usage(input=5000, output=300),
            attempts=1,
        )
    total = ledger.total()
    assert (total.calls, total.offline, total.usage.total) == (0, 3, 0)
    assert total.cost == 0.0  # not None: nothing was spent, whatever the price table says
    assert ledger.by_stage()["turn"].offline == 2
    # A model's calls next to them (the synthesis of a model run) are counted as before.
    ledger.record(
        stage="synthesis",
        template="s.j2",
        provider="openai",
        model="gpt-test",
        usage=Usage(input=1_000_000),
        attempts=1,
    )
    total = ledger.total()
    assert (total.calls, total.offline, total.usage.input) == (1, 3, 1_000_000)
    assert total.cost == pytest.approx(1.0)


def test_is_offline_by_name_or_spec() -> None:
    assert is_offline("offline")
    assert is_offline("offline:rules")
    assert not is_offline("openai:offline")
    assert not is_offline("offlinex:m")
