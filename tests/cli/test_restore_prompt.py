"""``restore --format prompt``: the compact summary for the next agent's context."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from opencode_restore.cli import cli

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
