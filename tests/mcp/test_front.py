"""The front door: the handshake answered from the recording, the rest handed to the SDK."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from typing import IO, Any

from opencode_restore.mcp.front import (
    HANDSHAKE,
    REPLAYED_ID,
    FilteredOut,
    Front,
    Loaded,
    Wire,
    recorded,
    serve,
)
from tests.batch.helpers import ROOT

ANSWERS = recorded()


def _wire() -> tuple[Wire, io.BytesIO]:
    out = io.BytesIO()
    return Wire(io.BytesIO(), out), out


def _sent(out: io.BytesIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().decode().splitlines()]


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def test_the_recording_is_what_the_sdk_answers() -> None:
    from opencode_restore.mcp.record import record

    assert ANSWERS is not None, "handshake.json is missing or stale"
    fresh = record()
    assert json.loads(HANDSHAKE.read_text("utf-8")) == fresh, (
        "run: python -m opencode_restore.mcp.record"
    )
    for version, answers in fresh["answers"].items():
        names = {t["name"] for t in answers["tools/list"]["tools"]}
        assert names == {
            "list_sessions",
            "restore_session",
            "get_messages",
            "search_log",
            "search_sessions",
        }, version


def test_the_handshake_is_answered_and_replayed_later() -> None:
    wire, out = _wire()
    front = Front(wire, ANSWERS)
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c"}}
    front.handle(_line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    front.handle(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    front.handle(_line({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
    call = {"name": "list_sessions", "arguments": {}}
    front.handle(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}))
    first, listed = _sent(out)
    assert first["id"] == 0
    assert first["result"]["protocolVersion"] == "2025-06-18"
    assert first["result"]["serverInfo"]["name"] == "opencode-restore"
    assert listed["id"] == 1
    assert len(listed["result"]["tools"]) == 5
    # The SDK gets the initialize under our id, the notification and the call, in order.
    replayed = [json.loads(line) for line in front.pending]
    assert [m.get("method") for m in replayed] == [
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]
    assert replayed[0]["id"] == REPLAYED_ID
    assert front.drop == {REPLAYED_ID}
    assert [m["id"] for m in front.waiting] == [2]


def test_an_unknown_version_gets_the_latest_and_the_stateless_era_is_answered_too() -> None:
    assert ANSWERS is not None
    wire, out = _wire()
    front = Front(wire, ANSWERS)
    init = {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "c"}}
    front.handle(_line({"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": init}))
    modern = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    for ident, method in enumerate(("server/discover", "tools/list", "subscriptions/listen")):
        front.handle(_line({"jsonrpc": "2.0", "id": ident, "method": method, "params": modern}))
    answered = _sent(out)
    assert answered[0]["result"]["protocolVersion"] == ANSWERS["latest"]
    assert [m["id"] for m in answered[1:]] == [0, 1]
    assert "capabilities" in answered[1]["result"]
    assert [m["method"] for m in front.waiting] == ["subscriptions/listen"]


def test_without_a_recording_everything_waits_for_the_sdk() -> None:
    wire, out = _wire()
    front = Front(wire, None)
    front.handle(_line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}))
    front.handle(b"not json\n")
    assert out.getvalue() == b""
    assert len(front.pending) == 2
    assert not front.drop


def test_a_server_that_cannot_start_says_why_to_each_waiting_request() -> None:
    wire, out = _wire()
    front = Front(wire, ANSWERS)
    call = {"name": "search_log", "arguments": {}}
    front.handle(_line({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}))
    front.handle(_line({"jsonrpc": "2.0", "id": 8, "method": "resources/read", "params": {}}))
    front.refuse_waiting("config.toml:3: not valid TOML")
    tool, other = _sent(out)
    assert tool["result"]["isError"] is True
    assert "config.toml:3: not valid TOML" in tool["result"]["content"][0]["text"]
    assert other["error"]["message"] == "server could not start: config.toml:3: not valid TOML"
    assert not front.waiting


def test_the_answer_to_the_replayed_initialize_is_dropped_once() -> None:
    wire, out = _wire()
    filtered = FilteredOut(wire, {REPLAYED_ID})
    filtered.write(json.dumps({"jsonrpc": "2.0", "id": REPLAYED_ID, "result": {}}) + "\n")
    filtered.write('{"jsonrpc": "2.0", "id": 3, ')  # a line written in two parts
    filtered.write('"result": {}}\n')
    filtered.write(json.dumps({"jsonrpc": "2.0", "id": REPLAYED_ID, "result": {}}) + "\n")
    assert [m["id"] for m in _sent(out)] == [3, REPLAYED_ID]


def _pipes() -> tuple[Wire, IO[bytes], IO[bytes]]:
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    wire = Wire(os.fdopen(to_server_r, "rb"), os.fdopen(from_server_w, "wb"))
    return wire, os.fdopen(to_server_w, "wb"), os.fdopen(from_server_r, "rb")


def test_the_connection_is_handed_over_with_what_the_server_missed() -> None:
    seen: list[str] = []

    def load() -> Loaded:
        def run(stdin: IO[str], stdout: IO[str]) -> None:
            for line in iter(stdin.readline, ""):
                seen.append(line)
                message = json.loads(line)
                stdout.write(json.dumps({"jsonrpc": "2.0", "id": message.get("id")}) + "\n")

        return run

    wire, client_in, client_out = _pipes()
    codes: list[int] = []
    server = threading.Thread(target=lambda: codes.append(serve(wire, load, ANSWERS)))
    server.start()
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}
    client_in.write(_line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
    client_in.write(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}}))
    client_in.flush()
    answers = [json.loads(client_out.readline()) for _ in range(2)]
    client_in.close()
    server.join(60)
    assert codes == [0]
    assert answers[0]["result"]["protocolVersion"] == "2025-11-25"
    assert answers[1] == {"jsonrpc": "2.0", "id": 2}  # the SDK's; its initialize answer dropped
    assert [json.loads(line)["id"] for line in seen] == [REPLAYED_ID, 2]


def test_a_failed_load_is_the_tool_error() -> None:
    def load() -> Loaded:
        raise RuntimeError("no usable config\nsecond line")

    wire, client_in, client_out = _pipes()
    server = threading.Thread(target=lambda: serve(wire, load, ANSWERS))
    server.start()
    call = {"name": "list_sessions", "arguments": {}}
    client_in.write(_line({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call}))
    client_in.flush()
    answer = json.loads(client_out.readline())
    client_in.close()
    server.join(60)
    assert answer["id"] == 5
    assert answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"].endswith("could not start: no usable config")


def test_starting_the_server_imports_neither_the_sdk_nor_the_pipeline() -> None:
    code = (
        "import sys\n"
        "from opencode_restore.mcp import launch, front\n"
        "heavy = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'pydantic',"
        " 'opencode_restore.pipeline', 'opencode_restore.config', 'opencode_restore.cli'))]\n"
        "print(heavy)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"
