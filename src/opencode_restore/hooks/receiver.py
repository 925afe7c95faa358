"""``opencode-restore hook``: record an agent's session and transcript path from a hook.

Agents run this on their own events, so it must be quick and must never get in
the way: it imports only light standard modules (no ``pathlib``, ``dataclasses``,
pydantic or SDKs; ``python -X importtime`` shows the list) and the store's SQLite
module, prints nothing on stdout but a restoration answer (``hooks.restore``; Claude Code
adds a hook's stdout to the context, Gemini CLI parses it as JSON), and exits 0. Problems
go to ``hook.log`` in the data directory; when it cannot be written (an unwritable data
dir), to stderr as one line, with exit code 1 (both agents show it and go on).

Payloads understood:

* Claude Code hooks (stdin JSON): ``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name`` (SessionStart, UserPromptSubmit, PreCompact, Stop, SessionEnd, ...).
* Gemini CLI hooks (stdin JSON, same common fields; events such as BeforeAgent,
  AfterAgent, PreCompress) – told apart by event name, a transcript under
  ``~/.gemini`` or ``--agent gemini``.
* A restoration is answered on stdout (``hooks.restore``: Claude Code's SessionStart
  compact/clear and UserPromptSubmit, Gemini CLI's BeforeAgent after a SessionStart
  resume/clear, a ``/compress`` or an automatic compression its chat file recorded);
  that JSON is the only thing this module ever prints.
* The opencode plugin (``--agent opencode``, JSON as the last argument): ``session_id``,
  ``cwd``, ``hook_event_name`` ``session.compacted``; the transcript is opencode's store
  (``opencode_store``).
* Codex 0.171 hooks (``$CODEX_HOME/hooks.json``, ``--agent codex``, stdin JSON): Claude
  Code's fields, ``transcript_path`` the rollout; answered as Claude Code's.
* Codex ``notify`` (JSON as the last argument): ``{"type": "agent-turn-complete",
  "thread-id": ..., "cwd": ..., "input-messages": [...]}``. It names no file, so the
  rollout ``rollout-*-<thread-id>.jsonl`` is looked up under ``$CODEX_HOME/sessions``
  (default ``~/.codex``), today's and yesterday's folders first.

A payload is untrusted: whatever it names as the transcript becomes a file the store
(and the API's ``/messages``) will read. So a path is recorded only when it is under the
user's home folder or the agent's own folder (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``,
``$XDG_DATA_HOME/opencode``), is
named as the agent names its transcripts, and, once it exists, is a regular file whose
start the agent's reader accepts (``transcript_refusal``); otherwise the session is
recorded without it and ``hook.log`` says why. The place is checked again whenever the
file is read (``store.transcript_paths``): it may not exist yet, or be a symlink that is
re-pointed later.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from ..dirs import make_private_dirs
from ..fields import non_empty
from ..store.db import DB_NAME, connect, now_iso, record_transcript
from ..store.paths import data_dir_str
from ..store.transcript_paths import kind_refusal, place_refusal
from ..titles import short_title

LOG_NAME = "hook.log"
#: The first line read to check a JSONL transcript's start (a longer one is not parsed).
_HEAD_BYTES = 1 << 20
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Event names only Gemini CLI sends (both agents send SessionStart / SessionEnd).
_GEMINI_EVENTS = frozenset(
    {
        "BeforeAgent",
        "AfterAgent",
        "BeforeModel",
        "AfterModel",
        "BeforeTool",
        "AfterTool",
        "BeforeToolSelection",
        "PreCompress",
    }
)


class HookEvent:
    """What a hook payload tells the store (a plain class: ``dataclasses`` is slow to import)."""

    __slots__ = ("agent", "cwd", "event", "session_id", "title", "transcript_path")

    def __init__(
        self,
        session_id: str,
        agent: str,
        transcript_path: str | None,
        cwd: str | None,
        event: str | None,
        title: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.agent = agent
        self.transcript_path = transcript_path
        self.cwd = cwd
        self.event = event
        self.title = title

    def _key(self) -> tuple[str | None, ...]:
        return (self.session_id, self.agent, self.transcript_path, self.cwd, self.event, self.title)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HookEvent) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"HookEvent{self._key()!r}"


def _agent_of(payload: dict[str, Any], hint: str | None) -> str:
    if hint:
        return hint
    event = payload.get("hook_event_name")
    path = non_empty(payload.get("transcript_path")) or ""
    if event in _GEMINI_EVENTS or "/.gemini/" in path:
        return "gemini"
    if "/.codex/" in path:
        return "codex"
    return "claude-code"


def codex_rollout(thread_id: str, env: dict[str, str] | None = None) -> str | None:
    """The rollout file of Codex thread ``thread_id``, or None when not found."""
    if not thread_id.replace("-", "").replace("_", "").isalnum():
        return None  # a thread id is a UUID; anything else would steer the glob
    from pathlib import Path  # only Codex needs a directory search

    env = dict(os.environ) if env is None else env
    home = Path(env.get("CODEX_HOME") or os.path.expanduser("~/.codex"))
    pattern = f"rollout-*{thread_id}.jsonl"
    now = time.time()
    days = {
        time.strftime("%Y/%m/%d", clock(now - back))
        for back in (0, 86400)
        for clock in (time.gmtime, time.localtime)
    }
    for day in sorted(days, reverse=True):
        found = sorted((home / "sessions" / day).glob(pattern))
        if found:
            return str(found[-1])
    for root in (home / "sessions", home / "archived_sessions"):
        found = sorted(root.rglob(pattern))
        if found:
            return str(found[-1])
    return None


def opencode_store(env: dict[str, str] | None = None) -> str | None:
    """opencode's session store: ``opencode.db`` (1.x) or the ``storage`` tree, or None.

    The opencode plugin names only the session; opencode keeps every session in one
    store under ``$XDG_DATA_HOME/opencode`` (default ``~/.local/share/opencode``).
    """
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    root = os.path.join(base, "opencode")
    for candidate, exists in (("opencode.db", os.path.isfile), ("storage", os.path.isdir)):
        path = os.path.join(root, candidate)
        if exists(path):
            return path
    return None


def parse_payload(payload: Any, agent: str | None = None) -> HookEvent | None:
    """The event a hook payload describes, or None when it names no session."""
    if not isinstance(payload, dict):
        return None
    if payload.get("type") == "agent-turn-complete" or "thread-id" in payload:
        thread = non_empty(payload.get("thread-id")) or non_empty(payload.get("thread_id"))
        if thread is None:
            return None
        return HookEvent(
            session_id=thread,
            agent=agent or "codex",
            transcript_path=codex_rollout(thread),
            cwd=non_empty(payload.get("cwd")),
            event=non_empty(payload.get("type")),
            title=short_title(payload.get("input-messages")),
        )
    session_id = non_empty(payload.get("session_id"))
    if session_id is None:
        return None
    path = non_empty(payload.get("transcript_path"))
    if path is None and agent == "opencode":
        path = opencode_store()
    return HookEvent(
        session_id=session_id,
        agent=_agent_of(payload, agent),
        transcript_path=os.path.abspath(path) if path else None,
        cwd=non_empty(payload.get("cwd")),
        event=non_empty(payload.get("hook_event_name")),
        title=short_title(payload.get("prompt")),
    )


def _start_refusal(path: str, suffix: str) -> str | None:
    """Why the reader would not take the file's first bytes, or None when it would."""
    with open(path, "rb") as fh:
        head = fh.readline(_HEAD_BYTES)
    if suffix == ".db":
        return None if head.startswith(_SQLITE_MAGIC) else "not an SQLite database"
    start = head.lstrip()
    if not start:
        return None  # being written
    if not start.startswith(b"{"):
        return "does not start with a JSON object"
    if suffix == ".json" or not head.endswith(b"\n"):
        return None  # a pretty-printed document, or a first line longer than the head
    try:
        first = json.loads(head)
    except ValueError:
        return "its first line is not JSON"
    return None if isinstance(first, dict) else "its first line is not a JSON object"


def transcript_refusal(path: str, agent: str, env: dict[str, str] | None = None) -> str | None:
    """Why a hook may not register ``path`` as ``agent``'s transcript; None when it may.

    A transcript that does not exist yet (SessionStart comes before the first write) is
    judged by its place and name alone.
    """
    why, real, suffix = place_refusal(path, agent, env)
    if why is not None or suffix is None:
        return why
    why = kind_refusal(real, suffix)
    if why is not None or suffix.endswith("storage") or not os.path.isfile(real):
        return why
    try:
        return _start_refusal(real, suffix)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"


def _excerpt(payload: Any) -> str:
    """The start of a payload for the log, its decoded strings redacted before encoding."""
    from ..redact import Redactor, redact_value

    redactor = Redactor()
    return json.dumps(redact_value(payload, redactor.redact), ensure_ascii=False)[:200]


def _log(directory: str, message: str) -> bool:
    """Append ``message`` to ``hook.log``; False when it cannot be written."""
    # A problem line may quote the payload (a prompt, a transcript path): redacted.
    # Imported here, as problems are rare and the receiver must start fast.
    from ..redact import redact

    message = redact(message)[0]
    try:
        make_private_dirs(directory)
        with open(os.path.join(directory, LOG_NAME), "a", encoding="utf-8") as fh:
            fh.write(f"{now_iso()} pid {os.getpid()} {message}\n")
    except OSError:
        return False
    return True


def record(event: HookEvent, directory: str) -> bool:
    """Write ``event`` to the store in ``directory``; True when a new file joined the chain."""
    conn = connect(os.path.join(directory, DB_NAME))
    try:
        if event.title is not None:
            # The first title stays: a session that has one (every prompt after the first)
            # does not pay for redacting another (the patterns take ~40 ms to import).
            row = conn.execute("SELECT title FROM sessions WHERE id = ?", (event.session_id,))
            found = row.fetchone()
            if found is not None and found[0]:
                event.title = None
        return record_transcript(
            conn,
            event.session_id,
            event.agent,
            event.transcript_path,
            cwd=event.cwd,
            title=event.title,
            event=event.event,
            source="hook",
        )
    finally:
        conn.close()


#: The events that may be answered with a restoration (``hooks.restore``).
_ANSWERED = frozenset(
    {"SessionStart", "UserPromptSubmit", "PreCompact", "BeforeAgent", "PreCompress"}
)


def run(agent: str | None, payload_text: str | None, *, memory: bool = False) -> int:
    """Handle one hook call; 0, or 1 when a problem could not be written to ``hook.log``.

    ``memory``: a fresh session is answered with the project's digest (``hooks.memory``).

    Nothing is ever raised: a problem is one line in ``hook.log``. When that file cannot be
    written (an unwritable data dir) the line goes to stderr and the exit code is 1, which
    both agents show as a hook error without stopping.
    """
    directory = data_dir_str()
    unlogged: list[str] = []

    def log(message: str) -> None:
        line = " ".join(message.split())
        if not _log(directory, line):
            unlogged.append(line)

    try:
        if payload_text is None:
            payload_text = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
        if not payload_text.strip():
            log("empty hook payload; nothing recorded")
            return _exit(unlogged, directory)
        try:
            payload = json.loads(payload_text)
        except ValueError as exc:
            log(f"the hook payload is not JSON ({exc}): {payload_text[:80]!r}")
            return _exit(unlogged, directory)
        event = parse_payload(payload, agent)
        if event is None:
            log(f"hook payload names no session: {_excerpt(payload)}")
            return _exit(unlogged, directory)
        if event.transcript_path is None:
            log(f"{event.agent} session {event.session_id}: no transcript path found")
        else:
            refusal = transcript_refusal(event.transcript_path, event.agent)
            if refusal is not None:
                log(
                    f"{event.agent} session {event.session_id}: transcript "
                    f"{event.transcript_path!r} not registered: {refusal}"
                )
                event.transcript_path = None
        try:
            record(event, directory)
        except Exception as exc:
            log(f"cannot write the store in {directory}: {type(exc).__name__}: {exc}")
            return _exit(unlogged, directory)
        if event.event in _ANSWERED and event.agent in ("claude-code", "codex", "gemini"):
            # Only here is the restore imported; it reads the config only when the event's
            # source may restore something, so every other event stays cheap.
            from .restore import SettingsProblem, answer

            if event.agent == "gemini":
                payload["transcript_path"] = event.transcript_path  # None when refused above
            try:
                answer(payload, event.agent, event.event, directory, sys.stdout, log, memory=memory)
            except SettingsProblem as exc:
                log(str(exc))
    except Exception as exc:  # a hook must never fail the agent
        log(f"{type(exc).__name__}: {exc}")
    return _exit(unlogged, directory)


def _exit(unlogged: list[str], directory: str) -> int:
    if not unlogged:
        return 0
    where = os.path.join(directory, LOG_NAME)
    sys.stderr.write(f"opencode-restore hook: {unlogged[0]} (and {where} cannot be written)\n")
    sys.stderr.flush()
    return 1


_USAGE = """\
Usage: opencode-restore hook [--agent claude-code|codex|gemini|opencode] [--memory] [JSON]

Record an agent's hook event in the session store. The event is read from JSON (Codex's
`notify` passes it as the last argument) or from stdin (Claude Code and Gemini CLI hooks).
With --memory, a fresh session's start is answered with a digest of the project's recent
sessions (from their saved restorations).
Problems go to hook.log in the data folder, and exit 0 never disturbs the agent; when
hook.log cannot be written the problem is one line on stderr and the exit code is 1.
"""


def main(argv: list[str] | None = None) -> int:
    """``python -m opencode_restore.hooks [--agent NAME] [JSON]`` (the fastest entry point)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--help"], ["-h"]):
        sys.stdout.write(_USAGE)
        return 0
    agent = None
    memory = False
    while args:
        if len(args) >= 2 and args[0] == "--agent":
            agent, args = args[1], args[2:]
        elif args[0].startswith("--agent="):
            agent, args = args[0].split("=", 1)[1], args[1:]
        elif args[0] == "--memory":
            memory, args = True, args[1:]
        else:
            break
    return run(agent, args[-1] if args else None, memory=memory)
