"""Messages API benchmark: full-fetch throughput and incremental ``since`` latency.

Builds (under bench/_data/) Claude Code sessions of 6,000 and 100,000 lines by replicating
the real spotter session (fixtures/claude-code/spotter/258c7280-….jsonl) with fresh uuids
and shifted timestamps per copy, registers each in a throw-away store, runs
``opencode-restore serve`` (uvicorn on 127.0.0.1) in its own process and reads it with
httpx, as a client would.

For each size it prints:
* the full fetch (``include_tools=true``): seconds, lines/s, MB/s, messages/s;
* the first ``since`` fetch, which builds the file's checkpoint index;
* p50/p95 latency of the ``since`` fetch of the last 10 messages (after one warm-up).

Target: the 100,000-line ``since`` latency is at most 2x the 6,000-line one.

    python bench/api.py [--sizes 6000 100000] [--repeat 50] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import orjson

from common import RUNAWAY_S, parse_args

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from opencode_restore.store import open_store  # noqa: E402

DATA = ROOT / "bench" / "_data"
SOURCE = ROOT / "fixtures/claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
SESSION = "258c7280-ae70-4798-800f-63464d01a85d"
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_IDS = re.compile(rb'"((?:msg|toolu|req)_[A-Za-z0-9]+)"')
_STAMP = re.compile(rb'"timestamp":"([0-9T:.\-]+Z)"')


def _span(lines: list[bytes]) -> timedelta:
    stamps = [m.group(1).decode() for raw in lines if (m := _STAMP.search(raw))]
    first = datetime.fromisoformat(min(stamps))
    return datetime.fromisoformat(max(stamps)) - first + timedelta(minutes=1)


def build(lines_wanted: int) -> Path:
    """A session of exactly ``lines_wanted`` lines: copies of the source, fresh ids each."""
    out = DATA / f"claude_{lines_wanted}_lines.jsonl"
    if out.exists():
        return out
    DATA.mkdir(parents=True, exist_ok=True)
    source = SOURCE.read_bytes().splitlines(keepends=True)
    shift = _span(source)
    written = 0
    with out.open("wb") as fh:
        copy = 0
        while written < lines_wanted:
            fresh: dict[bytes, bytes] = {}
            delta = shift * copy

            def new_uuid(m: re.Match[bytes], fresh: dict[bytes, bytes] = fresh) -> bytes:
                old = m.group(0)
                if old == SESSION.encode():
                    return old  # one session id throughout
                return fresh.setdefault(old, str(uuid.uuid4()).encode())

            def new_id(m: re.Match[bytes], copy: int = copy) -> bytes:
                return b'"' + m.group(1) + f"c{copy}".encode() + b'"'

            def new_stamp(m: re.Match[bytes], delta: timedelta = delta) -> bytes:
                ts = datetime.fromisoformat(m.group(1).decode()) + delta
                text = ts.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                return b'"timestamp":"' + text.encode() + b'"'

            for raw in source:
                if written == lines_wanted:
                    break
                line = _UUID.sub(new_uuid, raw)
                line = _IDS.sub(new_id, line)
                line = _STAMP.sub(new_stamp, line)
                fh.write(line)
                written += 1
            copy += 1
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(client: httpx.Client) -> None:
    deadline = time.monotonic() + RUNAWAY_S
    while True:
        try:
            client.get("/healthz").raise_for_status()
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_size(client: httpx.Client, sid: str, path: Path, repeat: int) -> dict[str, float]:
    """Full fetch, first (indexing) since fetch, and warm since latencies for one session."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        lines = sum(1 for _ in fh)
    start = time.perf_counter()
    parts = []
    with client.stream("GET", f"/sessions/{sid}/messages", params={"include_tools": True}) as r:
        for chunk in r.iter_raw():
            parts.append(chunk)
    full = time.perf_counter() - start
    messages = orjson.loads(b"".join(parts))["messages"]
    since = messages[-11]["timestamp"]
    params = {"since": since, "include_tools": True}
    start = time.perf_counter()
    first = client.get(f"/sessions/{sid}/messages", params=params)
    indexing = time.perf_counter() - start
    assert first.headers["x-fetch-mode"] == "tail", first.headers
    got = first.json()["messages"]
    assert got == [m for m in messages if m["timestamp"] and m["timestamp"] > since]
    latencies = []
    for _ in range(repeat):
        start = time.perf_counter()
        r = client.get(f"/sessions/{sid}/messages", params=params)
        r.read()
        latencies.append(time.perf_counter() - start)
    return {
        "lines": lines,
        "mb": size / 1e6,
        "messages": len(messages),
        "full_s": full,
        "lines_per_s": lines / full,
        "mb_per_s": size / 1e6 / full,
        "messages_per_s": len(messages) / full,
        "since_messages": len(got),
        "first_since_s": indexing,
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": _pct(latencies, 0.95) * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[6000, 100_000])
    parser.add_argument("--repeat", type=int, default=50)
    args = parse_args(parser, {"sizes": [600, 3000], "repeat": 5})
    paths = {n: build(n) for n in args.sizes}
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp))
        for n, path in paths.items():
            store.register(f"s{n}", "claude-code", str(path))
        store.close()
        # The server runs in its own process, as `opencode-restore serve` does.
        port = _free_port()
        env = dict(os.environ, OPENCODE_RESTORE_DATA_DIR=tmp)
        server = subprocess.Popen(
            [sys.executable, "-m", "opencode_restore", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            results = {}
            with httpx.Client(base_url=base, timeout=600) as client:
                _wait_ready(client)
                for n, path in paths.items():
                    results[n] = bench_size(client, f"s{n}", path, args.repeat)
        finally:
            server.terminate()
            server.wait(timeout=RUNAWAY_S)
    print(
        f"{'lines':>8} {'MB':>7} {'msgs':>6} | {'full s':>7} {'lines/s':>9} {'MB/s':>6} "
        f"{'msgs/s':>8} | {'1st since s':>11} {'p50 ms':>7} {'p95 ms':>7}"
    )
    for r in results.values():
        print(
            f"{r['lines']:>8.0f} {r['mb']:>7.1f} {r['messages']:>6.0f} | {r['full_s']:>7.2f} "
            f"{r['lines_per_s']:>9.0f} {r['mb_per_s']:>6.1f} {r['messages_per_s']:>8.0f} | "
            f"{r['first_since_s']:>11.3f} {r['p50_ms']:>7.1f} {r['p95_ms']:>7.1f}"
        )
    sizes = sorted(results)
    if len(sizes) >= 2:
        small, large = results[sizes[0]], results[sizes[-1]]
        ratio = large["p50_ms"] / small["p50_ms"]
        ok = ratio <= 2.0
        print(
            f"since p50 ratio {sizes[-1]}/{sizes[0]} lines: {ratio:.2f} "
            f"({'OK' if ok else 'FAIL'}: target <= 2.0)"
        )
        # At smoke size the latencies are noise: only a run that breaks fails it.
        return 0 if ok or args.smoke else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
