"""Slash commands typed into an agent's TUI: which ones ask the model for something.

A command that only acts on the program (switch the model, show the cost, open a dialog)
sends the model nothing, so it is no user request. A prompt command (custom, plugin and
skill commands, ``/init``, ``/review``) sends a prompt and is one. Readers that see the
prompt a command expanded to decide by that; this list decides when they cannot.
``/compact`` and ``/clear`` are listed: readers model them as a compaction and as the
end of a conversation, never as requests.
"""

from __future__ import annotations

#: Built-in local commands of Claude Code, Codex and opencode (names without the slash).
LOCAL_COMMANDS = frozenset(
    [
        "add-dir",
        "agents",
        "approvals",
        "bashes",
        "bug",
        "clear",
        "compact",
        "config",
        "connect",
        "context",
        "copy",
        "cost",
        "details",
        "diff",
        "doctor",
        "editor",
        "exit",
        "experimental",
        "export",
        "extra-usage",
        "fast",
        "feedback",
        "help",
        "hooks",
        "ide",
        "install-github-app",
        "keybindings",
        "limits",
        "login",
        "logout",
        "mcp",
        "mcps",
        "memory",
        "mention",
        "migrate-installer",
        "model",
        "models",
        "new",
        "output-style",
        "permissions",
        "plugin",
        "plugins",
        "privacy-settings",
        "quit",
        "redo",
        "release-notes",
        "remote-env",
        "rename",
        "resume",
        "rewind",
        "sandbox",
        "sessions",
        "settings",
        "share",
        "stats",
        "status",
        "statusline",
        "tasks",
        "terminal-setup",
        "theme",
        "themes",
        "thinking",
        "timeline",
        "todos",
        "undo",
        "unshare",
        "upgrade",
        "usage",
        "vim",
    ]
)


def is_local_command(name: str) -> bool:
    """True when ``name`` (``/model``, with or without its slash) is a built-in command
    that acts on the program only."""
    return name.strip().lstrip("/").lower() in LOCAL_COMMANDS
