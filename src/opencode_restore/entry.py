"""Console-script entry point.

`opencode-restore hook` runs on every agent event, so it must start fast: it is routed to
the hook receiver before the CLI framework and the readers are imported.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Dispatch `hook` straight to the hook receiver; everything else to the click CLI."""
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from .hooks.receiver import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    from .cli import main as cli_main

    cli_main()
