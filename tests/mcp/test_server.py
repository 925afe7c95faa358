"""``opencode-restore mcp`` through the SDK's own client, over stdio, in a subprocess.

The sessions are real Claude Code logs placed in a fake home's ``~/.claude/projects``,
so the server finds them the way it finds a user's: by discovery, then by id.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.types import TextContent

from mcp import Client
from tests.batch.helpers import CLAUDE_3_TURNS, ROOT, cli_env, server_process

BIG = ROOT / "fixtures" / "claude-code" / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
SESSION = CLAUDE_3_TURNS.stem
#: Every exchange with the server has this long at most (a restore of the large session
#: included, on a loaded 2-core machine).
DEADLINE = 120


@pytest.fixture
def home(tmp_path: Path) -> Path:
    projects = tmp_path / "data" / "home" / ".claude" / "projects" / "-home-dev-p"
    projects.mkdir(parents=True)
    shutil.copy(CLAUDE_3_TURNS, projects / CLAUDE_3_TURNS.name)
    shutil.copy(BIG, projects / BIG.name)
    return tmp_path


@asynccontextmanager
async def connect(tmp: Path, *args: str) -> AsyncIterator[Client]:
    env = cli_env(tmp / "data")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "opencode_restore", "mcp", *args], env=env, cwd=ROOT
    )
    async with Client(params, read_timeout_seconds=DEADLINE) as client:
        yield client


def _result(answer: Any) -> dict[str, Any]:
    assert not answer.is_error, answer.content
    assert answer.structured_content is not None
    return dict(answer.structured_content)


def _error(answer: Any) -> str:
    assert answer.is_error
    [content] = answer.content
    text = str(content.text)
    assert "\n" not in text
    assert "Traceback" not in text
    return text


def run(main: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(DEADLINE * 2):
            await main()

    anyio.run(bounded)


def test_tools_declare_their_arguments_and_results(home: Path) -> None:
    async def main() -> None:
        async with connect(home) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {
            "list_sessions",
            "restore_session",
            "get_messages",
            "search_log",
            "search_sessions",
        }
        for tool in tools.values():
            assert tool.description
            assert len(tool.description) > 40
            assert tool.input_schema["type"] == "object"
            assert tool.output_schema is not None
            assert tool.output_schema["type"] == "object"
        assert tools["restore_session"].input_schema["required"] == ["session"]
        assert tools["search_log"].input_schema["properties"]["limit"]["maximum"] == 50

    run(main)


def test_list_restore_messages_and_search_agree_on_labels(home: Path) -> None:
    async def main() -> None:
        async with connect(home) as client:
            listed = _result(await client.call_tool("list_sessions", {"limit": 5}))
            restored = _result(
                await client.call_tool(
                    "restore_session", {"session": SESSION[:8], "format": "json"}
                )
            )
            restoration = json.loads(restored["text"])
            again = _result(await client.call_tool("list_sessions", {"cwd": "/nowhere"}))
            relisted = _result(await client.call_tool("list_sessions", {}))
            label = restoration["references"][-1]["label"]
            around = _result(
                await client.call_tool(
                    "get_messages",
                    {"session": SESSION, "around": label, "limit": 5, "include_tools": True},
                )
            )
            hits = _result(
                await client.call_tool("search_log", {"session": SESSION, "pattern": "--shout"})
            )
        assert {s["id"] for s in listed["sessions"]} == {SESSION, BIG.stem}
        assert all(s["agent"] == "claude-code" and s["title"] for s in listed["sessions"])
        assert restored["session"] == SESSION
        assert restored["turns"] == 3
        assert again["sessions"] == []
        assert again["total"] == 0
        # The turns of a restored session are known from then on.
        assert {s["id"]: s["turns"] for s in relisted["sessions"]}[SESSION] == 3
        # The label the restoration cites is the same message in get_messages.
        by_label = {m["label"]: m for m in around["messages"]}
        reference = {r["label"]: r for r in restoration["references"]}[label]
        assert by_label[label]["id"] == reference["message_id"]
        assert 1 <= len(around["messages"]) <= 5
        # Every label a search hit names is one of the restoration's labels too.
        assert hits["labels"], hits["result"]
        for hit in hits["labels"]:
            assert int(hit[1:]) >= 1
        assert "[M" in hits["result"]

    run(main)


@pytest.mark.slow
def test_an_unchanged_session_is_answered_without_a_model_call(home: Path) -> None:
    async def main(url: str) -> None:
        async with connect(home, "-m", "openai:fake", "--base-url", url) as client:
            first = _result(await client.call_tool("restore_session", {"session": SESSION}))
            second = _result(await client.call_tool("restore_session", {"session": SESSION}))
        assert first["model_calls"] > 0
        assert second["model_calls"] == 0
        assert second["text"] == first["text"]
        assert "[M" in second["text"]

    with server_process(home) as (url, _requests, _proc):
        run(lambda: main(url))


def test_errors_are_one_line_tool_errors(home: Path) -> None:
    async def main() -> None:
        async with connect(home) as client:
            unknown = _error(await client.call_tool("restore_session", {"session": "zzzz-nope"}))
            bad_regex = _error(
                await client.call_tool("search_log", {"session": SESSION, "pattern": "(unclosed"})
            )
            bad_label = _error(
                await client.call_tool("get_messages", {"session": SESSION, "around": "M99999"})
            )
            bad_since = _error(
                await client.call_tool("get_messages", {"session": SESSION, "since": "yesterday"})
            )
        assert "zzzz-nope" in unknown
        assert "no session id starts with it" in unknown
        assert "bad regex: invalid regex" in bad_regex
        assert "M99999" in bad_label
        assert "yesterday" in bad_since

    run(main)


def test_an_ambiguous_prefix_lists_the_candidates(home: Path) -> None:
    twin = home / "data" / "home" / ".claude" / "projects" / "-home-dev-p" / f"{SESSION[:4]}x.jsonl"
    text = CLAUDE_3_TURNS.read_text().replace(SESSION, f"{SESSION[:4]}x-twin")
    twin.write_text(text)

    async def main() -> None:
        async with connect(home) as client:
            answer = await client.call_tool("restore_session", {"session": SESSION[:4]})
        assert answer.is_error
        assert isinstance(answer.content[0], TextContent)
        text = answer.content[0].text
        assert "matches 2 sessions" in text
        assert f"{SESSION} (claude-code)" in text
        assert f"{SESSION[:4]}x-twin (claude-code)" in text

    run(main)


@pytest.mark.slow
def test_a_regex_that_runs_away_stops_at_the_time_limit(home: Path) -> None:
    # A session whose first request is one long run of "a": `(a|aa)+$` backtracks on it.
    runaway = "7e57a11a-0000-4000-8000-000000000001"
    text = CLAUDE_3_TURNS.read_text().replace(SESSION, runaway)
    entries = [json.loads(line) for line in text.splitlines()]
    prompt = next(e["message"]["content"] for e in entries if e.get("type") == "user")
    text = text.replace(prompt, "a" * 50_000 + "!", 1)
    folder = home / "data" / "home" / ".claude" / "projects" / "-home-dev-p"
    (folder / f"{runaway}.jsonl").write_text(text)

    async def main() -> None:
        async with connect(home) as client:
            found = _result(
                await client.call_tool("search_log", {"session": runaway, "pattern": "(a|aa)+$"})
            )
        assert "log search stopped after 2 s" in found["result"]
        assert "results may be incomplete" in found["note"]

    run(main)


@pytest.mark.slow
def test_answers_stay_within_their_caps_on_a_large_session(home: Path) -> None:
    async def main() -> None:
        async with connect(home) as client:
            restored = _result(
                await client.call_tool(
                    "restore_session",
                    {"session": BIG.stem, "format": "markdown", "max_tokens": 500},
                )
            )
            many = _result(
                await client.call_tool(
                    "get_messages",
                    {"session": BIG.stem, "limit": 200, "include_tools": True, "max_tokens": 2000},
                )
            )
            hits = _result(
                await client.call_tool(
                    "search_log", {"session": BIG.stem, "pattern": "e", "limit": 50}
                )
            )
        assert restored["truncated"]
        assert len(restored["text"]) <= 500 * 3.5
        assert "max_tokens" in restored["note"]
        assert len(json.dumps(many["messages"])) <= 2000 * 3.5 * 1.2
        assert len(many["messages"]) < 200
        assert "max_tokens" in many["note"]
        assert many["total"] > 200
        assert hits["result"].count("\n") < 50 * 8
        assert "50" in hits["result"]

    run(main)


def test_without_the_extra_the_command_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from opencode_restore.cli import cli

    # As if the extra were not installed: every `mcp` module import fails.
    for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "opencode_restore.mcp.server", raising=False)
    result = CliRunner().invoke(cli, ["mcp"])
    assert result.exit_code == 2
    assert f"{sys.executable} -m pip install 'mcp>=2.3,<3'" in result.output
    assert "Traceback" not in result.output
