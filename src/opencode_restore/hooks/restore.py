"""What ``opencode-restore hook`` answers: the restoration, once, where each agent reads it.

The restoration is ``restore --format prompt`` of a session, run as a child process (its
own session, so it outlives the hook) with the configured provider, written atomically to
``DATA_DIR/hooks/<agent>-<session>.prompt``. When the hook cannot hand it over at once, a
*pending* note beside it (``.pending``: the child's pid, the source) says that the next
event of that session delivers it; delivering takes the note first (a rename), so a
restoration reaches the model exactly once.

Claude Code (SessionStart sources startup, resume, clear, compact; measured on 2.1.332):

* compact: the session the payload names, its restore started at PreCompact (while the
  model writes the compaction summary); clear (and startup, when configured): the session
  before it in the same directory. The hook waits for the child at most ``[hooks]
  budget_seconds`` and answers ``{"hookSpecificOutput": {"hookEventName": "SessionStart",
  "additionalContext": ...}}``; past the budget it answers nothing, the child goes on and
  the next ``UserPromptSubmit`` of the session delivers its restoration.
* resume (``--resume``, ``--continue``): Claude Code reloads the whole conversation, the
  restorations it already holds included, so nothing is added; only a transcript that holds
  no conversation (not written, emptied) gets one.

Gemini CLI 0.61 (SessionStart sources startup, resume, clear): ``/clear`` reads only a
SessionStart's ``systemMessage`` and PreCompress's answer is ignored, but BeforeAgent's
``hookSpecificOutput.additionalContext`` is appended to the prompt. So SessionStart
(resume, clear) and PreCompress (installed for ``/compress`` only: 0.61 fires
PreCompress(auto) before every model request, and waits) start the child and leave the
note, answering nothing; the next BeforeAgent waits for the child within the budget and
delivers (past it, the one after). The appended context is kept in the history that
``--resume`` reloads, so a resume whose transcript already holds a restoration gets none.
Gemini's automatic compression (past its token threshold, checked before every model
request) fires no hook worth installing, so each BeforeAgent (once per prompt) reads the
bytes the chat file gained since the last look (``.seen``: its offset, the compressions
known) for a new compression checkpoint (``gemini_compressed``); one found is restored
and delivered there, within the budget (past it, at the next BeforeAgent). A note already
due (resume, clear, ``/compress``) covers a compression found with it: one restoration.

Codex 0.171 (``$CODEX_HOME/hooks.json``, Claude Code's shape; SessionStart sources startup,
resume, clear, compact): SessionStart answers as Claude Code's does, PreCompact starts the
restore early, UserPromptSubmit delivers one that outran the budget. Codex keeps the
context in its history (a developer message in the rollout) and drops it at a compaction,
so compact and resume are answered only when the rollout holds no restoration after its
last ``compacted`` line and none was delivered since (``.delivered``: the rollout's size
then; an ``exec resume`` that compacts fires SessionStart resume and compact back to back,
before the first is written).

Nothing is imported here before the source is known to restore something: the settings
are read with ``tomllib`` (``hook_settings``), the store and the restore only when needed.
Nothing but the answer ever reaches stdout; every problem is one line in ``hook.log``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

from .memory import DEFAULT_MEMORY_TOKENS, MEMORY_AGENTS, memory_digest

if TYPE_CHECKING:
    import subprocess

    from ..store.store import SessionRow, Store

Log = Callable[[str], None]

SOURCES = ("startup", "resume", "clear", "compact")
DEFAULT_RESTORE_ON = ("compact", "clear", "resume")
#: Seconds an agent waits for a restoration at most (``[hooks] budget_seconds``).
DEFAULT_BUDGET = 8.0
#: The folder under the data dir holding prepared restorations and pending notes.
FOLDER = "hooks"
#: A pending note older than this is dropped (its restoration is stale).
PENDING_MAX_AGE = 6 * 3600.0
#: How much of a Claude transcript is searched for a conversation line.
_RELOADED_SCAN = 8 << 20
#: How much of a Gemini transcript is searched for an earlier restoration.
_RESTORED_SCAN = 256 << 20
#: How every restoration starts (``report`` ``--format prompt``).
MARK = "# Restored context: earlier"
MARK_BYTES = MARK.encode()
_POLL = 0.05
#: The smallest ``[hooks] memory_tokens``: the digest's framing alone takes ~90.
MIN_MEMORY_TOKENS = 200


class HookSettings:
    """``[hooks]`` of the config, read without the config's imports (pydantic)."""

    __slots__ = ("budget", "memory_at_start", "memory_tokens", "restore_on")

    def __init__(
        self,
        restore_on: frozenset[str],
        budget: float,
        memory_at_start: frozenset[str] = frozenset(),
        memory_tokens: int = DEFAULT_MEMORY_TOKENS,
    ) -> None:
        self.restore_on = restore_on
        self.budget = budget
        self.memory_at_start = memory_at_start
        self.memory_tokens = memory_tokens


class SettingsProblem(ValueError):
    """The user's config cannot be read: the hook restores nothing and says why."""


def _names(value: Any, where: str, key: str, known: tuple[str, ...], what: str) -> frozenset[str]:
    """A list setting of names out of ``known``: a TOML list, or JSON / commas in a variable."""
    if isinstance(value, str):
        text = value.strip()
        value = json.loads(text) if text.startswith("[") else text.split(",")
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SettingsProblem(f"{where}: hooks.{key} is not a list of {what}s")
    names = frozenset(x.strip() for x in value if x.strip())
    unknown = names - set(known)
    if unknown:
        raise SettingsProblem(f"{where}: hooks.{key}: unknown {what} {sorted(unknown)[0]!r}")
    return names


def _restore_on(value: Any, where: str) -> frozenset[str]:
    return _names(value, where, "restore_on", SOURCES, "source")


def _memory_at_start(value: Any, where: str) -> frozenset[str]:
    return _names(value, where, "memory_at_start", MEMORY_AGENTS, "agent")


def _memory_tokens(value: Any, where: str) -> int:
    try:
        tokens = int(value)
    except (TypeError, ValueError):
        raise SettingsProblem(f"{where}: hooks.memory_tokens is not a whole number") from None
    if tokens < MIN_MEMORY_TOKENS:
        raise SettingsProblem(f"{where}: hooks.memory_tokens must be at least {MIN_MEMORY_TOKENS}")
    return tokens


def _budget(value: Any, where: str) -> float:
    try:
        budget = float(value)
    except (TypeError, ValueError):
        raise SettingsProblem(f"{where}: hooks.budget_seconds is not a number") from None
    if not budget > 0:
        raise SettingsProblem(f"{where}: hooks.budget_seconds must be above 0")
    return budget


def hook_settings(env: Mapping[str, str] | None = None) -> HookSettings:
    """``restore_on`` and ``budget_seconds``: ``OPENCODE_RESTORE_HOOKS_*``, else the user's
    file, else the defaults (as ``load_config`` merges them)."""
    env = os.environ if env is None else env
    from ..dirs import user_config_path

    section: dict[str, Any] = {}
    path = user_config_path()
    if os.path.isfile(path):
        import tomllib

        try:
            with open(path, "rb") as fh:
                hooks = tomllib.load(fh).get("hooks")
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SettingsProblem(f"ConfigError: {path}: invalid TOML ({exc})") from None
        if hooks is not None and not isinstance(hooks, dict):
            raise SettingsProblem(f"ConfigError: {path}: [hooks] is not a table")
        section = hooks or {}
    values: dict[str, Any] = {
        "restore_on": frozenset(DEFAULT_RESTORE_ON),
        "budget_seconds": DEFAULT_BUDGET,
        "memory_at_start": frozenset(),
        "memory_tokens": DEFAULT_MEMORY_TOKENS,
    }
    readers: dict[str, Callable[[Any, str], Any]] = {
        "restore_on": _restore_on,
        "budget_seconds": _budget,
        "memory_at_start": _memory_at_start,
        "memory_tokens": _memory_tokens,
    }
    for key, read in readers.items():
        if key in section:
            values[key] = read(section[key], path)
        name = f"OPENCODE_RESTORE_HOOKS_{key.upper()}"
        if env.get(name):
            values[key] = read(env[name], name)
    return HookSettings(
        values["restore_on"],
        values["budget_seconds"],
        values["memory_at_start"],
        values["memory_tokens"],
    )


def source_of(payload: dict[str, Any]) -> str | None:
    """SessionStart's ``source`` (some Gemini builds sent ``trigger``)."""
    value = payload.get("source") or payload.get("trigger")
    return value if isinstance(value, str) else None


def _holds(path: str | None, needles: tuple[bytes, ...], limit: int) -> bool | None:
    """Whether the file at ``path`` holds one of ``needles`` in its first ``limit`` bytes
    (None: not found that far; False: the file ends, or cannot be read, before)."""
    if not path:
        return False
    try:
        with open(path, "rb") as fh:
            tail = b""
            read = 0
            while read < limit:
                block = fh.read(1 << 20)
                if not block:
                    return False
                read += len(block)
                window = tail + block
                if any(needle in window for needle in needles):
                    return True
                tail = block[-64:]
    except OSError:
        return False
    return None


def conversation_in(path: str | None) -> bool:
    """True when the Claude transcript at ``path`` holds a user or assistant message."""
    found = _holds(path, (b'"type":"user"', b'"type":"assistant"'), _RELOADED_SCAN)
    return found is not False  # a long transcript without one in its start: a conversation


def codex_restored(path: str | None, directory: str, session_id: str) -> bool:
    """True when Codex session ``session_id`` already holds a restoration in its model
    context: its rollout holds one after its last compaction, or one was delivered after it."""
    compacted, restored = 0, False
    if path:
        try:
            with open(path, "rb") as fh:
                offset = 0
                for line in fh:
                    offset += len(line)
                    if b'"type":"compacted"' in line[:160]:
                        compacted, restored = offset, False
                    elif MARK_BYTES in line:
                        restored = True
        except OSError:
            return False
    if restored:
        return True
    try:
        with open(delivered_path(directory, "codex", session_id), encoding="utf-8") as fh:
            size = int(json.load(fh)["size"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return size >= compacted


def restoration_in(path: str | None) -> bool:
    """True when the transcript at ``path`` already holds a restoration (Gemini CLI keeps
    BeforeAgent's context in the history it reloads on ``--resume``)."""
    return bool(_holds(path, (MARK.encode(),), _RESTORED_SCAN))


# -- Gemini's automatic compression, read from the chat file ------------------------------

#: The model turn Gemini CLI 0.61 puts after a compression's summary (``ChatCompressionService``).
GEMINI_ACK = "Got it. Thanks for the additional context!"
SNAPSHOT = "<state_snapshot>"
_CHECKPOINT_MARKS = (GEMINI_ACK.encode(), SNAPSHOT.encode())
#: How many compression ids are remembered per session.
_SEEN_IDS = 64


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def compressions_in(data: bytes) -> list[str]:
    """The ids of the compression summaries in the ``$set.messages`` checkpoints of ``data``
    (whole JSONL lines): a user message followed by Gemini's acknowledgement, or starting with
    ``<state_snapshot>``. A resume restates them under the same ids."""
    found: list[str] = []
    pos = 0
    while True:
        hits = [i for i in (data.find(m, pos) for m in _CHECKPOINT_MARKS) if i >= 0]
        if not hits:
            return found
        hit = min(hits)
        start = data.rfind(b"\n", 0, hit) + 1
        end = data.find(b"\n", hit)
        end = len(data) if end < 0 else end
        pos = end + 1
        line = data[start:end]
        if b'"$set"' not in line[:16]:
            continue  # a message that quotes them, not a checkpoint
        try:
            messages = json.loads(line)["$set"]["messages"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(messages, list):
            continue
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("type") != "user":
                continue
            after = messages[i + 1] if i + 1 < len(messages) else None
            acked = isinstance(after, dict) and _text(after.get("content")).strip() == GEMINI_ACK
            summary = _text(message.get("content")).lstrip().startswith(SNAPSHOT)
            mid = message.get("id")
            if (acked or summary) and isinstance(mid, str) and mid not in found:
                found.append(mid)


def gemini_compressed(path: str | None, directory: str, session_id: str) -> bool:
    """True when the chat file at ``path`` recorded a compression since the last look.

    Only the bytes appended since are read (up to the last whole line); the offset and the
    compression ids seen are kept in ``.seen``. The first look at a session learns what
    the file holds and reports nothing; a file that shrank or was replaced is read again
    from its start, and only ids not seen before count.
    """
    if not path or not path.endswith(".jsonl"):
        return False
    try:
        info = os.stat(path)
    except OSError:
        return False
    note = seen_path(directory, "gemini", session_id)
    known: list[str] | None = None
    offset = 0
    try:
        with open(note, encoding="utf-8") as fh:
            state = json.load(fh)
        known = [str(x) for x in state["ids"]]
        if state["path"] == path and state["ino"] == info.st_ino:
            offset = int(state["offset"])
    except (OSError, ValueError, KeyError, TypeError):
        known = None
    if offset > info.st_size:
        offset = 0  # rewritten shorter
    if known is not None and offset == info.st_size:
        return False
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(max(0, info.st_size - offset))
    except OSError:
        return False
    whole = data.rfind(b"\n") + 1  # a line being written is read next time
    found = compressions_in(data[:whole])
    new = [x for x in found if x not in (known or [])]
    ids = ((known or []) + new)[-_SEEN_IDS:]
    os.makedirs(os.path.dirname(note), mode=0o700, exist_ok=True)
    partial = f"{note}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as fh:
        json.dump({"path": path, "ino": info.st_ino, "offset": offset + whole, "ids": ids}, fh)
    os.replace(partial, note)
    return known is not None and bool(new)


# -- the prepared restoration and its pending note ---------------------------------------


def _key(agent: str, session_id: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)[:128]
    return f"{agent}-{safe.lstrip('.')}"


def prepared_path(directory: str, agent: str, session_id: str) -> str:
    """Where the child writes the restoration that session ``session_id`` is due."""
    return os.path.join(directory, FOLDER, _key(agent, session_id) + ".prompt")


def pending_path(directory: str, agent: str, session_id: str) -> str:
    """The note that session ``session_id`` is due a restoration."""
    return os.path.join(directory, FOLDER, _key(agent, session_id) + ".pending")


def seen_path(directory: str, agent: str, session_id: str) -> str:
    """How far BeforeAgent read session ``session_id``'s chat file, and what it found."""
    return os.path.join(directory, FOLDER, _key(agent, session_id) + ".seen")


def delivered_path(directory: str, agent: str, session_id: str) -> str:
    """The note that a restoration reached session ``session_id`` (Codex: the rollout's size)."""
    return os.path.join(directory, FOLDER, _key(agent, session_id) + ".delivered")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] != b"Z"  # a zombie has ended
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def restore_command(row: SessionRow, output: str) -> list[str]:
    """The child that restores ``row``: this interpreter, quiet, prompt format, to ``output``."""
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
        "-o",
        output,
    ]


def start_restore(command: list[str], log_path: str) -> subprocess.Popen[bytes]:
    """The restore child, in its own session (it outlives the hook); its errors to the log."""
    import subprocess  # only a restore pays for it

    with open(log_path, "ab") as errors:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )


def _read_prepared(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read().strip()
    except FileNotFoundError:
        return None
    with contextlib.suppress(OSError):
        os.unlink(path)
    return text


def _write_pending(
    path: str, pid: int, source: str, target: str, *, due: bool = True, created: float = 0.0
) -> None:
    note = {
        "pid": pid,
        "source": source,
        "target": target,
        "created": created or time.time(),
        "due": due,
    }
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as fh:
        json.dump(note, fh)
    os.replace(partial, path)


def collect(
    directory: str, agent: str, session_id: str, wait: float, log: Log, *, make_due: bool = False
) -> str | None:
    """The restoration session ``session_id`` is due, waiting for it at most ``wait`` s.

    None when none is due, or when it is not ready in time (then it stays due). The note
    is taken by a rename, so two hooks never deliver the same restoration. A note that
    is only prepared (Claude Code's PreCompact: the compaction may still fail) is not due
    until ``make_due`` (its SessionStart(compact)) makes it so.
    """
    note_path = pending_path(directory, agent, session_id)
    if not os.path.exists(note_path):
        return None
    taken = f"{note_path}.{os.getpid()}"
    try:
        os.rename(note_path, taken)
    except OSError:
        return None  # another hook took it
    try:
        with open(taken, encoding="utf-8") as fh:
            note = json.load(fh)
        pid, source = int(note["pid"]), str(note["source"])
        target, created = str(note["target"]), float(note["created"])
        due = bool(note.get("due", True)) or make_due
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log(f"{agent} session {session_id}: unreadable pending note dropped ({exc})")
        os.unlink(taken)
        return None
    if not due:
        os.replace(taken, note_path)
        return None
    output = prepared_path(directory, agent, session_id)
    deadline = time.monotonic() + wait
    while True:
        text = _read_prepared(output)
        if text is not None:
            os.unlink(taken)
            if not text:
                log(f"{source}: the restoration of {target} is empty")
            return text or None
        if not _alive(pid):
            # It may have written the file between the two looks.
            text = _read_prepared(output)
            if text:
                os.unlink(taken)
                return text
            os.unlink(taken)
            log(f"{source}: no restoration of {target}: the restore failed (its error is above)")
            return None
        if time.time() - created > PENDING_MAX_AGE:
            os.unlink(taken)
            log(f"{source}: the restoration of {target} was never ready; dropped")
            return None
        if time.monotonic() >= deadline:
            _write_pending(taken, pid, source, target, created=created)  # due from now on
            os.replace(taken, note_path)  # the next event delivers it
            if wait > 0:
                log(f"{source}: the restoration of {target} is not ready within {wait:g} s")
            return None
        time.sleep(_POLL)


def _answer(out: IO[str], event: str, text: str) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    out.write(json.dumps(answer, ensure_ascii=False))
    out.flush()


def _deliver(
    out: IO[str], event: str, text: str, payload: dict[str, Any], agent: str, directory: str
) -> None:
    """Answer ``text``; for Codex, note the rollout's size then (``codex_restored``)."""
    _answer(out, event, text)
    if agent != "codex":
        return
    path = payload.get("transcript_path")
    try:
        size = os.path.getsize(path) if isinstance(path, str) else 0
    except OSError:
        size = 0
    note = delivered_path(directory, agent, str(payload["session_id"]))
    os.makedirs(os.path.dirname(note), mode=0o700, exist_ok=True)
    partial = f"{note}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as fh:
        json.dump({"size": size, "created": time.time()}, fh)
    os.replace(partial, note)


# -- which session to restore -------------------------------------------------------------


def previous_session(store: Store, agent: str, cwd: str | None, current: str) -> SessionRow | None:
    """The most recently active session of ``cwd`` and ``agent`` other than ``current``."""
    from ..store.discovery import AGENTS, scan
    from ..store.paths import cwd_variants

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


def target(directory: str, payload: dict[str, Any], agent: str, source: str, log: Log) -> Any:
    """The session to restore for ``source`` (a ``SessionRow``), or None and a log line."""
    from pathlib import Path

    from ..store import open_store

    session_id = payload.get("session_id")
    cwd = payload.get("cwd")
    if not isinstance(session_id, str):
        return None
    store = open_store(Path(directory))
    try:
        if source in ("clear", "startup"):
            where = cwd if isinstance(cwd, str) else None
            row = previous_session(store, agent, where, session_id)
            if row is None:
                log(f"{source}: no earlier {agent} session of {cwd!r} in the store")
                return None
        else:
            row = store.session(session_id)
            if row is None or not row.files:
                log(f"{source}: session {session_id} has no transcript in the store")
                return None
    finally:
        store.close()
    missing = [f.path for f in row.files if not os.path.isfile(f.path)]
    if missing:
        log(f"{source}: transcript of {row.id} not readable: {missing[0]}")
        return None
    return row


# -- the events ---------------------------------------------------------------------------


def _prepare(
    directory: str, payload: dict[str, Any], agent: str, source: str, log: Log
) -> tuple[subprocess.Popen[bytes], str] | None:
    """Start restoring what ``source`` is due; the child and the target's id."""
    session_id = str(payload["session_id"])
    row = target(directory, payload, agent, source, log)
    if row is None:
        return None
    output = prepared_path(directory, agent, session_id)
    os.makedirs(os.path.dirname(output), mode=0o700, exist_ok=True)
    for stale in (output, pending_path(directory, agent, session_id)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)  # a newer event supersedes what was due
    child = start_restore(restore_command(row, output), os.path.join(directory, "hook.log"))
    return child, row.id


def start_memory(
    payload: dict[str, Any],
    directory: str,
    agent: str,
    settings: HookSettings,
    log: Log,
    *,
    wanted: bool = False,
) -> str | None:
    """The digest of the project's recent sessions a fresh session of ``agent`` starts
    with (``hooks.memory``), when memory is on for it (``wanted``: the hook's ``--memory``,
    else ``[hooks] memory_at_start``); None when off or when there is nothing to say."""
    if source_of(payload) != "startup" or not (wanted or agent in settings.memory_at_start):
        return None
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        log("startup: no cwd in the payload, so no memory of the project")
        return None
    return memory_digest(directory, cwd, str(payload["session_id"]), settings.memory_tokens)


def claude_session_start(
    payload: dict[str, Any],
    directory: str,
    out: IO[str],
    log: Log,
    settings: HookSettings,
    agent: str = "claude-code",
    *,
    memory: bool = False,
) -> None:
    """SessionStart of Claude Code: compact / clear (/ resume without a conversation); of
    Codex (``agent`` ``codex``): compact / clear / resume when no restoration is in its
    context yet. A startup with memory on (``memory``, or the settings) is answered with
    the project's digest, before the restoration when ``startup`` restores too."""
    digest = start_memory(payload, directory, agent, settings, log, wanted=memory)
    restored = _session_start_restoration(payload, directory, log, settings, agent)
    text = "\n\n".join(x for x in (digest, restored) if x)
    if text:
        _deliver(out, "SessionStart", text, payload, agent, directory)


def _session_start_restoration(
    payload: dict[str, Any], directory: str, log: Log, settings: HookSettings, agent: str
) -> str | None:
    """The restoration a SessionStart is answered with, or None (see ``claude_session_start``)."""
    source = source_of(payload)
    if source not in settings.restore_on:
        return None
    session_id = str(payload["session_id"])
    transcript = payload.get("transcript_path")
    if agent == "codex":
        if source in ("resume", "compact") and codex_restored(transcript, directory, session_id):
            return None  # Codex holds one in its history since its last compaction
    elif source == "resume" and conversation_in(transcript):
        return None  # Claude Code reloaded the conversation, and the restorations it holds
    early = ("compact", "resume") if agent == "codex" else ("compact",)
    if source in early and os.path.exists(pending_path(directory, agent, session_id)):
        # PreCompact started it while the model wrote the compaction summary.
        return collect(directory, agent, session_id, settings.budget, log, make_due=True)
    started = _prepare(directory, payload, agent, source, log)
    if started is None:
        return None
    import subprocess

    child, target_id = started
    output = prepared_path(directory, agent, session_id)
    try:
        child.wait(timeout=settings.budget)
    except subprocess.TimeoutExpired:
        _write_pending(pending_path(directory, agent, session_id), child.pid, source, target_id)
        log(
            f"{source}: the restoration of {target_id} is not done within {settings.budget:g} s;"
            " it goes on in the background and comes with the next prompt"
        )
        return None
    text = _read_prepared(output)
    if child.returncode not in (0, 1) or not text:  # 1: some turns failed, it says which
        log(f"{source}: no restoration of {target_id}: restore exited with {child.returncode}")
        return None
    return text


def claude_pre_compact(
    payload: dict[str, Any],
    directory: str,
    log: Log,
    settings: HookSettings,
    agent: str = "claude-code",
) -> None:
    """PreCompact of Claude Code (or Codex): start the restoration while the compaction runs."""
    if "compact" not in settings.restore_on:
        return
    started = _prepare(directory, payload, agent, "compact", log)
    if started is not None:
        child, target_id = started
        note = pending_path(directory, agent, str(payload["session_id"]))
        _write_pending(note, child.pid, "compact", target_id, due=False)


def claude_prompt(
    payload: dict[str, Any], directory: str, out: IO[str], log: Log, agent: str = "claude-code"
) -> None:
    """UserPromptSubmit of Claude Code (or Codex): a restoration that outran its SessionStart."""
    text = collect(directory, agent, str(payload["session_id"]), 0.0, log)
    if text:
        _deliver(out, "UserPromptSubmit", text, payload, agent, directory)


def gemini_due(
    payload: dict[str, Any], directory: str, log: Log, settings: HookSettings, source: str
) -> None:
    """SessionStart (resume, clear) or PreCompress of Gemini CLI: prepare, note it as due."""
    if source not in settings.restore_on:
        return
    if source == "resume" and restoration_in(payload.get("transcript_path")):
        return  # the resumed history holds one: it reaches the model again, once
    started = _prepare(directory, payload, "gemini", source, log)
    if started is None:
        return
    child, target_id = started
    note = pending_path(directory, "gemini", str(payload["session_id"]))
    _write_pending(note, child.pid, source, target_id)


def gemini_before_agent(payload: dict[str, Any], directory: str, out: IO[str], log: Log) -> None:
    """BeforeAgent of Gemini CLI: deliver what is due (waiting within the budget); a
    compression the chat file recorded since the last prompt is due a restoration now."""
    session_id = str(payload["session_id"])
    path = payload.get("transcript_path")
    compressed = gemini_compressed(path if isinstance(path, str) else None, directory, session_id)
    note = pending_path(directory, "gemini", session_id)
    if os.path.exists(note):
        # A resume, clear or /compress noted before: it covers a compression found with it.
        text = collect(directory, "gemini", session_id, hook_settings().budget, log)
    elif compressed:
        settings = hook_settings()
        if "compact" not in settings.restore_on:
            return
        started = _prepare(directory, payload, "gemini", "compact", log)
        if started is None:
            return
        child, target_id = started
        _write_pending(note, child.pid, "compact", target_id)
        text = collect(directory, "gemini", session_id, settings.budget, log)
    else:
        return
    if text:
        _answer(out, "BeforeAgent", text)


def answer(
    payload: dict[str, Any],
    agent: str,
    event: str,
    directory: str,
    out: IO[str],
    log: Log,
    *,
    memory: bool = False,
) -> None:
    """Answer the hook ``event`` of ``agent`` on ``out`` when it is owed a restoration (or,
    a fresh session with ``memory`` on, the project's digest: ``hooks.memory``)."""
    if not isinstance(payload.get("session_id"), str):
        return

    def said(message: str) -> None:  # each line says whose event it was
        log(f"{agent} {event} {message}")

    if agent in ("claude-code", "codex"):  # Codex 0.171's hooks are Claude Code's
        if event == "SessionStart" and source_of(payload) in SOURCES:
            settings = hook_settings()
            claude_session_start(payload, directory, out, said, settings, agent, memory=memory)
        elif event == "PreCompact":
            claude_pre_compact(payload, directory, said, hook_settings(), agent)
        elif event == "UserPromptSubmit" and os.path.exists(
            pending_path(directory, agent, payload["session_id"])
        ):
            claude_prompt(payload, directory, out, said, agent)
    elif agent == "gemini":
        if event == "SessionStart" and source_of(payload) in ("resume", "clear", "startup"):
            settings = hook_settings()
            # Gemini CLI 0.61 puts a startup SessionStart's context before the first prompt
            # (``-p``) or into the history (interactive); the restoration waits for BeforeAgent.
            digest = start_memory(payload, directory, agent, settings, said, wanted=memory)
            if digest:
                _answer(out, "SessionStart", digest)
            gemini_due(payload, directory, said, settings, str(source_of(payload)))
        elif event == "PreCompress" and payload.get("trigger") == "manual":
            # Installed for /compress only ("manual"); a compression is what compact means.
            gemini_due(payload, directory, said, hook_settings(), "compact")
        elif event == "BeforeAgent":
            gemini_before_agent(payload, directory, out, said)
