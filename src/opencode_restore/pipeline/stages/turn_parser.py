"""turn_parser: a session becomes turns, each with the files it touched and commands it ran.

Artifacts are computed from structured tool calls (every reader normalizes tool lines of
raw terminal logs into ``tool_use`` messages too), never asked of an LLM.
"""

from __future__ import annotations

import json
import ntpath
import os
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import regex

from ...model import (
    ArtifactAction,
    ArtifactKind,
    CommandRun,
    Message,
    Session,
    TimelineSpan,
    Turn,
)
from .shell_files import ShellOp, shell_file_ops

_READ_TOOLS = {"read", "read_file", "view", "readfile", "notebookread", "read_many_files"}
_EDIT_TOOLS = {"edit", "multiedit", "replace", "notebookedit", "str_replace", "edit_file"}
_WRITE_TOOLS = {"write", "write_file", "create_file", "writefile"}
_PATCH_TOOLS = {"apply_patch", "patch"}
_SHELL_TOOLS = {
    "bash",
    "shell",
    "exec_command",
    "run_shell_command",
    "local_shell",
    "local_shell_call",
    "execute",
    "terminal",
}
_PATH_KEYS = ("file_path", "path", "filePath", "absolute_path", "filename", "notebook_path")

_PATCH_LINE = regex.compile(
    r"^\*\*\* (?P<op>Add|Update|Delete) File: (?P<path>.+?)\s*$|^\*\*\* Move to: (?P<to>.+?)\s*$",
    regex.MULTILINE,
)
#: A file operation before it is resolved against the session's files: a ``write`` creates
#: or edits, a ``snapshot`` (opencode patch part) edits only what no other action explains,
#: ``new`` is a write whose tool said the file did not exist before.
_Op = ArtifactKind | ShellOp | Literal["snapshot", "new"]
#: What file-writing tools answer: a new file, or one that was there and is replaced.
_WROTE_NEW = regex.compile(
    r"^\s*(?:File created successfully|Successfully created and wrote to new file)",
    regex.IGNORECASE,
)
_WROTE_OVER = regex.compile(
    r"^\s*(?:The file \S.{0,4000}? has been (?:updated|overwritten)|Successfully overwrote file)",
    regex.IGNORECASE | regex.DOTALL,
)
_PATCH_ACTION: dict[str, ArtifactKind] = {"Add": "created", "Update": "edited", "Delete": "deleted"}
_CHANGE_KIND: dict[Any, ArtifactKind] = {"add": "created", "update": "edited", "delete": "deleted"}
#: How the agents' file tools report a failure when the result carries no error flag.
_FAILURE_PREFIXES = (
    "<tool_use_error>",
    "error:",
    "string to replace not found",
    "file does not exist",
    "file has not been read yet",
    "permission denied",
    "apply_patch verification failed",
    "failed to find expected lines",
    "no such file or directory",
)


def _tool_key(name: str | None) -> str:
    return (name or "").strip().lower().replace("-", "_")


def _path_of(inp: dict[str, Any]) -> str | None:
    for key in _PATH_KEYS:
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
    return None


# Codex's code mode runs a script whose shell commands are ``tools.exec_command({...})``
# calls (Codex Desktop's ``exec`` tool): the commands are the JSON arguments' ``cmd``.
_CODE_EXEC = regex.compile(r"\btools\.exec_command\(\s*")


def _script_commands(script: str) -> list[str]:
    """The shell commands a code-mode script runs, in order."""
    found: list[str] = []
    decoder = json.JSONDecoder()
    for m in _CODE_EXEC.finditer(script[:100_000]):
        try:
            args, _ = decoder.raw_decode(script, m.end())
        except ValueError:
            continue
        cmd = args.get("cmd") if isinstance(args, dict) else None
        if isinstance(cmd, str) and cmd:
            found.append(cmd)
    return found


def _command_of(inp: dict[str, Any]) -> str | None:
    script = inp.get("input")
    if isinstance(script, str) and (commands := _script_commands(script)):
        return "; ".join(commands)
    for key in ("command", "cmd", "commands"):
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            # ["bash", "-lc", "script"] -> the script itself is what the user cares about.
            if len(value) == 3 and value[1] in ("-lc", "-c"):
                return str(value[2])
            return shlex.join(value)
    return None


def _patch_actions(text: str) -> list[tuple[str, _Op]]:
    out: list[tuple[str, _Op]] = []
    for m in _PATCH_LINE.finditer(text):
        if m.group("to"):
            if out:  # ``*** Move to:`` renames the file just updated
                out[-1] = (out[-1][0], "deleted")
            out.append((m.group("to"), "created"))
        else:
            out.append((m.group("path"), _PATCH_ACTION[m.group("op")]))
    return out


#: A Windows path: a drive (``D:\\x``, ``D:/x``) or a UNC share (``\\\\host\\x``).
_WINDOWS_PATH = regex.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


class _Normalizer:
    """Paths relative to the session's working directory when they lie inside it.

    A session on Windows names one file ``D:\\repo\\a.go`` in one call and ``D:/repo/a.go``
    in the next (a shell tool): both read as the same path, relative to a Windows cwd
    with ``/`` separators, and one outside it keeps its drive (``D:/other/b.go``).
    """

    def __init__(self, cwd: str | None) -> None:
        self.windows = bool(cwd and _WINDOWS_PATH.match(cwd))
        if self.windows and cwd:
            self.cwd: str | None = ntpath.normcase(ntpath.normpath(cwd))
        else:
            self.cwd = os.path.normpath(cwd) if cwd else None

    def _windows(self, path: str) -> str:
        norm = ntpath.normpath(path)
        if self.windows and self.cwd and ntpath.isabs(norm):
            try:
                rel = ntpath.relpath(ntpath.normcase(norm), self.cwd)
            except ValueError:  # another drive
                rel = ".."
            if not rel.startswith(".."):
                # relpath ran on the case-folded path: take the same tail of the original.
                norm = norm[len(norm) - len(rel) :] if rel != "." else "."
        return norm.replace("\\", "/")

    def __call__(self, path: str) -> str:
        path = path.strip().strip("'\"")
        if _WINDOWS_PATH.match(path) or (self.windows and "\\" in path):
            return self._windows(path)
        norm = os.path.normpath(path)
        if self.cwd and os.path.isabs(norm):
            try:
                rel = os.path.relpath(norm, self.cwd)
            except ValueError:
                return norm
            if not rel.startswith(".."):
                return rel
        return norm


@dataclass(slots=True)
class _Files:
    """What the session has done to its files so far (carried from turn to turn)."""

    norm: _Normalizer
    seen: set[str] = field(default_factory=set)  # known to exist: read or written, not deleted
    changed: set[str] = field(default_factory=set)  # changed by a successful action


def _is_snapshot(m: Message) -> bool:
    """The files a step changed, however it changed them (opencode's ``patch`` part)."""
    return m.type == "file_changes"


def _actions_for(m: Message) -> tuple[list[tuple[str, _Op]], str | None]:
    """The file operations (raw paths) and the shell command (if any) of one tool_use."""
    inp = m.tool_input or {}
    key = _tool_key(m.tool_name)
    found: list[tuple[str, _Op]] = []
    command: str | None = None
    if _is_snapshot(m):
        files = m.meta.get("files")
        if isinstance(files, list):
            found.extend((f, "snapshot") for f in files if isinstance(f, str))
    elif key == "str_replace_based_edit_tool":
        sub = str(inp.get("command", ""))
        path = _path_of(inp)
        if path:
            found.append((path, {"view": "read", "create": "created"}.get(sub, "edited")))  # type: ignore[arg-type]
    elif key in _READ_TOOLS:
        paths = inp.get("paths")
        if isinstance(paths, list):
            found.extend((str(p), "read") for p in paths)
        elif (path := _path_of(inp)) is not None:
            found.append((path, "read"))
    elif key in _EDIT_TOOLS:
        if (path := _path_of(inp)) is not None:
            found.append((path, "edited"))
    elif key in _WRITE_TOOLS:
        if (path := _path_of(inp)) is not None:
            found.append((path, "write"))
    elif key in _PATCH_TOOLS:
        files = inp.get("files")
        if isinstance(files, list):
            found.extend((str(f), "edited") for f in files)
        changes = inp.get("changes")  # `codex exec --json` file_change: [{path, kind}]
        for change in changes if isinstance(changes, list) else ():
            if isinstance(change, dict) and isinstance(change.get("path"), str):
                found.append((change["path"], _CHANGE_KIND.get(change.get("kind"), "edited")))
        # opencode's apply_patch tool names its patch ``patchText``.
        text = inp.get("input") or inp.get("patch") or inp.get("patchText") or m.text
        if isinstance(text, str):
            found.extend(_patch_actions(text))
    elif key in _SHELL_TOOLS or _command_of(inp) is not None:
        command = _command_of(inp)
        if command:
            found.extend(_patch_actions(command) or shell_file_ops(command))
            workdir = inp.get("workdir") or inp.get("cwd")
            if isinstance(workdir, str) and workdir:
                found = [(os.path.join(workdir, path), op) for path, op in found]
    return found, command


def _failed(result: Message | None, shell: bool) -> bool:
    """True when the tool's result says it failed (so its file actions did not happen)."""
    if result is None:
        return False
    code = result.meta.get("exit_code")
    if result.is_error or (isinstance(code, int) and code != 0):
        return True
    # A shell command's output may say anything; only the file tools' own messages count.
    return not shell and result.text.lstrip()[:64].lower().startswith(_FAILURE_PREFIXES)


def _refused(result: Message | None) -> bool:
    """True when the user (or a permission rule) refused the call: it never ran."""
    return result is not None and bool(result.meta.get("rejected") or result.meta.get("denied"))


def _settle_writes(ops: list[tuple[str, _Op]], result: Message | None) -> list[tuple[str, _Op]]:
    """A write tool's ops as its result tells them: a file it replaced is edited, one it
    made is new, whatever the session saw of that file before."""
    if result is None or not any(op == "write" for _, op in ops):
        return ops
    existed = result.meta.get("file_existed")
    if not isinstance(existed, bool):
        if _WROTE_OVER.match(result.text):
            existed = True
        elif _WROTE_NEW.match(result.text):
            existed = False
        else:
            return ops
    return [(path, ("edited" if existed else "new") if op == "write" else op) for path, op in ops]


@dataclass(slots=True)
class _Net:
    """What one call's ops did to one path, from before the call to after it."""

    before: bool
    after: bool
    changed: bool = False
    read: bool = False
    snapshot: bool = False


def _net_kind(path: str, net: _Net, files: _Files) -> ArtifactKind | None:
    if net.changed:
        if net.before:
            return "edited" if net.after else "deleted"
        # Made and removed again by the same call: a scratch file, no lasting change.
        return "created" if net.after else None
    if net.snapshot:
        # A change some other action shows is not repeated; others (made by a script,
        # say) are edits: the snapshot cannot tell a new file from a changed one.
        return None if path in files.changed else "edited"
    return None


def _resolve(ops: Iterable[tuple[str, _Op]], files: _Files) -> list[tuple[str, ArtifactKind]]:
    """Normalized paths with the action each op amounts to, given what the session did before.

    One call's ops on one path are read as a whole, from whether the file existed before
    the call to whether it exists after: ``rm a && mv b a`` edits ``a`` (and deletes ``b``),
    never "deletes and creates ``a``"; a file written and removed by the same call (a
    scratch file) is no change; a file deleted or edited first existed, even if the session
    never looked at it.
    """
    nets: dict[str, _Net] = {}
    for raw, op in ops:
        path = files.norm(raw)
        if path in (".", ".."):
            continue
        net = nets.get(path)
        if net is None:
            before = op in ("deleted", "edited") or (op != "new" and path in files.seen)
            net = nets[path] = _Net(before, before)
        if op == "read":
            net.read = True
        elif op == "snapshot":
            net.snapshot = True
        elif op == "touch":
            if not net.after:
                net.after = net.changed = True
        elif op == "deleted":
            net.after, net.changed = False, True
        else:  # write, new, edited, created
            net.after = net.changed = True
    out: list[tuple[str, ArtifactKind]] = []
    for path, net in nets.items():
        if net.read and (net.before or not net.changed):  # not a file this call made
            out.append((path, "read"))
        kind = _net_kind(path, net, files)
        if kind is not None:
            out.append((path, kind))
    return out


def _is_turn_start(m: Message) -> bool:
    return m.is_human


def split_turns(messages: Sequence[Message]) -> list[list[Message]]:
    """Group messages into turns: a turn starts at a real user request.

    Consecutive user requests with no agent output between them form one turn.
    Messages before the first request (preambles, a resumed summary) join the first turn.
    """
    groups: list[list[Message]] = []
    current: list[Message] = []
    agent_seen = False
    for m in messages:
        if _is_turn_start(m) and (agent_seen or not any(x.is_human for x in current)):
            if current and any(x.is_human for x in current):
                groups.append(current)
                current = []
            agent_seen = False
        elif not m.is_human and m.role in ("assistant", "tool"):
            agent_seen = True
        current.append(m)
    if current:
        groups.append(current)
    return groups


def _step_order(messages: Iterable[Message]) -> Iterator[Message]:
    """The tool calls in order, each opencode snapshot after the other calls of its step.

    A snapshot lists what its step (one assistant message, ``group``) changed; read after
    the step's own calls, it only adds the changes those calls do not show.
    """
    held: list[Message] = []
    for m in messages:
        if held and m.group != held[0].group:
            yield from held
            held = []
        if _is_snapshot(m):
            held.append(m)
        elif m.type == "tool_use":
            yield m
    yield from held


def is_interrupt_marker(m: Message) -> bool:
    """True for the note an agent writes when the user stops a turn (Claude Code's
    ``[Request interrupted by user]``, Codex's ``<turn_aborted>`` or its event)."""
    return m.meta.get("injected") == "interrupt"


def is_interrupted(messages: Sequence[Message]) -> bool:
    """True when a turn has no final answer: the log marks an interrupt after its last
    request, or the agent's work after that request ends on a tool call or a tool result
    (the session was killed mid-turn), or never started.

    Thinking, compaction and system notes are not answers and do not end a turn either way.
    """
    last_request = max((i for i, m in enumerate(messages) if m.is_human), default=-1)
    if last_request < 0:
        return False  # preamble text with no request: nothing was asked
    after = messages[last_request + 1 :]
    if any(is_interrupt_marker(m) for m in after):
        return True
    for m in reversed(after):
        if m.type in ("tool_use", "tool_result"):
            return True
        if m.role == "assistant" and m.type == "text" and m.text.strip():
            return False
    return True


def build_turn(
    number: int,
    messages: list[Message],
    files: _Files,
    subagents: dict[str, list[Message]] | None = None,
) -> Turn:
    """One turn with its artifacts and commands (``files`` carries the session's files).

    A tool call whose result reports a failure makes no artifact: its attempted actions go
    to ``Turn.failed_artifacts`` (``Turn.rejected_artifacts`` when the user or a rule
    refused it), so nothing claims a change that did not happen. What a
    sub-agent started by a call of this turn did (``subagents``: its conversation by the
    id of that call) counts for the turn and is cited by that call, the message a reader
    of the main conversation sees.
    """
    turn = Turn(number, "\n\n".join(m.text for m in messages if m.is_human).strip(), messages)
    turn.interrupted = is_interrupted(messages)
    _take(messages, files, turn, subagents if subagents is not None else {}, None)
    return turn


def _take(
    messages: list[Message],
    files: _Files,
    turn: Turn,
    subagents: dict[str, list[Message]],
    cite: Message | None,
) -> None:
    results = {m.tool_call_id: m for m in messages if m.type == "tool_result" and m.tool_call_id}
    for m in _step_order(messages):
        source = cite or m
        ops, command = _actions_for(m)
        res = results.get(m.tool_call_id) if m.tool_call_id else None
        refused = _refused(res)
        ok = not refused and not _failed(res, shell=command is not None)
        actions = [
            ArtifactAction(path, kind, source.id, source.entry_index)
            for path, kind in _resolve(_settle_writes(ops, res), files)
        ]
        if refused:
            turn.rejected_artifacts.extend(actions)
        else:
            (turn.artifacts if ok else turn.failed_artifacts).extend(actions)
        for a in actions if ok else ():
            if a.action == "deleted":
                files.seen.discard(a.file_path)  # so a file written again is created anew
            else:
                files.seen.add(a.file_path)
            if a.action != "read":
                files.changed.add(a.file_path)
        if command:
            exit_code = res.meta.get("exit_code") if res is not None else None
            turn.commands.append(
                CommandRun(
                    command=command,
                    message_id=source.id,
                    line_number=source.entry_index,
                    exit_code=exit_code if isinstance(exit_code, int) else None,
                    is_error=bool(res.is_error) if res is not None else False,
                    rejected=refused,
                )
            )
        if m.type == "tool_use" and m.tool_call_id and m.tool_call_id in subagents:
            # pop: a sub-agent is taken once, even if a malformed log links it twice.
            _take(subagents.pop(m.tool_call_id), files, turn, subagents, source)


def _subagents(span: TimelineSpan, out: dict[str, list[Message]]) -> dict[str, list[Message]]:
    """The conversations of the sub-agents below ``span`` (abandoned branches excluded),
    by the id of the tool call that started each."""
    for child in span.spans():
        link = child.meta.get("tool_use_id")
        if isinstance(link, str) and link and link not in out:
            out[link] = child.messages()
        _subagents(child, out)
    return out


def parse_turns(session: Session | Iterable[Message], cwd: str | None = None) -> list[Turn]:
    """turn_parser's entry point: the turns of a session's active conversation."""
    return list(iter_turns(session, cwd))


def iter_turns(
    session: Session | Iterable[Message],
    cwd: str | None = None,
    fill: Callable[[list[Message]], None] | None = None,
) -> Iterator[Turn]:
    """The turns one at a time; ``fill`` is given each turn's messages before it is built
    (a hollow session's bodies are put back there, see ``pipeline.bodies``)."""
    subagents: dict[str, list[Message]] = {}
    if isinstance(session, Session):
        messages = session.messages()
        cwd = cwd or session.cwd
        _subagents(session.timeline.root, subagents)
    else:
        messages = list(session)
    files = _Files(_Normalizer(cwd))
    for number, group in enumerate(split_turns(messages), start=1):
        if fill is not None:
            fill(group)
        yield build_turn(number, group, files, subagents)
