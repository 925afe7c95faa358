"""The warning sink of a command line run: the first warnings on stderr, then a count.

A log with a million bad lines must not print a million lines: `command_sink` reports the
first `SHOWN_WARNINGS` and prints one summary line when the click command ends (even when
it ends in an error).
"""

from __future__ import annotations

import click

from .diagnostics import WarningSink, stderr_sink


def command_sink(quiet: bool = False) -> WarningSink:
    """A silent sink when ``quiet``; else `stderr_sink`, summarized when the command ends."""
    if quiet:
        return WarningSink()
    sink = stderr_sink()

    def summarize() -> None:
        if (line := sink.summary()) is not None:
            click.echo(f"warning: {line}", err=True)

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(summarize)
    return sink
