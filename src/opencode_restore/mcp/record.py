"""Record ``handshake.json``: the SDK's own answers to what an agent asks while it
connects, for the front door to give before the SDK is loaded.

    python -m opencode_restore.mcp.record        # rewrite src/opencode_restore/mcp/handshake.json

Run it after changing a tool's signature or docstring, the instructions, the version, or
the ``mcp`` SDK; ``tests/mcp`` fails until the file matches what the SDK answers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..config import Config
from .front import HANDSHAKE, STATIC, VERSION_META, LineFile, sdk_version
from .server import build_server, serve_files

_CLIENT = {"name": "opencode-restore-record", "version": "0"}


class _Script(LineFile):
    """The requests, then the end once ``done()`` (answers come concurrently)."""

    def __init__(self, lines: list[str], done: Callable[[], bool]) -> None:
        self._lines = list(lines)
        self._done = done

    def readline(self, size: int = -1) -> str:
        if self._lines:
            return self._lines.pop(0)
        deadline = time.monotonic() + 60
        while not self._done() and time.monotonic() < deadline:
            time.sleep(0.01)
        return ""


class _Capture:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def _exchange(requests: list[dict[str, Any]]) -> dict[Any, Any]:
    """The SDK's answers to ``requests`` (each with an id), by id."""
    server = build_server(Config())
    out = _Capture()
    expected = sum(1 for r in requests if "id" in r)
    script = _Script(
        [json.dumps(r) + "\n" for r in requests], lambda: out.text.count("\n") >= expected
    )
    anyio.run(serve_files, server, cast(IO[str], script), cast(IO[str], out))
    answers = {}
    for line in out.text.splitlines():
        message = json.loads(line)
        if "id" in message and "result" in message:
            answers[message["id"]] = message["result"]
    return answers


def record() -> dict[str, Any]:
    """The recording for this package and the installed SDK."""
    methods = sorted(STATIC - {"server/discover"})
    answers: dict[str, dict[str, Any]] = {}
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        init = {"protocolVersion": version, "capabilities": {}, "clientInfo": _CLIENT}
        requests: list[dict[str, Any]] = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
        requests += [
            {"jsonrpc": "2.0", "id": n, "method": m} for n, m in enumerate(methods, start=1)
        ]
        got = _exchange(requests)
        answers[version] = {"initialize": got[0]}
        answers[version] |= {m: got[n] for n, m in enumerate(methods, start=1) if n in got}
    for version in MODERN_PROTOCOL_VERSIONS:
        meta = {
            VERSION_META: version,
            "io.modelcontextprotocol/clientInfo": _CLIENT,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        modern = sorted(STATIC)
        got = _exchange(
            [
                {"jsonrpc": "2.0", "id": n, "method": m, "params": {"_meta": meta}}
                for n, m in enumerate(modern)
            ]
        )
        answers[version] = {m: got[n] for n, m in enumerate(modern) if n in got}
    return {
        "sdk": sdk_version(),
        "server_version": __version__,
        "handshake_versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "latest": HANDSHAKE_PROTOCOL_VERSIONS[-1],
        "answers": answers,
    }


def dump(data: dict[str, Any]) -> str:
    """The file's text."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(path: Path = HANDSHAKE) -> None:
    """Write the recording."""
    path.write_text(dump(record()), "utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
