"""Markdown details of the SESSION SUMMARY: code spans and table cells."""

from __future__ import annotations

from opencode_restore.report.summary import _cell, _code


def test_code_span_keeps_pipes_and_survives_backticks() -> None:
    assert _code('grep -n "x" a.ts | head -30') == '`grep -n "x" a.ts | head -30`'
    assert _code("echo `date`") == "`` echo `date` ``"  # CommonMark strips one space a side
    assert _code("a\nb") == "`a b`"


def test_table_cell_escapes_pipes() -> None:
    assert _cell("a|b\nc") == "a\\|b c"
