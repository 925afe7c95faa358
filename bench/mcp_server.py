"""``list_sessions`` and ``restore_session`` over the MCP protocol, as an agent calls them.

Lays out N sessions in a temporary home (``discovery.build_home``: Claude Code, Codex, pi,
Gemini CLI), starts ``opencode-restore mcp`` as a subprocess and talks to it with the SDK's
own client over stdio. The first ``list_sessions`` registers every file (cold); the next
ones are what an agent sees every time (warm). ``restore_session`` of one session is timed
twice: the first restores it (offline), the second answers from its saved timeline.

The handshake is timed apart, as an agent sees it (raw JSON-RPC lines on a fresh
process, ``--starts`` times): wall time from start to the ``initialize`` answer and to
the ``tools/list`` answer, the server's CPU time when it answered ``initialize`` (from
``/proc``), and the first ``tools/call`` (which waits for the SDK and the pipeline,
loaded in the background since the handshake).

Targets: warm ``list_sessions`` <= 200 ms with 1,000 sessions; the second restore makes
no model call; ``initialize`` answered well within the second a one-shot agent
(``codex exec``) gives its MCP servers before its first model request.

    python bench/mcp_server.py [--sessions 1000] [--repeat 5] [--starts 5]
    python bench/mcp_server.py --smoke        # 50 sessions, one warm call, one start
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters

from common import ROOT, RUNAWAY_S, precompile
from discovery import build_home
from mcp import Client


async def measure(home: Path, data: Path, repeat: int, session: str) -> dict[str, Any]:
    env = dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(data))
    env.pop("CODEX_HOME", None)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "opencode_restore", "mcp"], env=env, cwd=ROOT
    )
    out: dict[str, Any] = {}
    async with Client(params, read_timeout_seconds=600) as client:
        t0 = time.perf_counter()
        first = await client.call_tool("list_sessions", {"limit": 50})
        out["cold"] = time.perf_counter() - t0
        assert first.structured_content is not None
        out["total"] = first.structured_content["total"]
        warm = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            await client.call_tool("list_sessions", {"limit": 50})
            warm.append(time.perf_counter() - t0)
        out["warm"] = statistics.median(warm)
        for name in ("restore", "again"):
            t0 = time.perf_counter()
            answer = await client.call_tool("restore_session", {"session": session})
            out[name] = time.perf_counter() - t0
            assert answer.structured_content is not None, answer.content
            out[f"{name}_calls"] = answer.structured_content["model_calls"]
    return out


def _cpu(pid: int) -> float:
    """The process's user + system CPU seconds so far (Linux), or nan."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def handshake(home: Path, data: Path) -> dict[str, float]:
    """One fresh server: seconds to the initialize and tools/list answers, its CPU when it
    answered initialize, seconds to the first tools/call answer."""
    env = dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(data))
    env.pop("CODEX_HOME", None)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "opencode_restore", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None
    assert stdout is not None

    def ask(ident: int, method: str, params: dict[str, Any] | None = None) -> float:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        stdin.write((json.dumps(message) + "\n").encode())
        stdin.flush()
        answer = json.loads(stdout.readline())
        assert "result" in answer, answer
        assert answer.get("id") == ident, answer
        return time.perf_counter() - start

    client = {"name": "bench", "version": "0"}
    init = ask(
        1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    )
    cpu = _cpu(proc.pid)
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    listed = ask(2, "tools/list")
    called = ask(3, "tools/call", {"name": "list_sessions", "arguments": {"limit": 1}})
    stdin.close()
    proc.wait(timeout=RUNAWAY_S)
    return {"initialize": init, "tools_list": listed, "cpu": cpu, "first_call": called}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--starts", type=int, default=5, help="fresh servers for the handshake")
    parser.add_argument("--smoke", action="store_true", help="50 sessions, one warm call")
    args = parser.parse_args()
    n, repeat = (50, 1) if args.smoke else (args.sessions, args.repeat)
    starts = 1 if args.smoke else args.starts
    precompile()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        home, data = Path(tmp) / "home", Path(tmp) / "data"
        ids = build_home(home, n)
        shakes = [handshake(home, data) for _ in range(starts)]
        got = anyio.run(measure, home, data, repeat, ids[0])
    median = {k: statistics.median(s[k] for s in shakes) for k in shakes[0]}
    print(f"handshake, median of {starts} fresh servers:")
    print(f"  initialize answered     {1000 * median['initialize']:.0f} ms wall after start")
    print(f"  server CPU by then      {1000 * median['cpu']:.0f} ms")
    print(f"  tools/list answered     {1000 * median['tools_list']:.0f} ms wall after start")
    print(f"  first tools/call        {median['first_call']:.2f} s after start (SDK + pipeline)")
    print(f"sessions on disk          {n} ({got['total']} listed)")
    print(f"list_sessions cold        {1000 * got['cold']:.0f} ms (registers every file)")
    print(f"list_sessions warm        {1000 * got['warm']:.0f} ms median of {repeat}")
    print(f"restore_session first     {got['restore']:.2f} s, {got['restore_calls']} calls")
    print(f"restore_session again     {got['again']:.2f} s, {got['again_calls']} model calls")
    print("targets: warm list_sessions <= 200 ms for 1,000 sessions; again: 0 model calls")


if __name__ == "__main__":
    main()
