"""Regex bombs from a model or an MCP client end as tool errors, never as a failed restore
or gigabytes of memory (issue 31).

An escaped backslash repeated (``\\\\{9999999}``) and verbose-mode spaces in a count
(``(?x)(?:ab){ 9999999 }``) passed the text check of repeat counts and took 2.7-11.7 GB
through SEARCH_LOG, SEARCH_FILE and MCP ``search_log``; ``((?R)|a)*`` killed every restore
with a MemoryError. Patterns are now checked on the engine's parse, and what passes runs
in a worker with a memory cap and a deadline (``pipeline/evidence/patterns.py``). The
deadlines here are runaway guards: every bomb is refused on its parse, before anything
is compiled.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.base import ToolCallRequest
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.mcp.tools import HistoryTools, ToolFailure
from opencode_restore.pipeline.evidence import patterns
from opencode_restore.pipeline.evidence.log_search import LogSearch
from opencode_restore.pipeline.evidence.patterns import WorkerFailed, bounded, check_pattern
from opencode_restore.pipeline.evidence.sandbox import Refused
from opencode_restore.pipeline.run import make_context
from opencode_restore.pipeline.stages.evidence_gatherer import EvidenceOptions, gather_evidence
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.pipeline.state import RestoreState
from opencode_restore.sources import open_session
from tests.batch.helpers import CLAUDE_3_TURNS
from tests.pipeline.evidence.test_sandbox import no_hang
from tests.pipeline.evidence.test_tools import tools_for
from tests.pipeline.stages.test_evidence_gatherer import config

#: Each bomb and what its refusal names.
BOMBS = [
    (r"\\{9999999}", "repeat counts expand"),
    ("(?x)(?:ab){ 9999999 }", "repeat counts expand"),
    ("(?x)(?:ab){ 99999 , }", "repeat counts expand"),
    ("(?:x{60000}){60000}", "repeat counts expand"),
    ("a{5000}b{5000}c", "repeat counts expand"),
    ("((?R)|a)*", "recursion"),
    ("(a)(?1)*", "recursion"),
    ("(?<n>a|(?&n))+", "recursion"),
    ("(?:abc){e<=2}", "fuzzy"),
    ("(a+)+$", "unbounded repeat inside another"),
    ("(?:x*y?)*z", "unbounded repeat inside another"),
    ("(" * 70 + "a" + ")" * 70, "nests deeper"),
    ("a" * 201, "the limit is 200"),
]
IDS = [b[0][:20] for b in BOMBS]


@pytest.mark.parametrize(("pattern", "reason"), BOMBS, ids=IDS)
def test_bombs_are_refused_on_their_parse(pattern: str, reason: str) -> None:
    with pytest.raises(Refused, match=reason):
        check_pattern(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        r"Traceback \(most recent|Error\b",
        r"(?i)error|warn(ing)?",
        r"(?<=BEGIN)[\s\S]{0,500}?END",
        r"(?:\w+\.){1,5}py\b",
        r"[A-Za-z0-9+/]{64}",
        "foo(",  # no valid regex: the search looks for the text
    ],
)
def test_everyday_patterns_pass(pattern: str) -> None:
    check_pattern(pattern)


def _session_file(tmp_path: Path) -> Path:
    return Path(shutil.copy(CLAUDE_3_TURNS, tmp_path / CLAUDE_3_TURNS.name))


@pytest.mark.parametrize(("pattern", "reason"), BOMBS, ids=IDS)
def test_search_tools_answer_a_bomb_with_an_error(
    tmp_path: Path, pattern: str, reason: str
) -> None:
    session = open_session([_session_file(tmp_path)], WarningSink(), None)
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "a.txt").write_text("ab" * 1000 + "\n")
    tools, _, _ = tools_for(session, str(ws))
    for name, args in (
        ("SEARCH_LOG", {"pattern": pattern}),
        ("SEARCH_FILE", {"path": "a.txt", "pattern": pattern}),
    ):
        result = no_hang(lambda n=name, a=args: tools.run(n, a))  # type: ignore[misc]
        assert not result.ok
        assert result.text.startswith(f"ERROR: {name}: "), result.text
        assert reason in result.text


def test_a_restore_survives_every_bomb(tmp_path: Path) -> None:
    """The evidence loop reads each refusal as a tool result and goes on to finish."""
    session = open_session([_session_file(tmp_path)], WarningSink(), None)
    calls = [
        ToolCallRequest(f"call_{n}", "SEARCH_LOG", {"pattern": pattern})
        for n, (pattern, _) in enumerate(BOMBS, start=1)
    ]
    done = ToolCallRequest("call_done", "COMPLETE_EVIDENCE_SEARCH", {"findings": "none"})
    provider = ScriptedProvider([calls, done])
    ctx = make_context(session, config(), provider)
    turns = parse_turns(session)

    async def go() -> object:
        for turn in turns:
            await ctx.numbering.messages_as_str(turn.messages)
        return await gather_evidence(turns, RestoreState(), ctx, EvidenceOptions(max_searches=20))

    run = no_hang(lambda: anyio.run(go))
    assert getattr(run, "completed", False)
    results = provider.requests[1].messages
    errors = [m.content for m in results if m.role == "tool"]
    assert len(errors) == len(BOMBS)
    assert all("ERROR: SEARCH_LOG" in e for e in errors)


@pytest.fixture
def history(tmp_path: Path) -> HistoryTools:
    projects = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-dev-p"
    projects.mkdir(parents=True)
    shutil.copy(CLAUDE_3_TURNS, projects / CLAUDE_3_TURNS.name)
    return HistoryTools(load_config())


def test_mcp_search_log_refuses_every_bomb(history: HistoryTools) -> None:
    async def main() -> None:
        for pattern, reason in BOMBS:
            with pytest.raises(ToolFailure, match=f"pattern refused: .*{reason}"):
                await history.search_log(CLAUDE_3_TURNS.stem, pattern)
        found = await history.search_log(CLAUDE_3_TURNS.stem, "(?i)shout")
        assert found.labels

    no_hang(lambda: anyio.run(main))


# --- the worker: what the checks did not foresee ------------------------------------------

needs_proc = pytest.mark.skipif(
    not os.path.exists("/proc/self/statm"), reason="RLIMIT_AS is measured from /proc (Linux)"
)


def _hungry(self: LogSearch, *args: object, **kwargs: object) -> object:
    return bytearray(4 << 30)  # 4 GB: over the worker's cap, whatever the machine has


@needs_proc
def test_a_search_that_runs_out_of_memory_is_a_tool_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LogSearch, "search", _hungry)
    session = open_session([_session_file(tmp_path)], WarningSink(), None)
    tools, _, _ = tools_for(session)
    result = no_hang(lambda: tools.run("SEARCH_LOG", {"pattern": "shout"}))
    assert not result.ok
    assert result.text == "ERROR: SEARCH_LOG: the search ran out of memory"


@needs_proc
def test_mcp_search_log_that_runs_out_of_memory_is_the_calls_error(
    history: HistoryTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LogSearch, "search", _hungry)

    async def main() -> None:
        with pytest.raises(ToolFailure, match="search failed: the search ran out of memory"):
            await history.search_log(CLAUDE_3_TURNS.stem, "shout")

    no_hang(lambda: anyio.run(main))


def test_a_worker_that_never_ends_is_killed() -> None:
    never = threading.Event()
    with pytest.raises(WorkerFailed, match=r"stopped after 0\.2 s"):
        bounded(never.wait, 0.2)


def test_a_worker_passes_back_its_result_and_its_refusal() -> None:
    assert bounded(lambda: ["x" * 100_000] * 3, 30) == ["x" * 100_000] * 3  # past a pipe's buffer

    def refuse() -> None:
        raise Refused("no such file")

    with pytest.raises(Refused, match="no such file") as caught:
        bounded(refuse, 30)
    assert type(caught.value) is Refused
    with pytest.raises(WorkerFailed, match="failed"):
        bounded(lambda: 1 // 0, 30)
    with pytest.raises(WorkerFailed, match=r"failed \(exit status 3\)"):
        bounded(lambda: os._exit(3), 30)
    assert patterns.WORKER_MEMORY >= 256 << 20  # room for a real search's windows
