"""Plant the secret corpus in a real-format log and collect what every sink writes.

The log is a Claude Code JSONL session: each secret kind gets one turn and sits in one
of four places in turn (the user's prompt, a Bash command, a `.env` written with the
Write tool, a tool result), so both decoded text and JSON-encoded tool inputs are
exercised. The sinks are what issue 14 names: the provider request (a fake OpenAI
server, real HTTP), the markdown, JSON and HTML outputs, the saved journal,
the store (titles), the API (`/messages`) and hook.log.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import re
from collections.abc import Callable, Collection, Iterator
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


# --- issue 31: an independent corpus in ten placements, measured in every sink -----------------

#: Where each secret kind sits in the planted session (every kind sits in all ten).
PLACEMENTS = (
    "user text",
    "thinking",
    "Write content",
    "Bash command",
    "named tool field",
    "tool output",
    "compaction summary",
    "READ_FILE file",
    "hook prompt",
    "bad line",
)
#: Every sink issue 31 names, as ``collect_every_sink`` keys them.
EVERY_SINK = (
    "provider",
    "markdown",
    "json",
    "html",
    "prompt",
    "stderr",
    "journal",
    "store",
    "batch",
    "api /messages",
    "api /summary",
    "mcp get_messages",
    "mcp restore_session",
    "hook.log",
)
PLACED_SESSION = "5ec12e7a-0000-4000-8000-000000000031"
#: The workspace files the session edits, one per group, which the evidence search reads
#: (READ_FILE): one file per group, so a file the sandbox refuses for what it holds (a
#: private-key block, an AWS secret key) keeps only its own group's kinds from being read.
READ_FILE_DIR = "keys"


def read_file_name(group: int) -> str:
    """The workspace-relative path of group ``group``'s READ_FILE file."""
    return f"{READ_FILE_DIR}/group-{group:02d}.md"


#: Kinds per group of turns: a group's texts stay under MCP's 2,000-character cut, so a
#: kind missing from get_messages is one redaction removed, not one the cut dropped.
GROUP = 8
#: Seconds between groups: each group has its own time span (MCP is read group by group).
_SPAN = 600


def field_name(kind: str) -> str:
    """The environment-style key a tool field holding a ``kind`` secret would have."""
    return "".join(c if c.isalnum() else "_" for c in kind.upper()).strip("_")


def _stamp(seconds: int) -> str:
    return f"2026-01-01T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"


def look_alike_cases(texts: list[str]) -> list[Case]:
    """Look-alikes as cases whose "secret" is the whole text (it must come out whole)."""
    return [Case(f"look-alike-{i + 1:02d}", t, t) for i, t in enumerate(texts)]


def plant_placements(
    path: Path,
    workspace: Path,
    cases: list[Case],
    look_alikes: list[Case] | None = None,
    placements: Collection[str] = PLACEMENTS,
) -> Path:
    """A Claude Code session (cwd ``workspace``) holding every case in nine placements.

    The tenth, the hook prompt, is the hooks' payload (``collect_every_sink`` sends it).
    Cases go in groups of ``GROUP``: each group is a prompt naming them, a thinking block,
    a Write of a file with them, one Bash command echoing each into a file and one writing
    them with a heredoc, a tool call with one field per kind named after it, a command
    whose output prints them, an Edit of the READ_FILE file, a compaction summary and a
    malformed line. The READ_FILE file in ``workspace`` holds every case. ``look_alikes``
    go the same ways, in groups of their own (a secret's redaction that spills over onto
    its neighbour is a finding of its own, not a look-alike's). Only ``placements`` get the
    cases (the others hold a dash), so a leak can be traced to where it sat. Returns ``path``.
    """
    others = look_alikes or []
    chosen = set(placements)

    def put(placement: str, text: str) -> str:
        return text if placement in chosen else "-"

    groups = [cases[g : g + GROUP] for g in range(0, len(cases), GROUP)]
    groups += [others[g : g + GROUP] for g in range(0, len(others), GROUP)]
    (workspace / READ_FILE_DIR).mkdir(parents=True, exist_ok=True)
    for g, group in enumerate(groups):
        texts = "\n".join(c.text for c in group)
        (workspace / read_file_name(g)).write_text(
            f"# deploy keys, group {g + 1}\n{put('READ_FILE file', texts)}\nA=1\n"
        )
    lines: list[str] = []
    parent: str | None = None
    n = 0

    def add(kind: str, message: dict[str, Any], at: int, **extra: Any) -> None:
        nonlocal parent, n
        n += 1
        uuid = f"p{n:05d}"
        line = json.loads(_line(kind, uuid, parent, 0, message))
        line.update(cwd=str(workspace), sessionId=PLACED_SESSION, timestamp=_stamp(at), **extra)
        lines.append(json.dumps(line))
        parent = uuid

    for g, group in enumerate(groups):
        texts = "\n".join(c.text for c in group)
        at = (g + 1) * _SPAN
        prompt = f"Set these up for the deploy:\n{put('user text', texts)}"
        add("user", {"role": "user", "content": prompt}, at)
        heredoc = f"cat > creds-{g}.txt <<'EOF'\n{put('Bash command', texts)}\nEOF"
        echoes = "\n".join(f'echo "{put("Bash command", c.text)}" >> notes.txt' for c in group)
        fields = {field_name(c.kind): put("named tool field", c.secret) for c in group}
        write = {
            "file_path": f"{workspace}/settings-{g}.env",
            "content": put("Write content", texts),
        }
        calls: list[tuple[str, dict[str, Any], str]] = [
            ("Write", write, "ok"),
            ("Bash", {"command": echoes, "description": "save the keys"}, ""),
            ("Bash", {"command": heredoc}, ""),
            ("mcp__vault__put", fields, "stored"),
            ("Bash", {"command": f"cat creds-{g}.txt"}, put("tool output", texts)),
            (
                "Edit",
                {
                    "file_path": f"{workspace}/{read_file_name(g)}",
                    "old_string": "A=0",
                    "new_string": "A=1",
                },
                "edited",
            ),
        ]
        thought = f"The keys are:\n{put('thinking', texts)}"
        thinking = {"type": "thinking", "thinking": thought, "signature": "x"}
        uses = [
            {"type": "tool_use", "id": f"c{g}-{k}", "name": name, "input": args}
            for k, (name, args, _) in enumerate(calls)
        ]
        add(
            "assistant",
            {"id": f"a{g}", "role": "assistant", "model": "claude", "content": [thinking, *uses]},
            at + 1,
        )
        results = [
            {"type": "tool_result", "tool_use_id": f"c{g}-{k}", "content": out}
            for k, (_, _, out) in enumerate(calls)
        ]
        add("user", {"role": "user", "content": results}, at + 2)
        done = {"type": "text", "text": f"Saved group {g + 1}."}
        reply = {"id": f"d{g}", "role": "assistant", "model": "claude", "content": [done]}
        add("assistant", reply, at + 3)
        summary = put("compaction summary", texts)
        summary = f"This session is being continued from a previous conversation.\nKeys:\n{summary}"
        add("user", {"role": "user", "content": summary}, at + 4, isCompactSummary=True)
        # A line cut off mid-write: the reader skips it, and says so; its error name is what
        # the evidence search's error pattern finds in the raw log.
        cut = {"role": "user", "content": f"DeployError: failed with\n{put('bad line', texts)}"}
        bad = json.dumps({"type": "user", "message": cut})
        lines.append(bad[: len(bad) - 3])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


class _SearchingServer(FakeLLMServer):
    """The fake server as a model that searches: each request offering tools (the evidence
    search) is answered with the next of ``calls``, so every answer reaches a request."""

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        super().__init__()
        self.calls = list(calls)

    def handle(
        self, path: str, headers: dict[str, str], body: Any, received: float | None = None
    ) -> tuple[int, dict[str, str], Any]:
        if self.calls and isinstance(body, dict) and body.get("tools"):
            self.script.insert(0, self.calls.pop(0))
        return super().handle(path, headers, body, received)


def _run_cli(args: list[str], env: dict[str, str], monkeypatch: Any) -> tuple[str, str]:
    """(stdout, stderr) of one CLI command run in this process."""
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
    return out.getvalue(), err.getvalue()


def _files_text(folder: Path, skip: tuple[str, ...] = ()) -> str:
    return "\n".join(
        p.read_text(errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in skip and not p.name.startswith("store.sqlite3")
    )


def _store_text(db: Path) -> str:
    """Every text value in every table of the store (a dump would double quotes)."""
    import sqlite3

    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [str(v) for t in tables for row in con.execute(f'SELECT * FROM "{t}"') for v in row]
    finally:
        con.close()
    return "\n".join(rows)


def collect_every_sink(
    tmp: Path,
    cases: list[Case],
    monkeypatch: Any,
    *,
    look_alikes: list[Case] | None = None,
    redact: bool = True,
    placements: Collection[str] = PLACEMENTS,
) -> dict[str, str]:
    """Plant ``cases`` (and ``look_alikes``) in all ten placements and return what each of
    ``EVERY_SINK`` holds.

    The product paths are the real ones: the CLI's restores (offline in every format, and
    openai against the fake server for the provider requests, whose evidence search is
    made to READ_FILE every group's file and to search the log for the malformed lines),
    ``batch``, the hook receiver, the HTTP API (``/messages`` redacted by default,
    ``/summary``) and the MCP tools. Everything runs in the session's working directory,
    as a user restoring from their project does, so the recorded cwd is the workspace
    the evidence tools read (the offline rules read the two files edited most).
    """
    (tmp / "ws").mkdir(parents=True, exist_ok=True)
    with contextlib.chdir(tmp / "ws"):
        return _collect(tmp, cases, monkeypatch, look_alikes or [], redact, placements)


def _collect(
    tmp: Path,
    cases: list[Case],
    monkeypatch: Any,
    others: list[Case],
    redact: bool,
    placements: Collection[str],
) -> dict[str, str]:
    home, data, workspace = tmp / "home", tmp / "data", tmp / "ws"
    log = plant_placements(
        home / ".claude" / "projects" / "-ws" / f"{PLACED_SESSION}.jsonl",
        workspace,
        cases,
        others,
        placements,
    )
    env = {
        "HOME": str(home),
        "OPENCODE_RESTORE_DATA_DIR": str(data),
        "OPENCODE_RESTORE_RESTORE_REDACT": "true" if redact else "false",
        "OPENAI_API_KEY": "sk-test",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # The hooks: the session registered with its transcript, then each case's prompt
    # submitted to a session of its own (a title is the first prompt) and a payload
    # naming no session, which hook.log records with its text.
    hook = {"transcript_path": str(log), "cwd": str(workspace)}
    hook_main(
        [json.dumps({"session_id": PLACED_SESSION, "hook_event_name": "SessionStart"} | hook)]
    )
    prompts = [*cases, *others] if "hook prompt" in placements else []
    for i, case in enumerate(prompts):
        prompt = {"hook_event_name": "UserPromptSubmit", "prompt": case.text, **hook}
        hook_main([json.dumps({"session_id": f"{PLACED_SESSION[:-4]}{i:04d}", **prompt})])
        hook_main([json.dumps({"note": case.text})])
    sinks: dict[str, str] = {}
    errors: list[str] = []
    for k, fmt in enumerate(("json", "markdown", "html", "prompt")):
        out = tmp / f"out.{fmt}"
        fresh = ["--fresh"] if k == 0 else []
        args = ["restore", str(log), "--format", fmt, "-o", str(out), *fresh]
        _, err = _run_cli(args, env, monkeypatch)
        errors.append(err)
        sinks[fmt] = out.read_text()
    groups = -(-len(cases) // GROUP) + -(-len(others) // GROUP)
    calls = [{"tool": "READ_FILE", "args": {"path": read_file_name(g)}} for g in range(groups)]
    calls.append({"tool": "SEARCH_LOG", "args": {"pattern": "DeployError", "context_lines": 1}})
    with _SearchingServer(calls) as server:
        _, err = _run_cli(
            [
                "restore", str(log), "-m", "openai:gpt-4o-mini", "--base-url",
                server.openai_base_url, "--fresh", "--format", "json", "-o",
                str(tmp / "llm.json"), "--max-searches", str(len(calls) + 1),
            ],
            env,
            monkeypatch,
        )  # fmt: skip
        errors.append(err)
        sinks["provider"] = json.dumps([r["body"] for r in server.requests])
    _, err = _run_cli(["batch", str(log), "--out", str(tmp / "batch")], env, monkeypatch)
    errors.append(err)
    sinks["batch"] = _files_text(tmp / "batch")
    sinks["stderr"] = "\n".join(errors)
    sinks.update(_served(data, groups, raw=not redact))
    sinks["journal"] = _files_text(data, skip=("hook.log",))
    sinks["store"] = _store_text(data / "store.sqlite3")
    hook_log = data / "hook.log"
    sinks["hook.log"] = hook_log.read_text() if hook_log.exists() else ""
    return sinks


def _served(data: Path, groups: int, *, raw: bool) -> dict[str, str]:
    """What the API and the MCP tools serve for the planted session."""
    import anyio
    from fastapi.testclient import TestClient

    from opencode_restore.api.app import create_app
    from opencode_restore.mcp.tools import HistoryTools

    served: dict[str, str] = {}
    tools = HistoryTools(load_config())

    async def mcp() -> None:
        restored = await tools.restore_session(PLACED_SESSION, format="json", max_tokens=32000)
        served["mcp restore_session"] = restored.text
        # One call per group's time span: each stays within the tool's limits, so every
        # message is served (a cut would hide a secret as well as redaction does).
        pages = []
        for g in range(groups):
            since = _stamp((g + 1) * _SPAN - 1)
            page = await tools.get_messages(
                PLACED_SESSION, since=since, limit=60, include_tools=True,
                include_thinking=True, max_tokens=32000,
            )  # fmt: skip
            pages.append(json.dumps(list(page.messages), default=str))
        served["mcp get_messages"] = "\n".join(pages)

    anyio.run(mcp)
    store = Store(data / "store.sqlite3")
    try:
        app = create_app(store, "sink-test-token", load_config(env={}))
        client = TestClient(app, base_url="http://127.0.0.1")
        auth = {"Authorization": "Bearer sink-test-token"}
        got = client.get(
            f"/sessions/{PLACED_SESSION}/messages",
            params={"include_tools": "true", "include_thinking": "true", "raw": str(raw).lower()},
            headers=auth,
        )
        assert got.status_code == 200, got.text
        served["api /messages"] = got.text
        summary = client.get(f"/sessions/{PLACED_SESSION}/summary", headers=auth)
        assert summary.status_code == 200, summary.text
        served["api /summary"] = summary.text
    finally:
        store.close()
    return served


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)
_CONTROL = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _unescape(text: str) -> str:
    """One level of backslash escapes undone: a JSON string's (`\\n`, `\\"`, `\\u00e9`) and
    markdown's (`\\_`)."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if len(code) == 5 and code[0] == "u":
            return chr(int(code[1:], 16))
        return _CONTROL.get(code, code)

    return _ESCAPE.sub(one, text)


#: The ways a sink may spell a value: as is, HTML-escaped, backslash-escaped once (a JSON
#: string, markdown's `\\_`), or up to three times (the provider's request body holds tool
#: inputs as JSON in a JSON string), HTML- and then backslash-escaped, or with its white
#: space run together.
_SPELLINGS: tuple[Callable[[str], str], ...] = (
    lambda t: t,
    html.unescape,
    _unescape,
    lambda t: _unescape(_unescape(t)),
    lambda t: _unescape(_unescape(_unescape(t))),
    lambda t: _unescape(html.unescape(t)),
    # hook.log writes a payload on one line, runs of spaces as one.
    lambda t: " ".join(_unescape(t).split()),
)


def holding(sinks: dict[str, str], cases: list[Case]) -> dict[str, list[str]]:
    """For each sink, the kinds whose ``secret`` it holds, however escaped."""
    found: dict[str, list[str]] = {}
    for name, text in sinks.items():
        forms = [(spell, spell(text)) for spell in _SPELLINGS]
        found[name] = [c.kind for c in cases if any(spell(c.secret) in t for spell, t in forms)]
    return found
