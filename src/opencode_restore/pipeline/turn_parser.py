"""turn_parser: a session becomes turns, each with the files it touched and commands it ran.

Artifacts are computed from structured tool calls (every reader normalizes tool lines of
raw terminal logs into ``tool_use`` messages too), never asked of an LLM.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from typing import Any

import regex

from ..model import ArtifactAction, ArtifactKind, CommandRun, Message, Session, Turn

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
_PATCH_ACTION: dict[str, ArtifactKind] = {"Add": "created", "Update": "edited", "Delete": "deleted"}
# Shell commands that only read a file: recorded as reads (Codex reads files this way).
_READ_COMMANDS = {"cat", "sed", "head", "tail", "nl", "less", "bat"}
_SPLIT_COMMANDS = regex.compile(r"\s*(?:&&|\|\||;|\|)\s*")


def _tool_key(name: str | None) -> str:
    return (name or "").strip().lower().replace("-", "_")


def _path_of(inp: dict[str, Any]) -> str | None:
    for key in _PATH_KEYS:
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _command_of(inp: dict[str, Any]) -> str | None:
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


def _patch_actions(text: str) -> list[tuple[str, ArtifactKind]]:
    out: list[tuple[str, ArtifactKind]] = []
    for m in _PATCH_LINE.finditer(text):
        if m.group("to"):
            out.append((m.group("to"), "created"))
        else:
            out.append((m.group("path"), _PATCH_ACTION[m.group("op")]))
    return out


def _shell_file_actions(command: str) -> list[tuple[str, ArtifactKind]]:
    """Reads and deletions visible in simple shell commands (``sed -n 1,80p f``, ``rm f``)."""
    out: list[tuple[str, ArtifactKind]] = []
    for part in _SPLIT_COMMANDS.split(command):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        if not words:
            continue
        prog, args = os.path.basename(words[0]), [w for w in words[1:] if not w.startswith("-")]
        if prog in _READ_COMMANDS:
            if prog == "sed" and args and not any(w.startswith("-i") for w in words[1:]):
                args = args[1:]  # the sed script
            elif prog == "sed":
                continue
            out.extend((a, "read") for a in args if "/" in a or "." in a)
        elif prog == "rm":
            out.extend((a, "deleted") for a in args)
    return out


class _Normalizer:
    """Paths relative to the session's working directory when they lie inside it."""

    def __init__(self, cwd: str | None) -> None:
        self.cwd = os.path.normpath(cwd) if cwd else None

    def __call__(self, path: str) -> str:
        path = path.strip().strip("'\"")
        norm = os.path.normpath(path)
        if self.cwd and os.path.isabs(norm):
            try:
                rel = os.path.relpath(norm, self.cwd)
            except ValueError:
                return norm
            if not rel.startswith(".."):
                return rel
        return norm


def _actions_for(
    m: Message, seen: set[str], norm: _Normalizer
) -> tuple[list[ArtifactAction], str | None]:
    """The artifact actions and the shell command (if any) of one tool_use message."""
    inp = m.tool_input or {}
    key = _tool_key(m.tool_name)
    found: list[tuple[str, ArtifactKind]] = []
    command: str | None = None
    if key == "str_replace_based_edit_tool":
        sub = str(inp.get("command", ""))
        path = _path_of(inp)
        if path:
            kind: ArtifactKind = {"view": "read", "create": "created"}.get(sub, "edited")  # type: ignore[assignment]
            found.append((path, kind))
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
            found.append((path, "edited" if norm(path) in seen else "created"))
    elif key in _PATCH_TOOLS:
        files = inp.get("files")
        if isinstance(files, list):
            found.extend((str(f), "edited") for f in files)
        text = inp.get("input") or inp.get("patch") or m.text
        if isinstance(text, str):
            found.extend(_patch_actions(text))
    elif key in _SHELL_TOOLS or _command_of(inp) is not None:
        command = _command_of(inp)
        if command:
            patch = _patch_actions(command)
            found.extend(patch if patch else _shell_file_actions(command))
    actions = [
        ArtifactAction(norm(path), action, m.id, m.entry_index) for path, action in found if path
    ]
    for a in actions:
        seen.add(a.file_path)
    return actions, command


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


def build_turn(number: int, messages: list[Message], cwd: str | None, seen: set[str]) -> Turn:
    """One turn with its artifacts and commands (``seen`` carries files across turns)."""
    norm = _Normalizer(cwd)
    results = {m.tool_call_id: m for m in messages if m.type == "tool_result" and m.tool_call_id}
    artifacts: list[ArtifactAction] = []
    commands: list[CommandRun] = []
    for m in messages:
        if m.type != "tool_use":
            continue
        actions, command = _actions_for(m, seen, norm)
        artifacts.extend(actions)
        if command:
            res = results.get(m.tool_call_id) if m.tool_call_id else None
            exit_code = res.meta.get("exit_code") if res is not None else None
            commands.append(
                CommandRun(
                    command=command,
                    message_id=m.id,
                    line_number=m.entry_index,
                    exit_code=exit_code if isinstance(exit_code, int) else None,
                    is_error=bool(res.is_error) if res is not None else False,
                )
            )
    user_text = "\n\n".join(m.text for m in messages if m.is_human).strip()
    return Turn(number, user_text, messages, artifacts, commands)


def parse_turns(session: Session | Iterable[Message], cwd: str | None = None) -> list[Turn]:
    """turn_parser's entry point: the turns of a session's active conversation."""
    if isinstance(session, Session):
        messages = session.messages()
        cwd = cwd or session.cwd
    else:
        messages = list(session)
    seen: set[str] = set()
    return [
        build_turn(i, group, cwd, seen) for i, group in enumerate(split_turns(messages), start=1)
    ]
