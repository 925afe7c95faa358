"""The offline error search (QA defect 4) and very long raw lines (QA defect 6)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Message
from opencode_restore.pipeline.evidence import log_search
from opencode_restore.pipeline.evidence.log_search import HEAD_CHUNKS, MAX_LINE_BYTES, _raw_lines
from opencode_restore.pipeline.evidence.sandbox import Matcher
from opencode_restore.pipeline.evidence.sandbox import grep as sandbox_grep
from opencode_restore.pipeline.run import restore_session
from opencode_restore.pipeline.stages.evidence_gatherer import ERROR_PATTERN
from opencode_restore.report.summary import summary_markdown
from opencode_restore.sources import open_session
from tests.waits import RUNAWAY_S

from ..helpers import make_session
from .test_tools import tools_for

TREE_V3 = Path("pi") / "own" / "tree-v3.jsonl"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "greet.py", line 9, in <module>\n'
    "    main()\n"
    "AttributeError: 'Namespace' object has no attribute 'shout'"
)


def restore(path: Path) -> Any:
    session = open_session([path], WarningSink(), None)
    return anyio.run(lambda: restore_session(session, load_config(env={}), OfflineProvider()))


@pytest.mark.parametrize(
    ("text", "hit"),
    [
        ('{"isError":false,"timestamp":1}', None),
        ('{"is_error": false}', None),
        ('"lastError": null, "noError": 1', None),
        ('{"is_error": true, "content": "x"}', '"is_error": true'),
        ('"isError":true', '"isError":true'),
        ('"text":"Traceback (most recent call last):\\n  File', "Traceback (most recent"),
        ('"text":"boom\\nValueError: bad input"', "ValueError"),
        ("KeyError: 'name'", "KeyError"),
        ("error: 3 FAILED", "FAILED"),
        ("fatal: not a git repository", "fatal:"),
        ("sh: 1: foo: command not found", "command not found"),
        ("Process exited with exit code 2", "exit code 2"),
        ("exit status: 1", "exit status: 1"),
    ],
)
def test_error_pattern_reads_text_not_json_keys(text: str, hit: str | None) -> None:
    match = Matcher(ERROR_PATTERN).search(text)
    assert (match.group(0) if match else None) == hit


def test_error_pattern_skips_a_huge_line_fast() -> None:
    line = "x" * 4_000_000
    started = time.perf_counter()
    assert Matcher(ERROR_PATTERN).search(line) is None
    # A runaway guard only: a backtracking pattern would not end at all.
    assert time.perf_counter() - started < RUNAWAY_S


def test_pi_tree_without_errors_reports_none(fixtures: Path) -> None:
    raw = (fixtures / TREE_V3).read_text()
    assert '"isError":false' in raw  # what the old pattern took for an error
    r = restore(fixtures / TREE_V3)
    search = r.evidence[0]
    assert search.tool == "SEARCH_LOG"
    assert "isError" in search.query
    assert search.result.startswith("0 hit(s) in the session's raw log")
    assert search.citations == []
    md = summary_markdown(r)
    assert 'Log search `"Traceback' not in md
    assert "Log search" not in md.split("## Errors")[1].split("\n## ")[0].replace(
        'Log search `"pytest -q" literal=True`', ""
    )


def test_pi_log_with_a_real_traceback_is_found(fixtures: Path, tmp_path: Path) -> None:
    lines = (fixtures / TREE_V3).read_text().splitlines()
    [at] = [i for i, line in enumerate(lines) if '"text":"print(\'hi\')"' in line]
    entry = json.loads(lines[at])
    entry["message"]["content"][0]["text"] = TRACEBACK
    entry["message"]["isError"] = True
    lines[at] = json.dumps(entry)
    log = tmp_path / "tree-traceback.jsonl"
    log.write_text("\n".join(lines) + "\n")
    r = restore(log)
    search = r.evidence[0]
    assert search.result.startswith("1 hit(s) in the session's raw log")
    assert f"tree-traceback.jsonl:{at + 1} [" in search.result
    [label] = search.citations
    ref = next(ref for ref in r.references if ref.label == label)
    assert ref.entry_index == at + 1
    md = summary_markdown(r)
    assert "AttributeError" in md


# --- very long raw lines -----------------------------------------------------------------


def chunks_of(data: bytes, tmp_path: Path) -> tuple[list[tuple[int, int]], list[int]]:
    """(line number, chunk length) for every chunk `_raw_lines` yields, and the cut lines."""
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    cut: list[int] = []
    got = [(n, len(text)) for n, text in _raw_lines(os.open(path, os.O_RDONLY), cut)]
    return got, cut


MB = MAX_LINE_BYTES


def test_long_lines_keep_their_head_and_end(tmp_path: Path) -> None:
    assert HEAD_CHUNKS == 2
    # Four chunks: all read. Seven and a half: the first two and the last two.
    four = b"a" * (4 * MB - 1) + b"\n"
    got, cut = chunks_of(b"short\n" + four + b"y" * (7 * MB + MB // 2) + b"\nend", tmp_path)
    assert got[0] == (1, 5)
    assert [n for n, _ in got[1:5]] == [2, 2, 2, 2]
    assert sum(size for n, size in got if n == 2) == 4 * MB - 1
    assert [size for n, size in got if n == 3] == [MB, MB, MB, MB // 2]
    assert got[-1] == (4, 3)
    assert cut == [3]
    # A last line without a newline keeps its end too.
    got, cut = chunks_of(b"z" * (6 * MB + 5), tmp_path)
    assert [size for _, size in got] == [MB, MB, MB, 5]
    assert cut == [1]


def test_search_notes_the_lines_it_did_not_read_whole(tmp_path: Path) -> None:
    log = tmp_path / "giant.jsonl"
    blob = "HEAD-NEEDLE " + "x" * (9 * MB) + " MIDDLE-NEEDLE " + "x" * (9 * MB) + " TAIL-NEEDLE"
    log.write_text(json.dumps({"type": "user", "text": "hi"}) + "\n" + json.dumps({"blob": blob}))
    msgs = [Message("u1", "user", "text", "hi", entry_index=1)]
    tools, _, _ = tools_for(make_session(msgs, files=[str(log)]))
    result = tools.run("SEARCH_LOG", {"pattern": "[A-Z]+-NEEDLE", "context_lines": 0})
    assert result.text.startswith("2 hit(s)")
    assert "HEAD-NEEDLE" in result.text
    assert "TAIL-NEEDLE" in result.text
    assert "MIDDLE-NEEDLE" not in result.text
    assert "giant.jsonl line(s) 2 are very long; only their first 2 MB" in result.text


def test_message_search_reads_the_head_and_end_of_a_huge_line() -> None:
    head = HEAD_CHUNKS * MB
    text = "A-NEEDLE" + "x" * (3 * head) + "B-NEEDLE" + "x" * (3 * head) + "C-NEEDLE"
    got = list(log_search._capped_lines(f"first\n{text}"))
    assert [(n, len(t)) for n, t in got] == [(1, 5), (2, head), (2, head)]
    assert got[1][1].startswith("A-NEEDLE")
    assert got[2][1].endswith("C-NEEDLE")


def test_restore_of_a_giant_tool_output_finds_its_last_error(
    fixtures: Path, tmp_path: Path
) -> None:
    lines = (fixtures / TREE_V3).read_text().splitlines()
    [at] = [i for i, line in enumerate(lines) if '"text":"print(\'hi\')"' in line]
    entry = json.loads(lines[at])
    entry["message"]["content"][0]["text"] = "x" * 30_000_000 + "\nValueError: at the end"
    # A failed read: what a successful read returns is file content, never an error.
    entry["message"]["isError"] = True
    lines[at] = json.dumps(entry)
    log = tmp_path / "giant.jsonl"
    log.write_text("\n".join(lines) + "\n")
    r = restore(log)
    assert "ValueError: at the end" in summary_markdown(r)
    assert any("very long" in e.result for e in r.evidence)


def test_a_search_keeps_only_the_shown_part_of_long_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "wide.jsonl"
    rows = [{"type": "user", "text": "hi"}]
    rows += [{"out": "x" * 200_000 + f" NEEDLE-{k} " + "y" * 200_000} for k in range(5)]
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    msgs = [Message("u1", "user", "text", "hi", entry_index=1)]
    tools, _, _ = tools_for(make_session(msgs, files=[str(log)]))
    held: list[int] = []
    real = sandbox_grep

    def spy(*args: object, **kwargs: object) -> object:
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        held.extend(len(g.text) for g in found.lines)
        return found

    monkeypatch.setattr(log_search, "grep", spy)
    # In this process, not the tools' worker, so the spy sees what the search keeps.
    result = tools.log.search(Matcher("NEEDLE-[0-9]"), context=2)
    assert result.text.startswith("5 hit(s)")
    assert all(f"NEEDLE-{k}" in result.text for k in range(5))
    # Every kept line is the window a result shows, not the 400 KB line.
    assert held
    assert max(held) <= 2 * log_search._WINDOW
