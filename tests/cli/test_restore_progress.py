"""restore's progress: the bar's speed column and, off a terminal, one line per turn on
stderr (tokens, seconds and tokens/s of the turn's answers); -q says nothing. The
formatting is asserted from injected numbers: nothing here depends on timing."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from rich.progress import Progress

from opencode_restore.cli import cli
from opencode_restore.cli.restore_cmd import TurnColumn, TurnProgress
from opencode_restore.llm.speed import SpeedLog
from opencode_restore.llm.usage import OFFLINE_NOTE, UsageLedger
from opencode_restore.model import Usage
from tests.fakes.fake_llm_server import FakeLLMServer

EXPORT = "opencode/recorded/tui-compact/export.json"


def shown(offline: bool = False, timeout: float = 120) -> tuple[TurnProgress, list[str]]:
    lines: list[str] = []
    progress = TurnProgress(
        offline=offline, line=lines.append, note=lines.append, max_tokens=2048, timeout=timeout
    )
    return progress, lines


def test_one_line_per_turn_with_the_turns_speed() -> None:
    progress, lines = shown()
    ledger, speed = UsageLedger(), SpeedLog()
    assert progress.update(0, 3, ledger, speed) == "0 tokens"
    speed.observe(412, 8.7)
    ledger.record(
        stage="turn_summary",
        template="t",
        provider="openai",
        model="m",
        usage=Usage(input=1000, output=412),
        attempts=1,
    )
    assert progress.update(1, 3, ledger, speed) == "1412 tokens 47 tok/s"
    speed.observe(7, 5.0)
    speed.observe(0, 5.0)
    progress.update(2, 3, ledger, speed)
    assert lines == [
        "turn 1/3 done: 412 tokens in 8.7 s (47 tok/s)",
        "turn 2/3 done: 7 tokens in 10.0 s (0.7 tok/s)",
    ]


def test_a_turn_whose_calls_all_failed_is_not_done() -> None:
    progress, lines = shown()
    ledger, speed = UsageLedger(), SpeedLog()
    progress.update(0, 2, ledger, speed)

    def call(usage: Usage | None, error: str | None = None) -> None:
        ledger.record(
            stage="turn_summary",
            template="t",
            provider="openai",
            model="x",
            usage=usage,
            attempts=3,
            error=error,
        )

    call(None, "openai:x: connection refused")
    progress.update(1, 2, ledger, speed)
    # A failed call and then one that succeeded: the turn was summarized.
    call(None, "context overflow")
    call(Usage(input=10, output=2))
    speed.observe(200, 1.0)
    progress.update(2, 2, ledger, speed)
    assert lines == [
        "turn 1/2 failed: openai:x: connection refused",
        "turn 2/2 done: 200 tokens in 1.0 s (200 tok/s)",
    ]


def test_a_slow_first_answer_says_to_raise_the_timeout_once() -> None:
    progress, lines = shown(timeout=60)
    speed = SpeedLog()
    progress.update(0, 2, UsageLedger(), speed)
    speed.observe(10, 10.0)
    progress.update(1, 2, UsageLedger(), speed)
    speed.observe(10, 10.0)
    progress.update(2, 2, UsageLedger(), speed)
    notes = [line for line in lines if line.startswith("note:")]
    assert notes == [
        "note: the model writes about 1.0 tok/s: an answer of up to 2,048 tokens may take "
        "2,048 s, more than llm.timeout (60 s); raise llm.timeout if calls time out"
    ]


def test_the_bar_counts_turns_once_known_and_never_shows_none() -> None:
    column = TurnColumn()
    with Progress(column, console=Console(file=io.StringIO())) as bar:
        task = bar.add_task("turns", total=None)
        before = column.render(bar.tasks[0]).plain
        bar.update(task, completed=1, total=3)
        after = column.render(bar.tasks[0]).plain
    assert before == "restore counting turns…"
    assert after == "restore turn 1/3"


def test_the_offline_rules_show_no_speed() -> None:
    progress, lines = shown(offline=True)
    assert progress.update(0, 2, UsageLedger(), SpeedLog()) == OFFLINE_NOTE
    assert progress.update(1, 2, UsageLedger(), SpeedLog()) == OFFLINE_NOTE
    assert lines == []


@pytest.mark.parametrize("quiet", [False, True])
def test_off_a_terminal_each_turn_is_one_stderr_line(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch, quiet: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeLLMServer(profile="llama_cpp", context_window=32768) as server:
        args = ["restore", str(fixtures / EXPORT), "-m", "openai:smollm2"]
        args += ["--base-url", server.openai_base_url, "--skip-evidence-search"]
        result = CliRunner().invoke(cli, args + (["-q"] if quiet else []))
    assert result.exit_code == 0, result.stderr
    turn_lines = [line for line in result.stderr.splitlines() if line.startswith("turn ")]
    if quiet:
        assert turn_lines == []
        return
    assert turn_lines
    # Streamed from a local server: the wait before the first token is told apart.
    pattern = re.compile(
        r"turn (\d+)/(\d+) done: [\d,]+ tokens in \d+\.\d s"
        r"( \(\d+\.\d s before the first, then [\d.]+ tok/s\))?"
    )
    matches = [pattern.fullmatch(line) for line in turn_lines]
    numbers = [int(m.group(1)) if m else 0 for m in matches]
    assert numbers == list(range(1, len(numbers) + 1)), turn_lines
