"""A Claude Code sub-agent file restored on its own keeps its own id, linked to its parent.

It took the parent's session id, so its saved journal replaced the parent's
(and the parent was then summarized again from scratch).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.diagnostics import WarningSink
from opencode_restore.pipeline.journal.identity import journal_key
from opencode_restore.sources import open_session

SPOTTER = Path(__file__).resolve().parents[3] / "fixtures" / "claude-code" / "spotter"
PARENT = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
AGENT = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d" / "subagents" / "agent-a881341.jsonl"


def test_a_sub_agent_file_is_its_own_session() -> None:
    agent = open_session([AGENT], WarningSink())
    parent = open_session([PARENT], WarningSink())
    assert agent.id == "a881341"
    assert agent.meta["parent_session_id"] == parent.id == "258c7280-ae70-4798-800f-63464d01a85d"
    assert agent.messages()
    # Read with its parent it is still the parent's agent span.
    assert parent.id == "258c7280-ae70-4798-800f-63464d01a85d"


def test_restoring_the_sub_agent_keeps_the_parents_journal(data_dir: Path) -> None:
    runner = CliRunner()
    for path in (PARENT, AGENT):
        result = runner.invoke(cli, ["restore", str(path), "-q", "--format", "json"])
        assert result.exit_code == 0, result.output
    saved = sorted(p.name for p in (data_dir / "timelines").glob("*.json"))
    keys = [journal_key(open_session([path], WarningSink())) for path in (PARENT, AGENT)]
    assert saved == sorted(f"{key}.json" for key in keys)
    assert keys[0].startswith("258c7280-ae70-4798-800f-63464d01a85d-")
    assert keys[1].startswith("a881341-")
    again = runner.invoke(cli, ["restore", str(PARENT), "--format", "json"])
    assert again.exit_code == 0
    # The parent's saved turns are reused: no turn is summarized again.
    assert json.loads(again.stdout)["session"]["id"] == "258c7280-ae70-4798-800f-63464d01a85d"
    assert "journal: resumed: all 2 turns unchanged" in again.stderr
    assert "offline rules: no model called" in again.stderr
