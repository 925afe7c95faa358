"""Helpers for the Claude tree loop tests: a hard deadline and hand-made log lines."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import orjson

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Session
from opencode_restore.sources.claude_code.reader import READER


class Hung(Exception):
    """The code under test ran past its deadline."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``Hung`` in the main thread if the block runs longer than ``seconds``.

    A parent loop hangs in pure Python, so a signal interrupts it between bytecodes:
    a regression fails the test (with the stuck frame in the traceback) instead of
    spinning, and eating memory, until CI kills the job.
    """

    def fire(signum: int, frame: FrameType | None) -> None:
        raise Hung(f"still running after {seconds}s")

    started = time.monotonic()
    old = signal.signal(signal.SIGALRM, fire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer:  # an enclosing deadline keeps running
            left = outer - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))


def entry(
    uid: str, parent: str | None, kind: str = "user", side: bool = False, **extra: Any
) -> dict[str, Any]:
    """One chain line: a prompt (``user``), a reply (``assistant``) or a hook ``progress``."""
    line: dict[str, Any] = {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": "S"}
    if side:
        line["isSidechain"] = True
    if kind == "user":
        line["message"] = {"role": "user", "content": f"prompt {uid}"}
    elif kind == "assistant":
        line["message"] = {"id": f"msg-{uid}", "content": [{"type": "text", "text": uid}]}
    elif kind == "progress":
        line["data"] = {"type": "hook_progress"}
    return line | extra


def boundary(uid: str, logical: str | None, preserved: list[str] | None = None) -> dict[str, Any]:
    """A compact boundary: ``parentUuid`` null, its predecessor named by ``logical``."""
    meta: dict[str, Any] = {"trigger": "auto", "preTokens": 1000}
    if preserved is not None:
        meta["preservedMessages"] = {"uuids": preserved}
    line = entry(uid, None, "system", subtype="compact_boundary", compactMetadata=meta)
    line["content"] = "Conversation compacted"
    if logical is not None:
        line["logicalParentUuid"] = logical
    return line


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    """Write ``lines`` as JSONL and return ``path``."""
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def read_within(files: list[Path], seconds: float = 5.0) -> tuple[Session, WarningSink]:
    """Read a chain both ways under a deadline; the stream must match the live path."""
    sink = WarningSink()
    with deadline(seconds):
        session = READER.read(files, sink)
        streamed = [m.id for m in READER.iter_messages(files, WarningSink())]
    assert streamed == [m.id for m in session.messages()]
    return session, sink


def all_messages(session: Session) -> list[str]:
    """Message ids of every span (branches and sub-agents too), depth first."""
    return [m.id for span in session.timeline.root.walk() for m in span.messages()]
