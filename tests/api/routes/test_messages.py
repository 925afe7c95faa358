"""``GET /sessions/{id}/messages?labels=true``: each message with the [M#] a restoration cites."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.cli import cli
from opencode_restore.config import load_config
from opencode_restore.store.fetch import LABEL_MARKS
from opencode_restore.store.store import Store
from tests.store.builders import CLAUDE_SPOTTER, split_file

CLAUDE = "claude-code/recorded/print-continue/d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    app = create_app(store, token="t" * 32, config=load_config(), reads_need_token=False)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def _api(client: TestClient, sid: str, **params: Any) -> tuple[list[dict[str, Any]], str]:
    r = client.get(f"/sessions/{sid}/messages", params=params)
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = json.loads(r.content)["messages"]
    return messages, r.headers["x-fetch-mode"]


def _cli_labels(log: Path, *args: str) -> list[tuple[str, str | None]]:
    result = CliRunner().invoke(cli, ["messages", str(log), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return [(r["id"], r["label"]) for r in map(json.loads, result.stdout.splitlines())]


def test_labels_are_the_ones_the_messages_command_shows(
    client: TestClient, store: Store, fixtures: Path
) -> None:
    log = fixtures / CLAUDE
    store.register("S", "claude-code", str(log))
    every = ("--include-tools", "--include-thinking")
    full, _ = _api(client, "S", labels=True, include_tools=True, include_thinking=True)
    assert [(m["id"], m["label"]) for m in full] == _cli_labels(log, *every)
    # The filters hide messages, never renumber the ones shown.
    texts, _ = _api(client, "S", labels=True)
    assert [(m["id"], m["label"]) for m in texts] == _cli_labels(log)
    assert texts[-1]["label"] == "M32"
    page, _ = _api(client, "S", labels=True, offset=3, limit=2)
    assert page == texts[3:5]
    # Unasked, the answer is as before: no label key.
    plain, _ = _api(client, "S")
    assert all("label" not in m for m in plain)
    assert plain == [{k: v for k, v in m.items() if k != "label"} for m in texts]


def _one_log_and_a_chain(store: Store, tmp_path: Path) -> tuple[str, str]:
    """One log, and the same log rotated into a chain of two files: their session ids."""
    store.register("big", "claude-code", str(CLAUDE_SPOTTER))
    parts = split_file(CLAUDE_SPOTTER, 400, tmp_path, ("a.jsonl", "b.jsonl"))
    store.register("two", "claude-code", str(parts[0]))
    store.register("two", "claude-code", str(parts[1]))
    return "big", "two"


def test_labels_with_since_are_the_full_reads_from_the_tail(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    for sid in _one_log_and_a_chain(store, tmp_path):
        every, _ = _api(client, sid, labels=True, include_tools=True)
        stamps = sorted({m["timestamp"] for m in every if m["timestamp"]})
        modes = set()
        for since in stamps[-1 : 0 : -max(1, len(stamps) // 12)]:
            want = [m for m in every if m["timestamp"] and m["timestamp"] > since]
            for _ in range(2):  # counted by a full read, then from the cache
                labelled, mode = _api(client, sid, since=since, include_tools=True, labels=True)
                assert labelled == want, (sid, since)
                modes.add(mode)
        assert "tail" in modes, sid  # polls are served from the tail, labelled alike
    assert LABEL_MARKS  # and the counts are kept


def test_labels_since_after_every_message_is_an_empty_page(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    # Every file of the chain ends before ``since``: no tail starts anywhere (the schema
    # fuzz met it as a 500, a StopIteration out of the label count).
    for sid in _one_log_and_a_chain(store, tmp_path):
        _api(client, sid, labels=True)  # the checkpoints are indexed
        later, _ = _api(client, sid, since="2100-01-01T00:00:00Z", labels=True)
        assert later == []
