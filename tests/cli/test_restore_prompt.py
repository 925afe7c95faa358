"""``restore --format prompt``: the compact summary for the next agent's context."""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import RestoreError
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Session
from opencode_restore.pipeline.restoration import INTERRUPTED_WARNING
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.report.summary import summary_prompt
from opencode_restore.sources import open_session

EXPORT = "opencode/recorded/tui-compact/export.json"


def test_prompt_format_is_compact_cited_and_has_no_appendix(fixtures: Path) -> None:
    result = CliRunner().invoke(
        cli, ["restore", str(fixtures / EXPORT), "--format", "prompt", "-q"]
    )
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("# Restored context: earlier opencode session")
    assert "## Goal" in out
    assert "## Next step" in out
    assert "[M1]" in out  # every claim stays cited
    # Nothing made for a person reading a report: no appendix, no tables, no empty blocks.
    assert "## References" not in out
    assert "|---|" not in out
    assert "_None recorded._" not in out
    markdown = CliRunner().invoke(cli, ["restore", str(fixtures / EXPORT), "-q"]).stdout
    assert len(out) < len(markdown)


#: A devset session whose evidence search stops at its hit limit: a warning with a regex.
DEVSET = "devset/opencode/run-noninteractive/export.json"
#: What must never reach the next agent: warnings, the search's regex, HTML escapes.
_NOT_FOR_THE_AGENT = re.compile(r"Warning|warning:|narrow the pattern|\(\?=|&lt;|&gt;|&amp;|&#")


def test_warnings_go_to_stderr_and_the_json_never_into_the_prompt(fixtures: Path) -> None:
    result = CliRunner().invoke(cli, ["restore", str(fixtures / DEVSET), "--format", "prompt"])
    assert result.exit_code == 0, result.stderr
    assert _NOT_FOR_THE_AGENT.search(result.stdout) is None, result.stdout
    assert "**Unfinished:** the session ended in the middle of turn 10" in result.stdout
    assert "warning: evidence search: log search stopped after 50 hits" in result.stderr
    # No model was called: the summary line and the prompt's last line say so.
    assert "10 turns, offline rules: no model called" in result.stderr
    assert result.stdout.rstrip().endswith("no model was called._")
    data = json.loads(
        CliRunner()
        .invoke(cli, ["restore", str(fixtures / DEVSET), "--format", "json", "--fresh"])
        .stdout
    )
    assert any(w.startswith("evidence search: log search stopped") for w in data["warnings"])
    assert data["provider"] == "offline:rules"
    assert data["usage"]["calls"] == 0
    assert data["usage"]["offline_answers"] > 0
    assert data["usage"]["cost_usd"] == 0.0


def _sessions(roots: list[Path]) -> Iterator[tuple[Path, Session]]:
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix in (".md", ".py", ".sh", ".toml"):
                continue
            try:
                session = open_session([path], WarningSink())
            except RestoreError:
                continue  # not a log, or not one session on its own
            if session.messages():
                yield path, session


def test_no_prompt_of_any_sample_session_carries_a_warning_or_an_escape(fixtures: Path) -> None:
    """Every session under fixtures/ (and under the folders listed in
    ``OPENCODE_RESTORE_PROMPT_SAMPLES``, e.g. the real devset) restores to a prompt with
    no warning, no regex and no HTML escape. About ten seconds for the fixtures."""
    extra = [
        Path(p)
        for p in os.environ.get("OPENCODE_RESTORE_PROMPT_SAMPLES", "").split(os.pathsep)
        if p
    ]
    config = load_config(env={})
    bad, seen = [], 0
    for path, session in _sessions([fixtures, *extra]):
        restoration = anyio.run(
            functools.partial(
                restore_session, session, config, OfflineProvider(), options=RestoreOptions()
            )
        )
        prompt = summary_prompt(restoration)
        seen += 1
        if (hit := _NOT_FOR_THE_AGENT.search(prompt)) is not None:
            bad.append(f"{path.relative_to(path.anchor)}: {hit.group(0)!r}")
        # Not one warning in it (an unfinished last turn is said as state: "Unfinished").
        warnings = [w for w in restoration.warnings if not w.startswith(INTERRUPTED_WARNING)]
        assert not [w for w in warnings if w in prompt], path
    assert seen >= 100  # the sweep really read the fixtures
    assert bad == []
