"""`eval` with a model that contributes nothing: the failed turns and the offline
fallbacks shown per recording, why calls failed on stderr (one line per reason), the
requests and tokens, and exit 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.errors import ProviderError
from opencode_restore.evaluate.model_use import ModelUse, model_use, spans
from opencode_restore.llm.base import LLMRequest, LLMResult
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.llm.usage import UsageLedger
from opencode_restore.model import Usage
from opencode_restore.pipeline.restoration import (
    FALLBACK_WARNING,
    BranchSummaryRow,
    FailedTurnRow,
    Restoration,
    SessionInfo,
    UsageReport,
)
from opencode_restore.pipeline.schemas import SessionSummary

REFUSAL = "Input should be 'text' or 'json_object'"


class Refusing(ScriptedProvider):
    """A server that refuses every request (not retried: a 400)."""

    async def complete(self, request: LLMRequest) -> LLMResult:
        self.requests.append(request)
        raise ProviderError("openai", "smollm2", REFUSAL, status=400)


class RefusingSynthesis(ScriptedProvider):
    """A server that answers every turn and refuses the synthesis."""

    async def complete(self, request: LLMRequest) -> LLMResult:
        if request.stage == "synthesis":
            self.requests.append(request)
            raise ProviderError("openai", "smollm2", REFUSAL, status=400)
        return await super().complete(request)


def _eval(fixtures: Path, monkeypatch: pytest.MonkeyPatch, provider: ScriptedProvider) -> Any:
    monkeypatch.setattr("opencode_restore.cli.eval_cmd.get_provider", lambda *a, **k: provider)
    facts = str(fixtures / "devset/facts.json")
    return CliRunner().invoke(cli, ["eval", facts, "-r", "pi", "--format", "json"])


def test_every_turn_failing_exits_1_and_says_why(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = Refusing(model="smollm2")
    result = _eval(fixtures, monkeypatch, provider)
    assert result.exit_code == 1, result.stderr
    (rec,) = json.loads(result.stdout)["recordings"]
    model = rec["model"]
    assert model["turns"] > 0
    assert model["failed_turns"] == list(range(1, model["turns"] + 1))
    assert model["fallbacks"][0] == "synthesis"
    assert model["contributed_nothing"] == [
        "every turn failed",
        "the synthesis fell back to the offline summary",
    ]
    err = result.stderr.splitlines()
    turn_lines = [line for line in err if " × turn: " in line]
    assert len(turn_lines) == 1  # one line per distinct reason, with its count
    assert turn_lines[0].startswith(f"eval: {model['turns']} × turn: ")
    assert REFUSAL in turn_lines[0]
    assert any(" × synthesis: " in line for line in err)
    assert f"eval: {len(provider.requests)} HTTP requests (retries included)" in result.stderr
    assert "the server spent 0 input and 0 output tokens" in result.stderr
    assert "eval: pi: the model contributed nothing (every turn failed;" in result.stderr


def test_the_table_shows_failed_turns_and_fallbacks(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "opencode_restore.cli.eval_cmd.get_provider", lambda *a, **k: Refusing(model="smollm2")
    )
    facts = str(fixtures / "devset/facts.json")
    result = CliRunner().invoke(cli, ["eval", facts, "-r", "pi"])
    assert result.exit_code == 1
    head, _, row = result.stdout.splitlines()[:3]
    assert head.split()[-1] == "failed"
    turns = row.split()[-1].split("/")
    assert turns[0] == turns[1]
    assert "pi: failed turns (the rules' turn lines stand in): 1-10" in result.stdout
    assert "pi: offline fallback: synthesis" in result.stdout


def test_a_fallen_back_synthesis_alone_exits_1(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _eval(fixtures, monkeypatch, RefusingSynthesis(model="smollm2", auto=True))
    assert result.exit_code == 1
    (rec,) = json.loads(result.stdout)["recordings"]
    assert rec["model"]["failed_turns"] == []
    assert rec["model"]["contributed_nothing"] == ["the synthesis fell back to the offline summary"]


def test_a_model_that_answers_exits_0_with_its_requests_and_tokens(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scripted provider fills every string with "x": answered, stating nothing.
    provider = ScriptedProvider(model="smollm2", auto=True)
    result = _eval(fixtures, monkeypatch, provider)
    assert result.exit_code == 0, result.stderr
    (rec,) = json.loads(result.stdout)["recordings"]
    assert rec["model"]["contributed_nothing"] == []
    assert rec["model"]["stood_in"][0].startswith("turn")
    assert "(user_request_summary, agent_response_summary" in rec["model"]["stood_in"][0]
    assert rec["model"]["stood_in"][-1] == "synthesis (goal, current_work, next_step)"
    assert rec["model"]["requests"] == len(provider.requests)
    assert rec["model"]["input_tokens"] > 0
    assert " × " not in result.stderr
    assert f"eval: {len(provider.requests)} HTTP requests (retries included)" in result.stderr


def test_the_offline_rules_say_nothing_on_stderr(fixtures: Path) -> None:
    facts = str(fixtures / "devset/facts.json")
    result = CliRunner().invoke(cli, ["eval", facts, "-r", "pi"])
    assert result.exit_code == 0
    assert result.stderr == ""
    assert "failed" not in result.stdout.splitlines()[0]


def _restoration(**fields: Any) -> Restoration:
    return Restoration(
        session=SessionInfo(id="s", agent="pi", files=["log"]),
        provider="openai:smollm2",
        summary=SessionSummary(goal="g"),
        turn_count=3,
        **fields,
    )


def test_retries_are_requests_and_reasons_are_one_line_each() -> None:
    ledger = UsageLedger()
    for attempts, error in ((4, "timed out"), (1, None)):
        ledger.record(
            stage="turn_summary",
            template="t",
            provider="openai",
            model="smollm2",
            usage=None if error else Usage(input=100, output=20),
            attempts=attempts,
            error=error,
        )
    ledger.record(
        stage="branch_summary",
        template="b",
        provider="openai",
        model="smollm2",
        usage=None,
        attempts=1,
        error="HTTP 500\nTraceback (most recent call last):\n  ...",
    )
    r = _restoration(
        failed_turns=[
            FailedTurnRow(turn=1, error="openai:smollm2 (HTTP 500): boom\nTraceback ..."),
            FailedTurnRow(turn=2, error="openai:smollm2 (HTTP 500): boom\nTraceback ..."),
        ],
        warnings=[f"{FALLBACK_WARNING}: openai:smollm2: Request timed out."],
        branch_summaries=[
            BranchSummaryRow(branch_id="b1", leaf_id="l", source="generated", summary="d")
        ],
        usage=UsageReport(calls=2, input_tokens=100, output_tokens=20),
    )
    use = model_use(r, ledger)
    assert use.requests == 6
    assert (use.input_tokens, use.output_tokens) == (100, 20)
    assert use.reasons == {
        "turn: openai:smollm2 (HTTP 500): boom": 2,
        "synthesis: openai:smollm2: Request timed out.": 1,
        "branch: HTTP 500": 1,
    }
    assert use.fallbacks == ["synthesis", "branch b1"]
    assert use.nothing == ["the synthesis fell back to the offline summary"]
    # Two turns of three failed, the synthesis answered: the model contributed.
    assert model_use(_restoration(failed_turns=r.failed_turns)).nothing == []


def test_the_offline_rules_contribute_no_model_and_fail_nothing() -> None:
    use = ModelUse(provider="offline:rules", turns=2, failed_turns=[1, 2], fallbacks=["synthesis"])
    assert use.offline
    assert use.nothing == []


def test_the_table_names_the_fields_the_rules_stand_in_for(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = ScriptedProvider(model="smollm2", auto=True)
    monkeypatch.setattr("opencode_restore.cli.eval_cmd.get_provider", lambda *a, **k: provider)
    result = CliRunner().invoke(cli, ["eval", str(fixtures / "devset/facts.json"), "-r", "pi"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[2].split()[-1] == "0/10"
    [said] = [line for line in lines if "stated nothing" in line]
    assert said.startswith("pi: the rules stand in where the model's text stated nothing: turn")


def test_turn_numbers_are_shown_as_runs() -> None:
    assert spans([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8"
    assert spans([4]) == "4"
