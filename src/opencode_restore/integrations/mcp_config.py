"""``install AGENT --mcp``: the ``opencode-restore mcp`` server in each agent's MCP config.

Each agent keeps its MCP servers in its own file and shape; ours is one entry named
``opencode-restore`` there, merged in beside the user's others and taken out alone:

- Claude Code: ``~/.claude.json`` (user) or ``.mcp.json`` (project), ``mcpServers``, with
  ``"alwaysLoad": true`` so the tools are in the first request;
- Gemini CLI: ``settings.json`` of ``~/.gemini`` or ``.gemini``, ``mcpServers``;
- opencode: ``~/.config/opencode/opencode.json`` or ``opencode.json``, ``mcp``;
- Codex: ``$CODEX_HOME/config.toml`` (default ``~/.codex``), ``[mcp_servers.NAME]``, edited
  with tomlkit so the rest of the file keeps its comments and layout.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import tomlkit

from ..errors import UsageError
from .settings_json import SettingsError, dump_settings, parse_settings

SERVER_NAME = "opencode-restore"
MCP_AGENTS = ("claude", "codex", "gemini", "opencode")
#: Codex's time limit for one tool call, in seconds (its default is 60).
CODEX_TOOL_TIMEOUT = 300
#: The key of the servers' table in each agent's JSON config.
_JSON_KEY = {"claude": "mcpServers", "gemini": "mcpServers", "opencode": "mcp"}


def mcp_target(agent: str, scope: str, home: Path, project: Path) -> Path:
    """The file ``install AGENT --mcp`` writes for ``scope`` (``user`` or ``project``)."""
    if agent not in MCP_AGENTS:
        raise UsageError(f"unknown agent {agent!r}; choose one of: {', '.join(MCP_AGENTS)}")
    user = scope == "user"
    if agent == "claude":
        return home / ".claude.json" if user else project / ".mcp.json"
    if agent == "gemini":
        return (home if user else project) / ".gemini" / "settings.json"
    if agent == "opencode":
        return home / ".config/opencode/opencode.json" if user else project / "opencode.json"
    if not user:
        raise UsageError("codex reads MCP servers from its user config only; drop --project")
    codex_home = os.environ.get("CODEX_HOME")
    return (Path(codex_home) if codex_home else home / ".codex") / "config.toml"


def server_entry(agent: str, argv: list[str]) -> dict[str, Any]:
    """Our server as ``agent`` declares one: how to start ``argv + ["mcp"]``."""
    command = [*argv, "mcp"]
    if agent == "opencode":
        return {"type": "local", "command": command, "enabled": True}
    entry: dict[str, Any] = {"command": command[0], "args": command[1:]}
    if agent == "claude":
        # Claude Code otherwise defers MCP tools behind its tool search and sends a
        # one-shot (`claude -p`) prompt before they are loaded; alwaysLoad offers them in
        # the first request.
        return {"type": "stdio", **entry, "alwaysLoad": True}
    if agent == "codex":
        # A restore with a model may take longer than Codex's 60 s default per tool call.
        return {**entry, "tool_timeout_sec": CODEX_TOOL_TIMEOUT}
    return entry


def add_server(agent: str, text: str, argv: list[str], where: str) -> str:
    """``text`` (the config file, maybe empty) with our server in it."""
    entry = server_entry(agent, argv)
    if agent == "codex":
        doc = _toml(text, where)
        servers = doc.get("mcp_servers")
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc["mcp_servers"] = servers
        elif not isinstance(servers, dict):
            raise SettingsError(f"{where}: mcp_servers is not a table; nothing was written")
        table = tomlkit.table()
        table.update(entry)
        servers[SERVER_NAME] = table
        return tomlkit.dumps(doc)
    settings = parse_settings(text, where)
    key = _JSON_KEY[agent]
    servers = settings.get(key, {})
    if not isinstance(servers, dict):
        raise SettingsError(f"{where}: {key} is not a JSON object; nothing was written")
    return dump_settings({**settings, key: {**servers, SERVER_NAME: entry}})


def remove_server(agent: str, text: str, where: str) -> str | None:
    """``text`` without our server (None when it held none)."""
    if agent == "codex":
        doc = _toml(text, where)
        servers = doc.get("mcp_servers")
        if not isinstance(servers, dict) or SERVER_NAME not in servers:
            return None
        del servers[SERVER_NAME]
        if not servers:
            del doc["mcp_servers"]
        return tomlkit.dumps(doc)
    settings = parse_settings(text, where)
    key = _JSON_KEY[agent]
    servers = settings.get(key)
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return None
    rest = {k: v for k, v in servers.items() if k != SERVER_NAME}
    out = {k: v for k, v in settings.items() if k != key}
    if rest:
        out[key] = rest
    return dump_settings(out)


def _toml(text: str, where: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise SettingsError(
            f"{where}:{exc.line}: not valid TOML ({exc}); fix it first, nothing was written"
        ) from None
