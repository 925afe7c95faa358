"""Where a hook-registered transcript may be: checked when registered and again when read.

A hook payload is untrusted, and the file it names is read later by ``GET /messages``
and ``restore <id>``. Checking the place only when the hook registered it let a path
named before it existed, or a symlink re-pointed afterwards, serve a file outside the
home folder. So `place_refusal` resolves the path *now* (every symlink) and is asked by
the hook receiver and by every reader of a registered chain (`read_refusal`).

The hook imports this on every agent event: only ``os`` and ``stat``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

#: How each agent's transcripts are named.
SUFFIXES = {
    "claude-code": (".jsonl",),
    "codex": (".jsonl",),
    "gemini": (".json", ".jsonl"),
    "pi": (".jsonl",),
    "opencode": (".db", ".json", f"{os.sep}storage"),  # storage: opencode's older store tree
}
#: The source of a chain file a hook registered (the other sources are our own scans).
HOOK_SOURCE = "hook"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def agent_folder(agent: str, env: Mapping[str, str]) -> str | None:
    """The agent's own folder when its environment moves it out of the home folder."""
    if agent == "claude-code":
        return env.get("CLAUDE_CONFIG_DIR")
    if agent == "codex":
        return env.get("CODEX_HOME")
    if agent == "opencode" and env.get("XDG_DATA_HOME"):
        return os.path.join(env["XDG_DATA_HOME"], "opencode")
    return None


def place_refusal(
    path: str, agent: str, env: Mapping[str, str] | None = None
) -> tuple[str | None, str, str | None]:
    """Why ``path``, its symlinks resolved now, is no place for ``agent``'s transcript.

    Returns ``(reason or None, the real path, the matching suffix)``: the place must be
    under the home folder or the agent's own folder and the name the agent's.
    """
    env = os.environ if env is None else env
    real = os.path.realpath(path)
    suffixes = SUFFIXES.get(agent)
    if suffixes is None:
        return f"no transcript is registered for agent {agent!r}", real, None
    suffix = next((x for x in suffixes if real.endswith(x)), None)
    if suffix is None:
        return f"{agent} transcripts end in {' or '.join(suffixes)}", real, None
    roots = [env.get("HOME") or os.path.expanduser("~"), agent_folder(agent, env)]
    real_roots = [os.path.realpath(r) for r in roots if r]
    if not any(_inside(real, r) for r in real_roots if r != os.sep):
        return f"outside the home folder and {agent}'s own folder", real, suffix
    return None, real, suffix


def kind_refusal(real: str, suffix: str) -> str | None:
    """Why the existing file at ``real`` is no transcript by its type, or None."""
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be checked ({exc.strerror})"
    if suffix.endswith("storage"):
        return None if stat.S_ISDIR(info.st_mode) else "not opencode's storage folder"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    return None


def read_refusal(
    path: str, agent: str, source: str, env: Mapping[str, str] | None = None
) -> str | None:
    """Why a chain file may not be read now, or None: hook-registered files are checked
    again (place and type, symlinks resolved at this moment); scanned ones were found in
    the agents' own folders by us."""
    if source != HOOK_SOURCE:
        return None
    why, real, suffix = place_refusal(path, agent, env)
    if why is None and suffix is not None:
        why = kind_refusal(real, suffix)
    return why
