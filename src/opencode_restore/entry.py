"""Console-script entry point.

`opencode-restore hook` runs on every agent event, so it must start fast: it is routed to
the hook receiver before the CLI framework and the readers are imported. So is
`opencode-restore mcp` (but for ``--help``): an agent waits for its MCP server's handshake.

A reader that stops early (``opencode-restore messages ID | head -1``) is handled here,
once for every command, as Python's documentation of SIGPIPE recommends: stdout is
pointed at /dev/null, so the flush at exit cannot fail again and print "Exception
ignored", and the exit code is 141, what the shell reports for ``cat`` or ``grep`` cut
off the same way (128 + SIGPIPE). Not 0: the output was not all written, and a script
under ``set -o pipefail`` should see that as it would for any other tool. But for `hook`,
whose status is its contract with the agent (0 unless hook.log cannot be written).
"""

from __future__ import annotations

import os
import sys

#: 128 + SIGPIPE: the status of a process the closed pipe would have killed.
EXIT_PIPE_CLOSED = 141


def main() -> None:
    """Run the command; a closed stdout ends it quietly with `EXIT_PIPE_CLOSED`."""
    try:
        try:
            _dispatch()
        finally:
            # Flushed here rather than at interpreter exit, so a closed pipe is met inside
            # this try and not reported by the interpreter as an ignored exception. (None:
            # started with no stdout at all, ``>&-``.)
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        sys.exit(EXIT_PIPE_CLOSED)


def _discard_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for the closed pipe goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _dispatch() -> None:
    """Route `hook` straight to the hook receiver, `mcp` to its launcher; the rest to click."""
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from .hooks.receiver import main as hook_main

        status = hook_main(sys.argv[2:])
        try:
            sys.stdout.flush()
        except BrokenPipeError:  # the agent stopped reading; the status is the contract
            _discard_stdout()
        sys.exit(status)
    if len(sys.argv) > 1 and sys.argv[1] == "mcp" and not {"-h", "--help"} & set(sys.argv[2:]):
        from .mcp.launch import main as mcp_main

        sys.exit(mcp_main(sys.argv[2:]))
    from .cli import main as cli_main

    cli_main()
