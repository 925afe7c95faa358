"""A fake LLM server speaking the OpenAI Chat Completions and Anthropic Messages wire formats.

Stdlib only (`ThreadingHTTPServer`), real HTTP on 127.0.0.1, so the real SDKs can be
driven end to end. Two ways to run it:

    with FakeLLMServer(script=[{"text": "hi"}]) as server:   # in-process
        OpenAI(base_url=server.openai_base_url, ...)        # .../v1
        Anthropic(base_url=server.base_url, ...)

    python tests/fakes/fake_llm_server.py --port-file F --script S.json --log L.jsonl

Script steps, consumed in order (one per request):
    {"text": "..."}                      plain reply
    {"json": {...}}                      JSON text (OpenAI) / the forced tool's input (Anthropic)
    {"tool": "name", "args": {...}}      a tool call
    {"status": 429, "headers": {...}, "body": ...}   an error response
    {"delay": 1.5, ...}                  answer 1.5 s later (alone: later, in auto mode)
    {"usage": {...}}                     optional override of the reported usage fields
When the script runs out, auto mode answers every request: a minimal valid instance
of the requested JSON schema (OpenAI `response_format`, Anthropic forced tool), else
a short text. Prompt tokens are counted as chars/3.5. Anthropic replies report
`cache_read_input_tokens` for a prefix (up to a `cache_control` block) already seen
in an earlier request, and `cache_creation_input_tokens` for the new one; OpenAI
replies report `cached_tokens` for the prefix shared with the previous request
(1,024 tokens or more, in 128-token steps), as the real services do.

Every request body is validated against the official SDKs' parameter types
(`wire_types`); one that does not fit gets a 400 and lands in `invalid`. With
`strict=True` the server also refuses what the real APIs refuse, with their exact
error bodies (`strict_api`): sampling parameters and `max_tokens` for OpenAI reasoning
models, `reasoning_effort` for the others, schemas outside the strict subset, more
than four `cache_control` blocks, an output limit above a Claude model's maximum.
Each logged request records the status it got.

With `profile=` (a name in `local_servers.PROFILES` or a `LocalServer`) the server
answers like a local OpenAI-compatible server (llama-cpp-python, llama.cpp, ollama,
vLLM): before a script step or the auto answer, the profile refuses what that server
refuses (its status and error body), drops what it ignores, reports its prompt tokens
against its `context_window`, and serves its other endpoints (`/v1/models`, `/props`,
`/api/show`, `/api/ps`). No API key is needed then, as with the real servers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from opencode_restore.llm.schema_instance import minimal_instance

if TYPE_CHECKING or __package__:
    from .local_servers import PROFILES, LocalServer, auto_json, make_profile, tool_parameters
    from .sse import completion_events, wants_usage
    from .strict_api import anthropic_error, anthropic_refusal, openai_error, openai_refusal
    from .tokens import CHARS_PER_TOKEN, text_chars, tokens
    from .wire_types import request_problems
else:  # run as a script, or imported with tests/fakes on sys.path (bench/, batch helpers)
    from local_servers import PROFILES, LocalServer, auto_json, make_profile, tool_parameters
    from sse import completion_events, wants_usage
    from strict_api import anthropic_error, anthropic_refusal, openai_error, openai_refusal
    from wire_types import request_problems

    from tokens import CHARS_PER_TOKEN, text_chars, tokens

_SECRET_HEADERS = {"authorization", "x-api-key"}


class FakeLLMServer:
    """The fake server; `requests` holds every request as {"n", "path", "headers", "body"}.

    Header names are lower-cased and the API key headers masked.
    """

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        *,
        latency: float = 0.0,
        log_path: Path | str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        gate: Path | str | None = None,
        strict: bool = False,
        reasoning_models: list[str] | None = None,
        profile: LocalServer | str | None = None,
        context_window: int | None = None,
    ) -> None:
        self.script = list(script or [])
        if isinstance(profile, str):
            options = {} if context_window is None else {"context_window": context_window}
            profile = make_profile(profile, **options)
        elif profile is not None and context_window is not None:
            profile.context_window = context_window
        #: The local server this one answers like (None: the hosted APIs).
        self.profile = profile
        self.strict = strict
        #: Globs of model names the strict mode treats as OpenAI reasoning models.
        self.reasoning_models = list(reasoning_models or [])
        #: Requests whose body the SDK types refused: (request number, problems).
        self.invalid: list[tuple[int, list[str]]] = []
        self.latency = latency
        # Replies wait until this file exists: a test can hold a client inside its call
        # for as long as it needs, instead of guessing a latency.
        self.gate = Path(gate) if gate else None
        self.log_path = Path(log_path) if log_path else None
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._cache: set[str] = set()
        self._previous_openai = ""
        self._counter = 0
        self._httpd = _QuietServer((host, port), _handler_for(self))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """Root URL; the Anthropic SDK's base_url (it appends /v1/messages)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK's base_url (it appends /chat/completions)."""
        return f"{self.base_url}/v1"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle(
        self, path: str, headers: dict[str, str], body: Any, received: float | None = None
    ) -> tuple[int, dict[str, str], Any]:
        """Answer one request: (status, extra headers, JSON body or raw text).

        The reply leaves ``delay + latency`` seconds after ``received`` (the
        ``time.monotonic()`` at which the request arrived; now by default): the time
        spent building it counts in, as it does in a real service's latency.
        """
        received = time.monotonic() if received is None else received
        problems = request_problems(path, body)
        refused = self._refusal(path, body, problems)
        refused_headers: dict[str, str] = {}
        if refused is None and self.profile is not None and isinstance(body, dict):
            local = self.profile.refusal(body)
            if local is not None:
                refused, refused_headers = (local[0], local[2]), local[1]
        with self._lock:
            self._counter += 1
            number = self._counter
            if problems:
                self.invalid.append((number, problems))
            # A refused request is answered like the real API and consumes no script step.
            step = self.script.pop(0) if self.script and refused is None else {}
            entry = {"n": number, "path": path, "headers": _masked(headers), "body": body}
            if refused is not None:
                entry["status"] = refused[0]
            elif "status" in step:
                entry["status"] = int(step["status"])
            self.requests.append(entry)
            if self.log_path:
                with self.log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(entry) + "\n")
        if refused is not None:
            reply: tuple[int, dict[str, str], Any] = (refused[0], refused_headers, refused[1])
        elif "status" in step:
            reply = self._error(path, step)
        elif path.endswith("/messages"):
            reply = 200, {}, self._anthropic(number, body, step)
        elif self.profile is not None:
            # The model sees the request without what the server ignores.
            reply = _streamed(body, self._openai(number, self.profile.seen(body), step))
        else:
            reply = _streamed(body, self._openai(number, body, step))
        wait = received + float(step.get("delay", 0)) + self.latency - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        while self.gate is not None and not self.gate.exists():
            time.sleep(0.01)
        return reply

    def route(self, method: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
        """A request to an endpoint other than the chat ones: the profile's answer, logged
        (without a profile: a 404, not logged, so a client's probe of `/v1/models` does not
        count among the calls a test reads)."""
        if self.profile is None:
            return 404, {}, {"error": {"message": f"no route {path}"}}
        with self._lock:
            self._counter += 1
            entry = {"n": self._counter, "method": method, "path": path, "headers": {}}
            entry["body"] = body if isinstance(body, dict) else {}
            self.requests.append(entry)
        reply = self.profile.route(method, path, body)
        entry["status"] = reply[0]
        return reply

    def _refusal(
        self, path: str, body: Any, problems: list[str]
    ) -> tuple[int, dict[str, Any]] | None:
        """The 400 a real API would answer, or None to answer normally."""
        anthropic = path.endswith("/messages")
        if problems and self.profile is not None:
            # A local server judges by its own request types (llama-cpp-python's
            # json_object takes a `schema`): the SDK types' problems are only recorded.
            return None
        if problems:
            message = "; ".join(problems[:5])
            return anthropic_error(message) if anthropic else openai_error(message, None, None)
        if not self.strict:
            return None
        return anthropic_refusal(body) if anthropic else openai_refusal(body, self.reasoning_models)

    def _error(self, path: str, step: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        status = int(step["status"])
        message = f"fake error {status}"
        body = step.get("body")
        if body is None and path.endswith("/messages"):
            body = {"type": "error", "error": {"type": "api_error", "message": message}}
        elif body is None:
            body = {"error": {"message": message, "type": "server_error", "code": None}}
        return status, dict(step.get("headers", {})), body

    def _openai(self, number: int, body: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
        text: str | None = step.get("text")
        tool_calls: list[dict[str, Any]] = []
        if "json" in step:
            text = json.dumps(step["json"])
        elif "tool" in step:
            arguments = json.dumps(step.get("args", {}))
            function = {"name": step["tool"], "arguments": arguments}
            tool_calls.append(
                {"id": f"call_fake_{number}", "type": "function", "function": function}
            )
        elif text is None and self.profile is not None:
            forced = self.profile.tool_call(body)
            if forced is not None:
                # A grammar built from the tool's parameters: the call is always made.
                arguments = json.dumps(minimal_instance(tool_parameters(body, forced)))
                function = {"name": forced, "arguments": arguments}
                tool_calls.append(
                    {"id": f"call_fake_{number}", "type": "function", "function": function}
                )
            else:
                follows = self.profile.follows_prompt_schema
                text = auto_json(body, follows_prompt_schema=follows) or "auto reply"
        elif text is None:
            schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
            text = json.dumps(minimal_instance(schema)) if schema else "auto reply"
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        prompt = tokens(text_chars([body.get("messages"), body.get("tools")]))
        if self.profile is not None:
            prompt = self.profile.reported_prompt_tokens(prompt)
        cached = self._openai_cached(body)
        completion = tokens(len(text or "") + text_chars(tool_calls))
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        usage.update(step.get("usage", {}))
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": usage,
        }

    def _openai_cached(self, body: dict[str, Any]) -> int:
        serialized = json.dumps([body.get("tools"), body.get("messages")], sort_keys=True)
        with self._lock:
            previous, self._previous_openai = self._previous_openai, serialized
        shared = _common_prefix(previous, serialized)
        cached = int(shared / CHARS_PER_TOKEN) // 128 * 128
        return cached if cached >= 1024 else 0

    def _anthropic(self, number: int, body: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
        forced = body.get("tool_choice") or {}
        forced_name = forced.get("name") if forced.get("type") == "tool" else None
        content: list[dict[str, Any]] = []
        if "tool" in step:
            content.append(_tool_use(number, step["tool"], step.get("args", {})))
        elif "json" in step and forced_name:
            content.append(_tool_use(number, forced_name, step["json"]))
        elif "json" in step:
            content.append({"type": "text", "text": json.dumps(step["json"])})
        elif "text" in step:
            content.append({"type": "text", "text": step["text"]})
        elif forced_name:
            tools = body.get("tools", [])
            tool = next(
                (t for t in tools if t.get("name") == forced_name),
                {"input_schema": {"type": "object"}},
            )
            content.append(_tool_use(number, forced_name, minimal_instance(tool["input_schema"])))
        else:
            content.append({"type": "text", "text": "auto reply"})
        usage = self._anthropic_usage(body)
        usage["output_tokens"] = tokens(text_chars(content))
        usage.update(step.get("usage", {}))
        return {
            "id": f"msg_fake_{number}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content,
            "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }

    def _anthropic_usage(self, body: dict[str, Any]) -> dict[str, int]:
        """Prompt-cache accounting over blocks in cache order: tools, system, messages."""
        system = body.get("system") or []
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        blocks: list[Any] = list(body.get("tools") or []) + list(system)
        for message in body.get("messages", []):
            content = message.get("content")
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            blocks.extend({"role": message.get("role"), **part} for part in parts)
        sizes = [tokens(text_chars(block)) for block in blocks]
        marks = [i for i, block in enumerate(blocks) if block.get("cache_control")]
        keys = [self._prefix_key(body, blocks[: i + 1]) for i in marks]
        read = write = 0
        with self._lock:
            hit = next(
                (
                    i
                    for i, key in zip(reversed(marks), reversed(keys), strict=True)
                    if key in self._cache
                ),
                None,
            )
            if hit is not None:
                read = sum(sizes[: hit + 1])
            if marks:
                write = sum(sizes[: marks[-1] + 1]) - read
            self._cache.update(keys)
        return {
            "input_tokens": sum(sizes) - read - write,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }

    @staticmethod
    def _prefix_key(body: dict[str, Any], blocks: list[Any]) -> str:
        stripped = [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]
        raw = json.dumps([body.get("model"), stripped], sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()


def _common_prefix(first: str, second: str) -> int:
    size = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        size += 1
    return size


def _tool_use(number: int, name: str, args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_fake_{number}", "name": name, "input": args}


def _masked(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): ("***" if k.lower() in _SECRET_HEADERS else v) for k, v in headers.items()}


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    # A batch opens 16+ connections at once; the default backlog of 5 drops SYNs
    # (a one-second retransmit on each).
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout tests) is expected; say nothing."""


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: with Nagle on, the body waits for the
        # client's delayed ACK (~40 ms a reply on Linux), far above a benchmark's latency.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the JSONL log is the record."""

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            self._send(*server.route("GET", path, None))

        def do_POST(self) -> None:
            received = time.monotonic()
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?", 1)[0].rstrip("/")
            local = server.profile is not None
            if local and not path.endswith("/chat/completions"):
                try:
                    posted = json.loads(raw) if raw else None
                except ValueError:
                    posted = None
                return self._send(*server.route("POST", path, posted))
            if not path.endswith(("/chat/completions", "/messages")):
                return self._send(404, {}, {"error": {"message": f"no route {path}"}})
            # Local servers take requests without a key, as the real ones do by default.
            if not local and not (
                self.headers.get("authorization", "").startswith("Bearer ")
                or self.headers.get("x-api-key")
            ):
                return self._send(401, {}, {"error": {"message": "missing API key"}})
            try:
                body = json.loads(raw)
            except ValueError:
                return self._send(400, {}, {"error": {"message": "body is not JSON"}})
            self._send(*server.handle(path, dict(self.headers.items()), body, received))

        def _send(self, status: int, headers: dict[str, str], body: Any) -> None:
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            self.send_response(status)
            # A profile's reply may name its own content type (ollama's plain-text 404).
            self.send_header("content-type", headers.get("content-type", "application/json"))
            self.send_header("content-length", str(len(data)))
            for key, value in headers.items():
                if key != "content-type":
                    self.send_header(key, str(value))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _streamed(body: Any, completion: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    """The 200 answer to a Chat Completions request: whole, or as events when it streams."""
    if isinstance(body, dict) and body.get("stream") is True:
        events = completion_events(completion, include_usage=wants_usage(body))
        return 200, {"content-type": "text/event-stream"}, events.decode()
    return 200, {}, completion


@contextmanager
def running(script: list[dict[str, Any]] | None = None, **options: Any) -> Iterator[str]:
    """Run a fake server for the duration of a `with` block, yielding its base URL."""
    with FakeLLMServer(script, **options) as server:
        yield server.base_url


def main(argv: list[str] | None = None) -> int:
    """Subprocess entry point: serve until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port-file", type=Path, required=True, help="write the bound port here")
    parser.add_argument("--script", type=Path, help="JSON list of steps")
    parser.add_argument("--log", type=Path, help="append every request here as JSONL")
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds from a request's arrival to its reply"
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--gate", type=Path, help="hold every reply until this file exists")
    parser.add_argument("--strict", action="store_true", help="refuse as the real APIs do")
    parser.add_argument("--profile", choices=sorted(PROFILES), help="answer like this local server")
    parser.add_argument("--context-window", type=int, help="the profile's context window in tokens")
    parser.add_argument(
        "--reasoning-model",
        action="append",
        default=[],
        help="strict mode: treat model names matching this glob as OpenAI reasoning models",
    )
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8")) if args.script else []
    server = FakeLLMServer(
        script,
        latency=args.latency,
        log_path=args.log,
        port=args.port,
        gate=args.gate,
        strict=args.strict,
        reasoning_models=args.reasoning_model,
        profile=args.profile,
        context_window=args.context_window,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with server:
        # Atomic: a reader polling for the file never sees a half-written port.
        partial = args.port_file.with_suffix(".tmp")
        partial.write_text(str(server.port), encoding="utf-8")
        partial.replace(args.port_file)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
