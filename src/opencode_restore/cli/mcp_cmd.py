"""The ``mcp`` command: the session history as MCP tools over stdio.

``opencode-restore mcp`` itself is routed by ``entry`` straight to ``mcp.launch`` (the
command line's modules are not imported); this command is what ``--help`` lists and what
runs when the CLI is invoked in process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import UsageError
from ..mcp.launch import INSTALL_HINT, has_sdk, run_server
from .exits import friendly_errors
from .options import provider_options


@click.command("mcp")
@provider_options
@friendly_errors
def mcp_command(model: str | None, base_url: str | None, config_path: Path | None) -> None:
    """Serve the session history to an agent over MCP (stdio): list_sessions,
    restore_session, get_messages, search_log."""
    if not has_sdk():
        raise UsageError(INSTALL_HINT)
    sys.exit(run_server(model, base_url, config_path))
