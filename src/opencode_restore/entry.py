"""Console-script entry point.

`opencode-restore hook` runs on every agent event, so it must start fast: it is routed to
the hook receiver before the CLI framework and the readers are imported. So is
`opencode-restore mcp` (but for ``--help``): an agent waits for its MCP server's handshake.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Dispatch `hook` straight to the hook receiver; everything else to the click CLI."""
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from .hooks.receiver import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "mcp" and not {"-h", "--help"} & set(sys.argv[2:]):
        from .mcp.launch import main as mcp_main

        sys.exit(mcp_main(sys.argv[2:]))
    from .cli import main as cli_main

    cli_main()
