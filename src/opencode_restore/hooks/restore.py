"""The SessionStart answer of ``opencode-restore hook``: the restoration as context.

Claude Code runs SessionStart hooks with ``source`` startup, resume, clear or compact;
Gemini CLI with startup, resume or clear. For the sources in ``[hooks] restore_on``
(default compact, clear, resume) the hook restores a session and prints the hook's JSON
output, ``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext":
...}}``, with ``restore --format prompt`` as the context; both agents read that shape.

* compact, resume: the session the payload names (its chain in the store);
* clear, startup: the session before it in the same directory (the store's most
  recently active other session of that cwd and agent; the agents' default locations
  are scanned when the store knows none).

The restore runs as a child process (its own session, so it outlives the hook) with
the configured provider; the hook waits for it at most ``[hooks] budget_seconds``. Past
that it prints nothing: the child goes on and saves the journal, so the next
SessionStart costs little. Nothing but the JSON ever reaches stdout; every problem is one
line in ``hook.log``, and the agent always sees exit 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from ..config import load_config
from ..store import open_store
from ..store.discovery import AGENTS, scan
from ..store.lookup import cwd_variants
from ..store.store import SessionRow, Store


def _source(payload: dict[str, Any]) -> str | None:
    # Gemini CLI documents `source`; some builds sent `trigger`.
    value = payload.get("source") or payload.get("trigger")
    return value if isinstance(value, str) else None


def previous_session(store: Store, agent: str, cwd: str | None, current: str) -> SessionRow | None:
    """The most recently active session of ``cwd`` and ``agent`` other than ``current``."""
    if not cwd:
        return None
    for attempt in range(2):
        rows, _ = store.sessions(agent=agent, cwds=cwd_variants(cwd), limit=20)
        for row in rows:
            if row.id != current and row.native_log_file:
                return store.session(row.id)
        if attempt == 0 and agent in AGENTS:
            scan(store, agent=agent)
    return None


def _target(store: Store, payload: dict[str, Any], source: str, log: Any) -> SessionRow | None:
    session_id = payload.get("session_id")
    agent = payload.get("_agent")
    cwd = payload.get("cwd")
    if not isinstance(session_id, str) or not isinstance(agent, str):
        return None
    if source in ("clear", "startup"):
        row = previous_session(store, agent, cwd if isinstance(cwd, str) else None, session_id)
        if row is None:
            log(f"SessionStart {source}: no earlier {agent} session of {cwd!r} in the store")
        return row
    row = store.session(session_id)
    if row is None or not row.files:
        log(f"SessionStart {source}: session {session_id} has no transcript in the store")
        return None
    return row


def restore_command(row: SessionRow) -> list[str]:
    """The child that restores ``row``: this interpreter, quiet, prompt format, to stdout."""
    paths = [f.path for f in row.files]
    return [
        sys.executable,
        "-m",
        "opencode_restore",
        "restore",
        *paths,
        "--agent",
        row.agent,
        "--format",
        "prompt",
        "-q",
    ]


def run_restore(command: list[str], budget: float, log_path: str) -> tuple[str | None, str]:
    """The child's stdout when it finishes within ``budget`` seconds, or None and why not.

    The child keeps running past the budget (own session; its output pipe is simply
    closed when the hook exits), so the journal is saved for the next time.
    """
    with open(log_path, "ab") as errors:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            start_new_session=True,
        )
    try:
        out, _ = child.communicate(timeout=budget)
    except subprocess.TimeoutExpired:
        return None, f"not done within {budget:g} s; it goes on in the background"
    if child.returncode not in (0, 1):  # 1: some turns failed, the summary says which
        return None, f"restore exited with {child.returncode} (its error is above)"
    text = out.decode("utf-8", "replace").strip()
    return (text, "") if text else (None, "restore printed nothing")


def answer_session_start(
    payload: dict[str, Any], agent: str, directory: str, out: IO[str], log: Any
) -> None:
    """Print the SessionStart answer for ``payload`` to ``out`` (or nothing)."""
    source = _source(payload)
    config = load_config()
    if source not in config.hooks.restore_on:
        return
    store = open_store(Path(directory))
    try:
        row = _target(store, {**payload, "_agent": agent}, source, log)
    finally:
        store.close()
    if row is None:
        return
    missing = [f.path for f in row.files if not os.path.isfile(f.path)]
    if missing:
        log(f"SessionStart {source}: transcript of {row.id} not readable: {missing[0]}")
        return
    log_path = os.path.join(directory, "hook.log")
    text, why = run_restore(restore_command(row), config.hooks.budget_seconds, log_path)
    if text is None:
        log(f"SessionStart {source}: no restoration of {row.id}: {why}")
        return
    answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    out.write(json.dumps(answer, ensure_ascii=False))
    out.flush()
