"""The ``mcp`` command: the session history as MCP tools over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import UsageError
from .exits import friendly_errors
from .options import provider_options

INSTALL_HINT = (
    "the MCP server needs the mcp extra: pip install 'opencode-restore[mcp]' "
    "(or: pipx inject opencode-restore mcp)"
)


@click.command("mcp")
@provider_options
@friendly_errors
def mcp_command(model: str | None, base_url: str | None, config_path: Path | None) -> None:
    """Serve the session history to an agent over MCP (stdio): list_sessions,
    restore_session, get_messages, search_log."""
    try:
        from ..mcp.server import run
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "mcp":
            raise UsageError(INSTALL_HINT) from None
        raise
    from ..config import load_config

    config = load_config(config_path, overrides={"llm": {"model": model, "base_url": base_url}})
    if sys.stdin.isatty():
        click.echo(
            "opencode-restore mcp speaks MCP on stdin/stdout; an agent starts it "
            "(see `opencode-restore install AGENT --mcp`)",
            err=True,
        )
    run(config)
