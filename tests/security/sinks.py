"""Plant the secret corpus in a real-format log and collect what every sink writes.

The log is a Claude Code JSONL session: each secret kind gets one turn and sits in one
of four places in turn (the user's prompt, a Bash command, a `.env` written with the
Write tool, a tool result), so both decoded text and JSON-encoded tool inputs are
exercised. The sinks are what issue 14 names: the provider request (a fake OpenAI
server, real HTTP), the markdown, JSON and HTML outputs, the saved journal,
the store (titles), the API (`/messages`) and hook.log.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from opencode_restore.config import load_config
from opencode_restore.hooks.receiver import main as hook_main
from opencode_restore.store.store import Store

from ..fakes.fake_llm_server import FakeLLMServer
from .corpus import Case

SESSION = "5ec12e7a-0000-4000-8000-000000000014"
SINKS = ("provider", "markdown", "json", "html", "timeline", "store", "api", "hook.log")


def _line(kind: str, uuid: str, parent: str | None, n: int, message: dict[str, Any]) -> str:
    return json.dumps(
        {
            "parentUuid": parent,
            "isSidechain": False,
            "cwd": "/w",
            "sessionId": SESSION,
            "version": "2.0.29",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
        }
    )


def plant_log(path: Path, cases: list[Case]) -> Path:
    """A Claude Code log with one turn per case; returns ``path``."""
    lines: list[str] = []
    parent: str | None = None
    n = 0

    def add(kind: str, message: dict[str, Any]) -> None:
        nonlocal parent, n
        n += 1
        uuid = f"e{n:05d}"
        lines.append(_line(kind, uuid, parent, n, message))
        parent = uuid

    for i, case in enumerate(cases):
        where = i % 4
        prompt = f"turn {i}: {case.kind}" + (f"\nuse this:\n{case.text}" if where == 0 else "")
        add("user", {"role": "user", "content": prompt})
        call = {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}}
        if where == 1:
            call["input"] = {"command": case.text}
        elif where == 2:
            call["name"] = "Write"
            call["input"] = {"file_path": "/w/.env", "content": f"{case.text}\nNEXT_VALUE=1\n"}
        add(
            "assistant",
            {"id": f"m{i}", "role": "assistant", "model": "claude", "content": [call]},
        )
        output = case.text if where == 3 else "ok"
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": output}
        add("user", {"role": "user", "content": [result]})
        add(
            "assistant",
            {
                "id": f"d{i}",
                "role": "assistant",
                "model": "claude",
                "content": [{"type": "text", "text": f"done {i}"}],
            },
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def _cli(args: list[str], env: dict[str, str], monkeypatch: Any) -> str:
    from opencode_restore.cli import cli

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            cli.main(args=args, prog_name="opencode-restore", standalone_mode=False)
        except SystemExit as exc:
            if exc.code not in (0, 1, None):
                raise AssertionError(err.getvalue()) from exc
    return out.getvalue()


@contextmanager
def _server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def collect(
    tmp: Path, log: Path, cases: list[Case], monkeypatch: Any, *, redact: bool = True
) -> dict[str, str]:
    """Everything each sink wrote or served, as one text per sink."""
    data = tmp / "data"
    env = {
        "HOME": str(tmp),
        "OPENCODE_RESTORE_DATA_DIR": str(data),
        "OPENCODE_RESTORE_RESTORE_REDACT": "true" if redact else "false",
        "OPENAI_API_KEY": "sk-test",
    }
    sinks: dict[str, str] = {}
    outputs = {}
    for fmt in ("markdown", "json", "html"):
        out = tmp / f"out.{fmt}"
        _cli(
            ["restore", str(log), "--format", fmt, "-o", str(out), "--fresh", "-q"],
            env,
            monkeypatch,
        )
        outputs[fmt] = out.read_text()
    sinks.update(outputs)
    sinks["timeline"] = "\n".join(
        p.read_text(errors="replace") for p in sorted((data / "timelines").glob("*")) if p.is_file()
    )
    with _server() as server:
        _cli(
            [
                "restore", str(log), "-m", "openai:gpt-4o-mini", "--base-url",
                server.openai_base_url, "--fresh", "--format", "json", "-o",
                str(tmp / "llm.json"), "-q", "--max-searches", "2",
            ],
            env,
            monkeypatch,
        )  # fmt: skip
        sinks["provider"] = json.dumps([r["body"] for r in server.requests])
    # The store: a hook registers the session with the first prompt as its title, one
    # session per case (a title is one line); the API serves the log's messages.
    store = Store(data / "store.sqlite3")
    try:
        for i, case in enumerate(cases):
            payload = {
                "session_id": f"{SESSION}-{i}",
                "transcript_path": str(log),
                "cwd": "/w",
                "hook_event_name": "UserPromptSubmit",
                "prompt": case.text.replace("\n", " "),
            }
            hook_main([json.dumps(payload)])
            # A payload naming no session is logged to hook.log with its text.
            hook_main([json.dumps({"note": case.text})])
        titles = [store.session(f"{SESSION}-{i}") for i in range(len(cases))]
        sinks["store"] = "\n".join(r.title or "" for r in titles if r is not None)
        sinks["api"] = _api(store, f"{SESSION}-0", raw=not redact)
    finally:
        store.close()
    hook_log = data / "hook.log"
    sinks["hook.log"] = hook_log.read_text() if hook_log.exists() else ""
    return sinks


def _api(store: Store, session_id: str, *, raw: bool) -> str:
    from fastapi.testclient import TestClient

    from opencode_restore.api.app import create_app

    app = create_app(store, "sink-test-token", load_config(env={}))
    client = TestClient(app, base_url="http://127.0.0.1")
    got = client.get(
        f"/sessions/{session_id}/messages",
        params={"include_tools": "true", "raw": "true" if raw else "false"},
        headers={"Authorization": "Bearer sink-test-token"},
    )
    assert got.status_code == 200, got.text
    return got.text


def leaks(sinks: dict[str, str], cases: list[Case]) -> dict[str, list[str]]:
    """For each sink, the kinds whose secret it holds (plain or JSON-escaped)."""
    found: dict[str, list[str]] = {}
    for name, text in sinks.items():
        found[name] = [
            c.kind for c in cases if c.secret in text or json.dumps(c.secret)[1:-1] in text
        ]
    return found
