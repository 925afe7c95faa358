"""`opencode-restore batch` as a user runs it: tables, exit codes, resumption, progress."""

from __future__ import annotations

import io
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from opencode_restore.batch.display import (
    BatchProgress,
    failures_table,
    progress_for,
    report_table,
)
from opencode_restore.batch.items import BatchItem
from opencode_restore.batch.runner import BatchReport, Outcome
from opencode_restore.cli import cli
from opencode_restore.pipeline.restoration import UsageReport

from .helpers import CountingServer, cli_env, make_sessions, read_manifest, session_id


def test_batch_then_again_skips_everything(tmp_path: Path) -> None:
    make_sessions(tmp_path / "in", 3)
    runner = CliRunner(env=cli_env(tmp_path / "data"))
    args = ["batch", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--concurrency", "2"]
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert "sessions" in first.output
    assert "│        3 │    3 │       0 │" in first.output
    second = runner.invoke(cli, args)
    assert second.exit_code == 0
    assert "│        3 │    0 │       3 │" in second.output
    assert len(read_manifest(tmp_path / "out" / "manifest.jsonl")) == 3


def test_nothing_found_is_one_usage_error_line(tmp_path: Path) -> None:
    # An empty folder and a pattern that matches nothing say the same: nothing to
    # restore, exit 2, one line naming the input (no failed "session" row, no table).
    (tmp_path / "empty").mkdir()
    runner = CliRunner(env=cli_env(tmp_path / "data"))
    for named, why in [
        (str(tmp_path / "empty"), "no sessions found in this directory"),
        (f"{tmp_path}/nothing/*.jsonl", "the pattern matches nothing"),
    ]:
        result = runner.invoke(cli, ["batch", named, "--out", str(tmp_path / "out")])
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == f"error: nothing to restore: {named}: {why}\n"
    assert not (tmp_path / "out").exists()


def test_an_empty_input_beside_sessions_is_a_warning(tmp_path: Path) -> None:
    make_sessions(tmp_path / "in", 1)
    (tmp_path / "empty").mkdir()
    pattern = f"{tmp_path}/nothing/*.jsonl"
    args = [pattern, str(tmp_path / "empty"), str(tmp_path / "in"), "--out", str(tmp_path / "out")]
    result = CliRunner(env=cli_env(tmp_path / "data")).invoke(cli, ["batch", *args])
    assert result.exit_code == 0, result.output
    assert f"warning: {pattern}: the pattern matches nothing\n" in result.stderr
    assert f"warning: {tmp_path / 'empty'}: no sessions found in this directory\n" in result.stderr
    assert "│        1 │    1 │       0 │          0 │      0 │" in result.stdout
    assert [r["status"] for r in read_manifest(tmp_path / "out" / "manifest.jsonl")] == ["done"]


def test_files_that_are_no_log_are_counted_and_listed_with_verbose(tmp_path: Path) -> None:
    make_sessions(tmp_path / "in", 1)
    (tmp_path / "in" / "notes.json").write_text('{"not": "a log"}')
    (tmp_path / "in" / "binary.jsonl").write_bytes(b"\x00\xff" * 10)
    runner = CliRunner(env=cli_env(tmp_path / "data"))
    args = ["batch", str(tmp_path / "in"), "--out", str(tmp_path / "out")]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0
    assert "ignored 2 files with no session log (--verbose lists them)\n" in result.stderr
    assert str(tmp_path / "in" / "notes.json") not in result.stderr  # skipped quietly
    verbose = runner.invoke(cli, [*args, "-v"])
    assert verbose.exit_code == 0
    assert (
        "ignored 2 files with no session log:\n"
        f"  {tmp_path / 'in' / 'binary.jsonl'}\n"
        f"  {tmp_path / 'in' / 'notes.json'}\n"
    ) in verbose.stderr
    # With nothing else to restore the count joins the one line of the usage error.
    (tmp_path / "in" / f"{session_id(0)}.json").unlink()
    alone = runner.invoke(cli, args)
    assert alone.exit_code == 2
    assert alone.stderr.endswith(
        f"error: nothing to restore: {tmp_path / 'in'}: no sessions found in this directory"
        " (ignored 2 files with no session log)\n"
    )


def test_failures_give_exit_code_1_and_a_table(tmp_path: Path) -> None:
    make_sessions(tmp_path / "in", 2)
    with CountingServer([{"status": 400}] * 100) as server:
        result = CliRunner(env=cli_env(tmp_path / "data")).invoke(
            cli,
            [
                "batch",
                f"{tmp_path}/in/*.json",
                "--out",
                str(tmp_path / "out"),
                "-m",
                "openai:fake",
                "--base-url",
                server.openai_base_url,
                "--skip-evidence-search",
            ],
        )
    assert result.exit_code == 1
    assert "not restored completely" in result.output
    assert f"{session_id(0)} │ incomplete │ turns 1, 2, 3 failed" in result.output


def test_quiet_prints_nothing(tmp_path: Path) -> None:
    make_sessions(tmp_path / "in", 1)
    result = CliRunner(env=cli_env(tmp_path / "data")).invoke(
        cli, ["batch", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "-q"]
    )
    assert result.exit_code == 0
    assert result.output == ""


def test_progress_counts_sessions_failures_and_tokens() -> None:
    from rich.progress import Progress

    item = BatchItem("s", "claude-code", [])
    with Progress(console=Console(file=io.StringIO())) as bar:
        shown = BatchProgress(bar, 2)
        shown.start(item)
        shown.start(item)
        shown.restored(item)
        shown.finish(Outcome(item, "done", usage=UsageReport(input_tokens=10, output_tokens=5)))
        shown.restored(item)
        shown.finish(Outcome(item, "failed", error="x"))
        task = bar.tasks[0]
    assert (task.completed, task.total) == (2, 2)
    assert task.fields == {"failed": 1, "running": 0, "usage": "15 tokens"}
    with Progress(console=Console(file=io.StringIO())) as bar:
        shown = BatchProgress(bar, 1, offline=True)
        shown.finish(Outcome(item, "done", usage=UsageReport(offline_answers=4)))
        assert bar.tasks[0].fields["usage"] == "offline rules: no model called"


def _table(report: BatchReport) -> str:
    out = io.StringIO()
    Console(file=out, width=160).print(report_table(report))
    return out.getvalue()


def test_the_table_says_when_no_model_was_called() -> None:
    done = Outcome(BatchItem("s", "x", []), "done", usage=UsageReport(calls=3, input_tokens=90))
    model = _table(BatchReport([done], provider="openai:gpt-4o"))
    assert "LLM calls" in model
    assert "│         3 │     90 │" in model
    offline = BatchReport(
        [Outcome(BatchItem("s", "x", []), "done", usage=UsageReport(offline_answers=4))],
        provider="offline:rules",
    )
    text = _table(offline)
    assert "offline rules: no model called" in text
    assert "LLM calls" not in text
    assert "tokens" not in text


def test_an_error_is_shown_as_text_not_markup() -> None:
    error = "OSError: [/tmp/x] openai:x: [bold]refused"
    report = BatchReport([Outcome(BatchItem("s", "x", []), "failed", error=error)])
    failures = failures_table(report)
    assert failures is not None
    out = io.StringIO()
    Console(file=out, width=200).print(failures)
    assert error in out.getvalue()


def test_report_table_and_the_progress_hooks(tmp_path: Path) -> None:
    report = BatchReport([Outcome(BatchItem("s", "x", []), "skipped")], wall=1.25)
    out = io.StringIO()
    Console(file=out, width=120).print(report_table(report))
    assert "1.2s" in out.getvalue() or "1.3s" in out.getvalue()

    class Provider:
        name = "offline"

    class Job:
        on_start = on_restored = on_finish = None
        provider = Provider()

        def plan(self) -> tuple[list[BatchItem], list[BatchItem]]:
            return [BatchItem("a", "x", [])], []

    job = Job()
    with progress_for(job, Console(file=io.StringIO(), force_terminal=True), True):  # type: ignore[arg-type]
        assert job.on_start is not None
        assert job.on_restored is not None
        assert job.on_finish is not None
