"""Web viewer benchmark: first paint of a large session in headless Chromium.

Builds (in a temporary folder) a Claude Code session of about ``--messages`` messages by
replicating the real spotter session (bench/api.py's ``build``: fresh uuids and shifted
timestamps per copy), registers it in a throw-away store, runs ``opencode-restore serve``
in its own process and opens ``/#/s/ID`` in the system's headless Chromium (Playwright),
``--repeat`` times, each in a fresh page. Per round, from the page's navigation start:

* ``first page``: the viewer's ``viewer:first-page`` mark, the frame after its first 60
  messages are in the page (what a reader sees first);
* ``FCP``: the browser's first-contentful-paint;
* ``all``: ``viewer:loaded``, every message in the page.

The session has a restoration citing 100 of its messages, rendered beside the thread.

Target: first page <= 1 s (median) for 5,000 messages, with no console error. These are
wall-clock times of a browser, which a shared machine stretches: the load average is
printed with them, and so is the CPU time (user+sys) the server spends on the first page's
request (the viewer's own ask: 60 messages with labels), measured in the same rounds.

    python bench/viewer.py [--messages 5000] [--repeat 7] [--smoke]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

import api
from common import RUNAWAY_S, parse_args

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TARGET_S = 1.0


def _count(client: httpx.Client, sid: str) -> int:
    r = client.get(
        f"/sessions/{sid}/messages", params={"include_tools": True, "include_thinking": True}
    )
    r.raise_for_status()
    return len(r.json()["messages"])


def _server_cpu(pid: int) -> float:
    """User+sys CPU seconds of process ``pid`` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _first_page_cpu(client: httpx.Client, pid: int, sid: str) -> float:
    params = {"include_tools": True, "include_thinking": True, "labels": True, "limit": 60}
    before = _server_cpu(pid)
    client.get(f"/sessions/{sid}/messages", params=params).raise_for_status()
    return _server_cpu(pid) - before


def _round(browser: object, url: str) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_selector("body[data-loaded='1']", timeout=RUNAWAY_S * 1000)
    page.wait_for_function(
        "() => performance.getEntriesByName('viewer:first-page').length > 0",
        timeout=RUNAWAY_S * 1000,
    )
    marks = page.evaluate(
        """() => {
          const at = (n) => (performance.getEntriesByName(n)[0] || {startTime: NaN}).startTime;
          return {first: at('viewer:first-page'), fcp: at('first-contentful-paint'),
                  all: at('viewer:loaded'),
                  shown: document.querySelectorAll('#messages > *').length};
        }"""
    )
    page.close()
    if errors:
        raise SystemExit(f"console errors: {errors}")
    return {k: v / 1000 if k != "shown" else v for k, v in marks.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parse_args(parser, {"messages": 300, "repeat": 1})
    if not CHROMIUM.exists():
        print("skipped: no /usr/bin/chromium (apt-get install chromium)")
        return 1
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "data"
        port = api._free_port()
        env = dict(os.environ, OPENCODE_RESTORE_DATA_DIR=str(data))
        base = f"http://127.0.0.1:{port}"
        # The message/line ratio of the replicated source, from a probe of 1,000 lines.
        api.DATA = folder
        probe = api.build(1000)
        probe_store = api.open_store(data)
        probe_store.register("probe", "claude-code", str(probe))
        probe_store.close()
        server = subprocess.Popen(
            [sys.executable, "-m", "opencode_restore", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            with httpx.Client(base_url=base, timeout=600) as client:
                api._wait_ready(client)
                per_line = _count(client, "probe") / 1000
                # A little over: copies of the source differ by a few messages.
                path = api.build(math.ceil(args.messages * 1.05 / per_line))
                store = api.open_store(data)
                store.register("big", "claude-code", str(path))
                # A restoration citing messages all along the thread (a restored session).
                cites = "\n".join(f"- step {n} [M{n * 40 + 1}]" for n in range(100))
                store.add_restoration(
                    "big",
                    provider="offline:rules",
                    summary_markdown=f"# SESSION SUMMARY\n\n## Progress\n\n{cites}\n",
                    summary={},
                    usage=None,
                    errors=None,
                )
                store.close()
                messages = _count(client, "big")
                log_mb = path.stat().st_size / 1e6
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
                try:
                    rounds = []
                    with httpx.Client(base_url=base, timeout=600) as client:
                        for _ in range(args.repeat):
                            rounds.append(_round(browser, f"{base}/#/s/big"))
                            rounds[-1]["server_cpu"] = _first_page_cpu(client, server.pid, "big")
                finally:
                    browser.close()
        finally:
            server.terminate()
            server.wait(timeout=RUNAWAY_S)
    shown = {int(r["shown"]) for r in rounds}
    if shown != {messages}:
        raise SystemExit(f"the page showed {shown} messages of {messages}")
    first = [r["first"] for r in rounds]
    print(f"session: {messages} messages, {log_mb:.1f} MB of log")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'round':>5} {'first page s':>12} {'FCP s':>7} {'all s':>7} {'server CPU s':>12}")
    for k, r in enumerate(rounds, 1):
        print(
            f"{k:>5} {r['first']:>12.3f} {r['fcp']:>7.3f} {r['all']:>7.3f} {r['server_cpu']:>12.3f}"
        )
    median = statistics.median(first)
    verdict = "ok" if median <= TARGET_S else "MISSED"
    print(
        f"first page median {median:.3f} s, max {max(first):.3f} s "
        f"(target <= {TARGET_S} s): {verdict}"
    )
    print(f"all messages median {statistics.median(r['all'] for r in rounds):.3f} s")
    cpu = statistics.median(r["server_cpu"] for r in rounds)
    print(f"server CPU for the first page median {cpu:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
