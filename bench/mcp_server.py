"""``list_sessions`` and ``restore_session`` over the MCP protocol, as an agent calls them.

Lays out N sessions in a temporary home (``discovery.build_home``: Claude Code, Codex, pi,
Gemini CLI), starts ``opencode-restore mcp`` as a subprocess and talks to it with the SDK's
own client over stdio. The first ``list_sessions`` registers every file (cold); the next
ones are what an agent sees every time (warm). ``restore_session`` of one session is timed
twice: the first restores it (offline), the second answers from its saved timeline.

Targets: warm ``list_sessions`` <= 200 ms with 1,000 sessions; the second restore makes
no model call.

    python bench/mcp_server.py [--sessions 1000] [--repeat 5]
    python bench/mcp_server.py --smoke        # 50 sessions, one warm call
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters

from common import ROOT, precompile
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="50 sessions, one warm call")
    args = parser.parse_args()
    n, repeat = (50, 1) if args.smoke else (args.sessions, args.repeat)
    precompile()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        home, data = Path(tmp) / "home", Path(tmp) / "data"
        ids = build_home(home, n)
        got = anyio.run(measure, home, data, repeat, ids[0])
    print(f"sessions on disk          {n} ({got['total']} listed)")
    print(f"list_sessions cold        {1000 * got['cold']:.0f} ms (registers every file)")
    print(f"list_sessions warm        {1000 * got['warm']:.0f} ms median of {repeat}")
    print(f"restore_session first     {got['restore']:.2f} s, {got['restore_calls']} calls")
    print(f"restore_session again     {got['again']:.2f} s, {got['again_calls']} model calls")
    print("targets: warm list_sessions <= 200 ms for 1,000 sessions; again: 0 model calls")


if __name__ == "__main__":
    main()
