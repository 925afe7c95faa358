"""`messages`, `GET /sessions/{id}/messages` and MCP `get_messages` mark context the
harness injected (``injected``: a whole message; ``context``: what wrapped a request), the
same way in all three (fixtures/codex/injected-context, from the real devset)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.cli import cli
from opencode_restore.config import load_config
from opencode_restore.mcp.tools import HistoryTools
from opencode_restore.model import Message
from opencode_restore.report.messages import message_record
from opencode_restore.store.store import Store

ROOT = Path(__file__).resolve().parents[2]
SID = "019f8eab-feec-7043-8561-0821dd49e754"
LOG = ROOT / "fixtures" / "codex" / "injected-context" / f"rollout-2026-07-23T11-11-04-{SID}.jsonl"
REQUEST = "Do an adversarial review of trail 10 - you can access the trail via the Entire CLI."


def _check(records: list[dict[str, Any]]) -> None:
    """What every surface must show of the fixture."""
    users = [r for r in records if r["role"] == "user"]
    assert [r.get("injected") for r in users] == [
        "recommended_plugins",
        None,
        "interrupt",
        None,
    ]
    request = users[1]
    assert request["text"] == REQUEST
    assert request["context"]["kind"] == "ide_context"
    assert "## Active file: internal/sem/search.go" in request["context"]["text"]
    assert "context" not in users[3]
    assert all("injected" not in r for r in records if r["role"] == "assistant")


def test_record_of_a_plain_message_has_no_marks() -> None:
    record = message_record(Message("m", "user", "text", "hi"))
    assert "injected" not in record
    assert "context" not in record


def test_cli_json_and_jsonl() -> None:
    runner = CliRunner()
    lines = runner.invoke(cli, ["messages", str(LOG), "--format", "jsonl"])
    assert lines.exit_code == 0, lines.output
    _check([json.loads(line) for line in lines.stdout.splitlines()])
    whole = runner.invoke(cli, ["messages", str(LOG), "--format", "json"])
    assert whole.exit_code == 0, whole.output
    _check(json.loads(whole.stdout)["messages"])


def test_cli_markdown_folds_nothing_but_says_what_is_context() -> None:
    out = CliRunner().invoke(cli, ["messages", str(LOG), "--format", "markdown"]).stdout
    assert "### [M1] User · context (recommended_plugins)" in out
    assert "### [M4] User · context (interrupt)" in out
    assert "> context (ide_context):\n> # Context from my IDE setup:" in out
    assert f"\n{REQUEST}\n" in out


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    app = create_app(store, token="t" * 32, config=load_config(), reads_need_token=False)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def test_api_messages_and_openapi(client: TestClient, store: Store) -> None:
    store.register(SID, "codex", str(LOG))
    r = client.get(f"/sessions/{SID}/messages")
    assert r.status_code == 200, r.text
    _check(json.loads(r.content)["messages"])
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert "injected" in schema["MessageOut"]["properties"]
    assert "context" in schema["MessageOut"]["properties"]
    assert set(schema["InjectedContext"]["required"]) == {"kind", "text"}


def test_mcp_get_messages() -> None:
    folder = Path(os.environ["HOME"]) / ".codex" / "sessions" / "2026" / "07" / "23"
    folder.mkdir(parents=True)
    shutil.copy(LOG, folder / LOG.name)
    tools = HistoryTools(load_config())

    async def main() -> list[dict[str, Any]]:
        got = await tools.get_messages(SID, limit=50)
        return got.messages

    _check(anyio.run(main))
