"""End to end: the `restore` command as a subprocess, real SDKs, real HTTP to a fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.process import fake_server_process

# Each test starts the fake server and the CLI as processes (seconds each).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT / "fixtures" / "opencode" / "recorded" / "tui-compact" / "export.json"


def _turn(n: int, cite: str) -> dict[str, Any]:
    return {
        "json": {
            "turn_number": n,
            "user_request_summary": f"request {n} {cite}",
            "agent_response_summary": f"did it {cite}",
            "key_outcomes": [f"outcome {n} {cite}"],
        }
    }


SCRIPT: list[dict[str, Any]] = [
    _turn(1, "[M1]"),
    {
        "status": 429,
        "headers": {"retry-after": "0.05"},
        "body": {"error": {"message": "slow down"}},
    },
    _turn(2, "[M21]"),
    _turn(3, "[M33]"),
    {"tool": "SEARCH_LOG", "args": {"pattern": "shout"}},
    {"tool": "COMPLETE_EVIDENCE_SEARCH", "args": {"findings": "the flag exists [M1]"}},
    {
        "json": {
            "goal": "Add a --shout flag [M1]",
            "progress": {"done": ["flag and test added [M10, M14]", "README updated [M27-M29]"]},
            "current_work": "diff summary [M33] and an invented claim [M999]",
            "next_step": "commit the work [M37]",
        }
    },
]


@pytest.fixture
def fake_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with fake_server_process(tmp_path, script=SCRIPT) as (url, log, _):
        yield url, log


def _restore(model: str, base_url: str, tmp_path: Path) -> dict[str, Any]:
    env = dict(os.environ, HOME=str(tmp_path), OPENCODE_RESTORE_DATA_DIR=str(tmp_path / "data"))
    env.update(OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test")
    out = tmp_path / "restoration.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "opencode_restore",
            "restore",
            str(EXPORT),
            "-m",
            model,
            "--base-url",
            base_url,
            "--format",
            "json",
            "-o",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def _check(data: dict[str, Any], log: Path) -> list[dict[str, Any]]:
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(requests) == len(SCRIPT)
    # Every citation left in the summary resolves to a real message of the log.
    refs = {r["label"]: r for r in data["references"]}
    assert {"M1", "M10", "M14", "M27", "M28", "M29", "M33", "M37"} <= set(refs)
    assert refs["M1"]["message_id"].startswith("prt_")
    assert refs["M1"]["file"] == str(EXPORT)
    assert data["citations"]["unknown_labels"] == ["M999"]
    assert "M999" not in json.dumps(data["summary"])
    # The model's words, then the end state the log shows (a certain fact, always merged).
    current = data["summary"]["current_work"]
    assert current.startswith("diff summary [M33] and an invented claim Not committed")
    assert [t["turn_number"] for t in data["turns"]] == [1, 2, 3]
    assert data["evidence"], "the evidence search result joins the restoration"
    assert data["usage"]["calls"] == len(SCRIPT) - 1  # the 429 was retried inside one call
    assert data["usage"]["input_tokens"] > 0
    return requests


def test_restore_against_fake_openai_server(fake_server: tuple[str, Path], tmp_path: Path) -> None:
    base, log = fake_server
    data = _restore("openai:gpt-4o", f"{base}/v1", tmp_path)
    requests = _check(data, log)
    assert all(r["path"] == "/v1/chat/completions" for r in requests)
    first = requests[0]["body"]
    assert first["response_format"]["type"] == "json_schema"
    assert requests[0]["headers"]["authorization"] != "Bearer sk-test"  # masked in the log
    assert data["provider"] == "openai:gpt-4o"


def test_restore_against_fake_anthropic_server(
    fake_server: tuple[str, Path], tmp_path: Path
) -> None:
    base, log = fake_server
    data = _restore("anthropic:claude-sonnet-4-5", base, tmp_path)
    requests = _check(data, log)
    assert all(r["path"] == "/v1/messages" for r in requests)
    body = requests[0]["body"]
    assert body["tool_choice"]["type"] == "tool"
    marked = [b for b in body["system"] if "cache_control" in b]
    assert marked, "the stable system prompt carries a cache breakpoint"
    # The second turn call reads the prefix the first one wrote.
    assert data["usage"]["cache_read_tokens"] > 0
