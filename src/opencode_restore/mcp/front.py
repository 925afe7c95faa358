"""The server's front door: the handshake answered at once, the SDK loaded behind it.

Importing the ``mcp`` SDK, the readers and the pipeline takes about a second of CPU, and
agents run one-shot (``claude -p``, ``codex exec``) send their first model request
without waiting long for an MCP server. So `serve` answers what an agent asks while it
connects (``initialize``, ``server/discover``, ``tools/list``, ``prompts/list``,
``resources/list``, ``ping``) from ``handshake.json``: the SDK's own answers, recorded
by ``python -m opencode_restore.mcp.record`` and checked against the SDK by the tests. In
the meantime a thread loads the server; everything else waits for it. Once it is loaded,
the connection is handed over: the SDK is given what it missed (the ``initialize`` under
an id of ours, whose answer is dropped; every message not answered here), then reads
the wire itself. Nothing here imports more than the standard library.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from .. import __version__

HANDSHAKE = Path(__file__).with_name("handshake.json")
#: The id under which the client's ``initialize`` is replayed to the SDK.
REPLAYED_ID = "opencode-restore/replayed-initialize"
#: Where a request of the stateless protocol era names its version.
VERSION_META = "io.modelcontextprotocol/protocolVersion"
#: Requests answered here when the recording has them (``initialize`` apart).
STATIC = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "ping",
    }
)

Loaded = Callable[[IO[str], IO[str]], None]
"""What the load returns: serve the rest of the connection from these two files."""


def sdk_version() -> str | None:
    """The installed ``mcp`` distribution's version, read from its dist-info folder name
    (``importlib.metadata`` costs a tenth of a second); None when not installed."""
    spec = importlib.util.find_spec("mcp")
    if spec is None or spec.origin is None:
        return None
    site = Path(spec.origin).parent.parent
    try:
        names = os.listdir(site)
    except OSError:
        return None
    for name in names:
        if name.startswith("mcp-") and name.endswith(".dist-info"):
            return name[len("mcp-") : -len(".dist-info")]
    return None


def recorded(path: Path = HANDSHAKE) -> dict[str, Any] | None:
    """The recorded answers, if they are this package's and the installed SDK's."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("server_version") != __version__ or data.get("sdk") != sdk_version():
        return None
    return data


class Wire:
    """The connection: lines read by a thread into a queue, writes under a lock."""

    def __init__(self, inp: BinaryIO, out: BinaryIO) -> None:
        self.inp, self.out = inp, out
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="mcp-wire", daemon=True)

    def start(self) -> None:
        """Start reading."""
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in iter(self.inp.readline, b""):
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def write_line(self, text: str) -> None:
        """Write one message (a JSON text without its newline)."""
        data = (text.rstrip("\n") + "\n").encode("utf-8")
        with self._lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError):
                pass

    def send(self, message: dict[str, Any]) -> None:
        """Write one message."""
        self.write_line(json.dumps(message, separators=(",", ":"), ensure_ascii=False))


class LineFile:
    """A read-only text file made of ``readline``: what the SDK's stdio transport reads."""

    def readline(self, size: int = -1) -> str:
        raise NotImplementedError

    def __iter__(self) -> LineFile:
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self) -> None:
        pass


class QueueFile(LineFile):
    """What the SDK reads: the lines it missed, then the wire's, then "" at the end."""

    def __init__(self, first: list[str], lines: queue.Queue[bytes | None]) -> None:
        self._first = list(first)
        self._lines = lines
        self._ended = False

    def readline(self, size: int = -1) -> str:
        if self._first:
            return self._first.pop(0)
        if self._ended:
            return ""
        item = self._lines.get()
        if item is None:
            self._ended = True
            return ""
        return item.decode("utf-8", "replace")


class FilteredOut:
    """What the SDK writes: to the wire, but for the answers to the replayed requests."""

    def __init__(self, wire: Wire, drop: set[str]) -> None:
        self._wire = wire
        self._drop = drop
        self._buffer = ""

    def write(self, text: str) -> int:
        self._buffer += text
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            if line.strip() and not self._dropped(line):
                self._wire.write_line(line)
        return len(text)

    def _dropped(self, line: str) -> bool:
        if not self._drop:
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        ident = message.get("id") if isinstance(message, dict) else None
        if isinstance(ident, str) and ident in self._drop and "method" not in message:
            self._drop.discard(ident)
            return True
        return False

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class Loader:
    """Loads the server in a thread; ``result`` once done, or ``error`` (its reason)."""

    def __init__(self, load: Callable[[], Loaded]) -> None:
        self._load = load
        self.done = threading.Event()
        self.result: Loaded | None = None
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="mcp-load", daemon=True)
        self.started = False

    def start(self) -> None:
        """Start loading (once)."""
        if not self.started:
            self.started = True
            self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self._load()
        except BaseException as exc:  # reported to every request instead of a dead server
            text = str(exc).strip().splitlines()
            self.error = text[0] if text else type(exc).__name__
            print(f"opencode-restore mcp: {self.error}", file=sys.stderr, flush=True)
        finally:
            self.done.set()


class Front:
    """The answers given before the server is loaded, and what it must be given then."""

    def __init__(self, wire: Wire, answers: dict[str, Any] | None) -> None:
        self.wire = wire
        self.answers = answers
        self.version: str | None = None  # the handshake era's negotiated version
        self.pending: list[str] = []  # lines for the SDK, in order
        self.drop: set[str] = set()
        self.waiting: list[dict[str, Any]] = []  # requests only the server can answer

    def _recorded(self, version: str | None, method: str) -> Any:
        if self.answers is None or version is None:
            return None
        return self.answers.get("answers", {}).get(version, {}).get(method)

    def handle(self, line: bytes) -> None:
        """Answer ``line`` if it can be answered here, else keep it for the server."""
        text = line.decode("utf-8", "replace")
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            self.pending.append(text)  # notifications, answers, junk: the SDK's business
            return
        method = message["method"]
        raw = message.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        raw = params.get("_meta")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if method == "initialize" and self.version is None and self.answers is not None:
            requested = params.get("protocolVersion")
            known = self.answers.get("handshake_versions", [])
            negotiated = requested if requested in known else self.answers.get("latest")
            result = self._recorded(negotiated, "initialize")
            if result is not None:
                self.version = negotiated
                self.wire.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                replay = {**message, "id": REPLAYED_ID}
                self.pending.append(json.dumps(replay) + "\n")
                self.drop.add(REPLAYED_ID)
                return
        version = meta.get(VERSION_META) if VERSION_META in meta else self.version
        if method in STATIC and not params.get("cursor"):
            result = self._recorded(version, method)
            if result is not None:
                self.wire.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                return
        self.pending.append(text)
        self.waiting.append(message)

    def refuse_waiting(self, why: str) -> None:
        """Answer every request kept for a server that could not be loaded."""
        for message in self.waiting:
            ident = message["id"]
            if message.get("method") == "tools/call":
                text = f"the opencode-restore MCP server could not start: {why}"
                result = {"content": [{"type": "text", "text": text}], "isError": True}
                self.wire.send({"jsonrpc": "2.0", "id": ident, "result": result})
            else:
                error = {"code": -32603, "message": f"server could not start: {why}"}
                self.wire.send({"jsonrpc": "2.0", "id": ident, "error": error})
        self.waiting.clear()
        self.pending.clear()


def serve(wire: Wire, load: Callable[[], Loaded], answers: dict[str, Any] | None) -> int:
    """Serve the connection on ``wire``: the front door until ``load`` is done, then the
    SDK. Returns the exit code."""
    front = Front(wire, answers)
    loader = Loader(load)
    wire.start()
    if answers is None:
        loader.start()
    while True:
        if loader.done.is_set():
            if loader.result is not None:
                break
            front.refuse_waiting(loader.error or "unknown error")
        polling = loader.started and not loader.done.is_set()
        try:
            line = wire.lines.get(timeout=0.05 if polling else None)
        except queue.Empty:
            continue
        if line is None:  # the client went away before the server was needed
            return 0
        front.handle(line)
        loader.start()  # after the first answer, which the load does not slow down
    stdin = cast(IO[str], QueueFile(front.pending, wire.lines))
    loader.result(stdin, cast(IO[str], FilteredOut(wire, front.drop)))
    return 0


def divert_std_streams() -> Wire:
    """The wire over private copies of fd 0 and 1; fd 0 then reads nothing and fd 1 goes
    to stderr, so stray output of a library or a child process never corrupts it."""
    inp = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
    except OSError:
        pass
    return Wire(inp, out)
