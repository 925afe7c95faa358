"""``install`` / ``uninstall``: put the hooks (Claude Code, Codex, Gemini CLI), the plugin
(opencode) or the extension (pi) where the agent reads them, and take them out again.

Settings files are merged (``settings_json``), never replaced: the file before the first
change is kept as ``settings.json.bak`` (``.bak.N`` when taken), and each install is
recorded in ``DATA_DIR/installs.json``. ``uninstall`` puts back the exact bytes the file
had before when nobody changed it since; otherwise it takes out our entries alone (keeping
the file's final newline, or its absence: Gemini CLI writes none). Either way the backup
goes, and so do the folders the install made once they are empty, and the manifest with its
folders once it records nothing: install then uninstall leaves no trace. The plugin and the
extension are one file each, removed only while still the one we copied.

opencode also gets two lines in its config folder's ``.npmrc`` (``NPMRC_LINES``), and an
empty ``package.json`` there when it has none (so npm reads that ``.npmrc``). Every
write is atomic: a failure (a read-only folder) leaves the old file whole.

A project's files are committed and shared by a team, so they run ``opencode-restore`` as
each user's ``PATH`` finds it (``PORTABLE_ARGV``), never this machine's absolute path; a
user's own files name this installation, found when an agent's ``PATH`` may lack it (an
agent started from a desktop launcher).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import atomic_write, backup_path
from ..errors import UsageError
from .mcp_config import add_server, remove_server
from .settings_json import Entry, dump_settings, merge_hooks, parse_settings, remove_hooks

AGENTS = ("claude", "codex", "gemini", "opencode", "pi")
#: The agents whose whole integration is one file of ours (a plugin / an extension).
FILE_AGENTS = ("opencode", "pi")
PLUGIN_NAME = "opencode-restore.ts"
PLUGIN_SOURCE = Path(__file__).resolve().parent / "opencode_plugin.ts"
PI_EXTENSION_SOURCE = Path(__file__).resolve().parent / "pi_extension.ts"
#: opencode installs ``@opencode-ai/plugin`` into each config folder on every start and, once
#: any plugin is there, waits for it; offline npm's retries (10 s + 60 s) held the start up
#: 70-75 s. One try with a 10 s timeout fails at once offline and installs as before online.
NPMRC = ".npmrc"
NPMRC_LINES = ("fetch-retries=0", "fetch-timeout=10000")
NPMRC_BEGIN = "# >>> opencode-restore: opencode's start must not wait on npm retries offline"
NPMRC_END = "# <<< opencode-restore"
#: npm reads the ``.npmrc`` of the first folder up from opencode's config folder holding a
#: ``package.json`` or ``node_modules`` (a JS project, a home with ``node_modules``): an
#: empty ``package.json`` makes it the config folder itself. opencode's own install (online)
#: writes its dependency into it; such a file is left alone on uninstall.
PACKAGE_JSON = "package.json"
EMPTY_PACKAGE = b"{}\n"
MANIFEST = "installs.json"
#: The manifest's entry listing the folders made for the manifest itself (the data folder
#: and the parents it lacked), deepest first; every other entry is one install's record.
MANIFEST_FOLDERS = "folders made"
#: What a project's files run: the command on each user's PATH (see the module's docstring).
PORTABLE_ARGV = ["opencode-restore"]

#: The events each agent reports to ``opencode-restore hook``, with their matcher. Claude
#: Code: SessionStart answers with the restoration (compact, clear; resume only when the
#: conversation was not reloaded); UserPromptSubmit delivers one that outran the budget.
#: Gemini CLI: SessionStart (resume, clear) and PreCompress record that a restoration is
#: due, BeforeAgent delivers it. PreCompress runs only on ``/compress`` ("manual"): Gemini
#: 0.61 fires PreCompress(auto) before every model request and waits for it.
CLAUDE_EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd")
#: Codex 0.171 (``$CODEX_HOME/hooks.json``, Claude Code's shape; it has no SessionEnd).
CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop")
#: What ``install codex`` says: Codex runs a hook only once the user trusted it.
CODEX_TRUST_NOTE = (
    "Codex runs these hooks only once you trust them: open `codex`, type /hooks and trust "
    "them (once; untrusted hooks are skipped without a word)"
)
GEMINI_EVENTS = ("SessionStart", "BeforeAgent", "PreCompress:manual", "SessionEnd")
#: Gemini entries earlier installs wrote: taken out by install and uninstall.
GEMINI_LEGACY = ("AfterAgent", "PreCompress")
#: The agents whose SessionStart can start a session with the project's digest
#: (``install AGENT --memory``: their SessionStart hook runs ``hook ... --memory``).
MEMORY_AGENTS = ("claude", "codex", "gemini")
MEMORY_FLAG = "--memory"


@dataclass(slots=True)
class Change:
    """What an install or uninstall does to one file."""

    path: Path
    before: bytes | None
    after: bytes | None
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when the file's bytes (or existence) change."""
        return self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff (``/dev/null`` for a created or removed file)."""
        old = (self.before or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = (self.after or b"").decode("utf-8", "replace").splitlines(keepends=True)
        return "".join(
            difflib.unified_diff(
                old,
                new,
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile=str(self.path) if self.after is not None else "/dev/null",
            )
        )


def cli_argv(portable: bool = False) -> list[str]:
    """This installation's ``opencode-restore``: on PATH, else this interpreter's module
    (``portable``: ``PORTABLE_ARGV``, for a project's files)."""
    if portable:
        return list(PORTABLE_ARGV)
    exe = shutil.which("opencode-restore")
    return [exe] if exe else [sys.executable, "-m", "opencode_restore"]


def hook_command(agent: str, portable: bool = False) -> str:
    """The command line the agent runs: ``opencode-restore hook`` (see ``cli_argv``)."""
    args = [*cli_argv(portable), "hook"]
    return shlex.join(args + (["--agent", agent] if agent in ("codex", "gemini") else []))


def plugin_text(argv: list[str], source_path: Path = PLUGIN_SOURCE) -> bytes:
    """The opencode plugin (or, from ``PI_EXTENSION_SOURCE``, the pi extension), calling
    ``argv`` (the CLI found at install time)."""
    source = source_path.read_text("utf-8")
    line = 'const COMMAND: string[] = ["opencode-restore"]'
    return source.replace(line, f"const COMMAND: string[] = {json.dumps(argv)}").encode()


def target_path(agent: str, scope: str, home: Path, project: Path) -> Path:
    """The file ``install AGENT`` writes for ``scope`` (``user`` or ``project``)."""
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}; choose one of: {', '.join(AGENTS)}")
    if agent == "opencode":
        base = home / ".config/opencode" if scope == "user" else project / ".opencode"
        return base / "plugins" / PLUGIN_NAME
    if agent == "pi":
        agent_dir = os.environ.get("PI_CODING_AGENT_DIR")
        if scope == "project":
            base = project / ".pi"
        else:
            base = Path(agent_dir).expanduser() if agent_dir else home / ".pi/agent"
        return base / "extensions" / PLUGIN_NAME
    if agent == "codex":
        if scope == "project":
            raise UsageError("codex reads its hooks from its user folder only; drop --project")
        codex_home = os.environ.get("CODEX_HOME")
        return (Path(codex_home) if codex_home else home / ".codex") / "hooks.json"
    folder = ".claude" if agent == "claude" else ".gemini"
    return (home if scope == "user" else project) / folder / "settings.json"


def companion_paths(agent: str, path: Path, home: Path) -> list[Path]:
    """The files installed beside ``path``: the ``.npmrc`` and ``package.json`` of opencode's
    config folder and, for a project's plugin, of the user's one too (opencode waits on both)."""
    if agent != "opencode" or path.name != PLUGIN_NAME:
        return []
    own, shared = path.parent.parent, home / ".config/opencode"
    folders = [own] if own == shared else [own, shared]
    return [folder / name for folder in folders for name in (NPMRC, PACKAGE_JSON)]


def companion_still_needed(path: Path, home: Path, data_dir: Path, leaving: Path) -> bool:
    """True while a recorded opencode plugin install other than ``leaving`` (the one being
    uninstalled), still there, relies on the companion file ``path`` (its own folder's;
    every plugin relies on the user's folder's)."""
    shared = home / ".config/opencode"
    for key, record in _records(_manifest(data_dir)).items():
        plugin = Path(key)
        if record.get("agent") != "opencode" or record.get("mcp") or plugin.name != PLUGIN_NAME:
            continue
        if plugin == leaving:
            continue
        if plugin.exists() and path.parent in (shared, plugin.parent.parent):
            return True
    return False


def _file_text(agent: str, path: Path, command: str, before: bytes | None) -> bytes | None:
    """What one of our files (plugin, extension, ``.npmrc``, ``package.json``) holds once
    installed (None: as it is)."""
    if path.name == NPMRC:
        return npmrc_text(before)
    if path.name == PACKAGE_JSON:
        return None if before is not None else EMPTY_PACKAGE
    source = PI_EXTENSION_SOURCE if agent == "pi" else PLUGIN_SOURCE
    return plugin_text(json.loads(command), source)


def npmrc_text(before: bytes | None) -> bytes | None:
    """``before`` with our block of the ``NPMRC_LINES`` it does not set yet (None: it sets
    them all, no change)."""
    text = (before or b"").decode("utf-8", "replace")
    keys = {line.split("=", 1)[0].strip() for line in text.splitlines() if "=" in line}
    missing = [line for line in NPMRC_LINES if line.split("=", 1)[0] not in keys]
    if not missing:
        return None
    sep = "" if not text or text.endswith("\n") else "\n"
    return (text + sep + "\n".join([NPMRC_BEGIN, *missing, NPMRC_END]) + "\n").encode()


def npmrc_without(before: bytes) -> bytes | None:
    """``before`` without our block (None: no block)."""
    lines = before.decode("utf-8", "replace").splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == NPMRC_BEGIN]
    if not starts:
        return None
    start = starts[0]
    end = next(
        (i for i in range(start, len(lines)) if lines[i].rstrip("\r\n") == NPMRC_END),
        len(lines) - 1,
    )
    return "".join(lines[:start] + lines[end + 1 :]).encode()


def _command(agent: str, mcp: bool, portable: bool) -> str:
    """What install writes: the hook command line, or (opencode, pi, an MCP server) the argv
    as JSON."""
    if mcp or agent in FILE_AGENTS:
        return json.dumps(cli_argv(portable))
    return hook_command(agent, portable)


def _entries(
    agent: str, command: str, events: tuple[str, ...] | None = None, *, memory: bool = False
) -> list[Entry]:
    """(event, command, matcher) per ``EVENT[:matcher]`` of the agent's events (``memory``:
    SessionStart's command with ``MEMORY_FLAG``)."""
    if events is None:
        events = {"claude": CLAUDE_EVENTS, "codex": CODEX_EVENTS}.get(agent, GEMINI_EVENTS)
    out: list[Entry] = []
    for spec in events:
        event, _, matcher = spec.partition(":")
        run = f"{command} {MEMORY_FLAG}" if memory and event == "SessionStart" else command
        out.append((event, run, matcher or None))
    return out


def _legacy(agent: str, command: str, *, memory: bool = False) -> list[Entry]:
    """What an install takes out first: earlier installs' Gemini entries, and SessionStart
    as the other choice of ``--memory`` runs it (so one install holds one SessionStart)."""
    legacy = _entries(agent, command, GEMINI_LEGACY) if agent == "gemini" else []
    other = _entries(agent, command, ("SessionStart",), memory=not memory)
    return legacy + other


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _mode(path: Path) -> int:
    """The file's permission bits, kept across a rewrite (new files: 0644)."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return 0o644


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _missing_folders(folder: Path) -> list[str]:
    """``folder`` and those of its parents that do not exist yet, deepest first."""
    missing: list[str] = []
    while not folder.exists() and folder != folder.parent:
        missing.append(str(folder))
        folder = folder.parent
    return missing


def _remove_empty_folders(folders: list[str]) -> None:
    """Remove ``folders`` (deepest first) while they are empty: one holding something now
    (the user's files, another install's) stops it, with its parents."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            continue
        except OSError:
            return


def _records(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest's install records, by key (without ``MANIFEST_FOLDERS``)."""
    return {k: v for k, v in manifest.items() if isinstance(v, dict)}


def _manifest(data_dir: Path) -> dict[str, Any]:
    raw = _read(data_dir / MANIFEST)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{data_dir / MANIFEST}:{exc.lineno}: not valid JSON ({exc.msg})"
        ) from None
    return data if isinstance(data, dict) else {}


def _key(path: Path, mcp: bool) -> str:
    """The manifest's key of an install: one file (Gemini's settings.json) may hold both the
    hooks and the MCP server, each with its own history."""
    return f"{path}#mcp" if mcp else str(path)


def _save_manifest(data_dir: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest; one that records no install any more goes, with its folders."""
    if _records(manifest):
        atomic_write(data_dir / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
        return
    (data_dir / MANIFEST).unlink(missing_ok=True)
    _remove_empty_folders(manifest.get(MANIFEST_FOLDERS, []))


def _keep_final_newline(before: bytes | None, after: str) -> bytes:
    """``after`` ending in a newline or not, as ``before`` did (a new file: with one)."""
    if before is not None and before.strip() and not before.endswith(b"\n"):
        after = after.rstrip("\n")
    return after.encode()


def plan_install(
    agent: str, path: Path, command: str, *, mcp: bool = False, memory: bool = False
) -> Change:
    """What ``install`` would write to ``path`` (``mcp``: the MCP server, not the hooks;
    ``memory``: SessionStart runs the hook with ``MEMORY_FLAG``)."""
    before = _read(path)
    if mcp:
        text = (before or b"").decode("utf-8", "replace")
        after = _keep_final_newline(before, add_server(agent, text, json.loads(command), str(path)))
        if after == before:
            return Change(path, before, before, ["already installed"])
        return Change(path, before, after)
    if agent in FILE_AGENTS:
        wanted = _file_text(agent, path, command, before)
        if wanted is None and path.name == PACKAGE_JSON:
            return Change(path, before, before, ["there already"])
        if wanted is None or before == wanted:
            return Change(path, before, before, ["already installed"])
        return Change(path, before, wanted)
    settings = parse_settings((before or b"").decode("utf-8", "replace"), str(path))
    current = remove_hooks(settings, _legacy(agent, command, memory=memory), str(path))
    merged = merge_hooks(current, _entries(agent, command, memory=memory), str(path))
    if merged == settings and before is not None:
        return Change(path, before, before, ["already installed"])
    return Change(path, before, _keep_final_newline(before, dump_settings(merged)))


def plan_uninstall(
    agent: str, path: Path, command: str, record: dict[str, Any] | None, *, mcp: bool = False
) -> Change:
    """What ``uninstall`` would leave at ``path`` (``after`` None: the file goes)."""
    before = _read(path)
    if before is None:
        return Change(path, None, None, ["nothing installed"])
    if record is not None and record.get("installed_sha256") == _sha(before):
        # Untouched since we wrote it: put back the exact bytes it had before.
        backup = record.get("backup")
        if record.get("created"):
            return Change(path, before, None)
        if backup and (original := _read(Path(backup))) is not None:
            return Change(path, before, original)
    if mcp:
        cleaned_text = remove_server(agent, before.decode("utf-8", "replace"), str(path))
        if cleaned_text is None:
            return Change(path, before, before, ["nothing installed"])
        cleaned_bytes = _keep_final_newline(before, cleaned_text)
        return Change(path, before, cleaned_bytes, ["our server removed"])
    if agent in FILE_AGENTS and path.name == PACKAGE_JSON:
        return Change(path, before, before, ["not ours, or changed since; left alone"])
    if agent in FILE_AGENTS and path.name == NPMRC:
        cleaned_rc = npmrc_without(before)
        if cleaned_rc is None:
            return Change(path, before, before, ["nothing installed"])
        if not cleaned_rc.strip() and record is not None and record.get("created"):
            return Change(path, before, None)
        return Change(path, before, cleaned_rc, ["our lines removed"])
    if agent in FILE_AGENTS:
        if before == _file_text(agent, path, command, before):
            return Change(path, before, None)
        what = "extension" if agent == "pi" else "plugin"
        return Change(path, before, before, [f"the {what} file was changed; left alone"])
    settings = parse_settings(before.decode("utf-8", "replace"), str(path))
    entries = _entries(agent, command) + _legacy(agent, command)  # with --memory or not
    cleaned = remove_hooks(settings, entries, str(path))
    if cleaned == settings:
        return Change(path, before, before, ["nothing installed"])
    after = _keep_final_newline(before, dump_settings(cleaned))
    return Change(path, before, after, ["our entries removed"])


def install(
    agent: str,
    path: Path,
    data_dir: Path,
    *,
    dry_run: bool = False,
    mcp: bool = False,
    portable: bool = False,
    memory: bool = False,
) -> Change:
    """Install the hooks or plugin of ``agent`` (``mcp``: the MCP server) into ``path``
    (``portable``: a project's file, running ``PORTABLE_ARGV``; ``memory``: a fresh session
    starts with the project's digest, ``hooks.memory``)."""
    if memory and (mcp or agent not in MEMORY_AGENTS):
        what = "the MCP server" if mcp else agent
        raise UsageError(
            f"--memory is for the hooks of {', '.join(MEMORY_AGENTS)}: {what} has no session"
            " start to answer"
        )
    command = _command(agent, mcp, portable)
    change = plan_install(agent, path, command, mcp=mcp, memory=memory)
    if dry_run or not change.changed:
        return change
    manifest = _manifest(data_dir)
    if not (data_dir / MANIFEST).exists():
        manifest[MANIFEST_FOLDERS] = _missing_folders(data_dir)
    previous = manifest.get(_key(path, mcp))
    if previous is not None and previous.get("installed_sha256") != _sha(change.before):
        previous = None  # changed since: a new history, from the file as it is now
    backup = None
    if change.before is not None and previous is None:
        backup = backup_path(path)
        atomic_write(backup, change.before)
        change.notes.append(f"backup {backup}")
    folders = _missing_folders(path.parent)
    assert change.after is not None
    atomic_write(path, change.after, mode=_mode(path))
    manifest[_key(path, mcp)] = {
        "agent": agent,
        "mcp": mcp,
        "command": command,
        # Over our own earlier install (an upgrade): that one's original and folders stand.
        "created": previous["created"] if previous else change.before is None,
        "backup": previous["backup"] if previous else str(backup) if backup else None,
        "folders": previous.get("folders", []) if previous else folders,
        "installed_sha256": _sha(change.after),
    }
    _save_manifest(data_dir, manifest)
    return change


def uninstall(
    agent: str,
    path: Path,
    data_dir: Path,
    *,
    dry_run: bool = False,
    mcp: bool = False,
    portable: bool = False,
) -> Change:
    """Take out what ``install`` put into ``path`` (and its backup, and the folders it made
    once empty); returns the change."""
    manifest = _manifest(data_dir)
    record = manifest.get(_key(path, mcp))
    command = record["command"] if record else _command(agent, mcp, portable)
    change = plan_uninstall(agent, path, command, record, mcp=mcp)
    if dry_run or not change.changed:
        return change
    if change.after is None:
        path.unlink()
        change.notes.append("it did not exist before" if record else "the file held nothing else")
    else:
        atomic_write(path, change.after, mode=_mode(path))
    if record is not None:
        if record.get("backup"):
            Path(record["backup"]).unlink(missing_ok=True)
        _remove_empty_folders(record.get("folders", []))
    manifest.pop(_key(path, mcp), None)
    _save_manifest(data_dir, manifest)
    return change


def default_project() -> Path:
    """The project an ``--project`` install goes into: the current directory."""
    return Path(os.getcwd())
