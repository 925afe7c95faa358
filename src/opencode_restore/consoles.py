"""Rich consoles for the commands, coloured as the command line asks.

``--color/--no-color`` (kept by click as the context's ``color``) wins; without it,
``NO_COLOR`` (https://no-color.org) turns styling off, and otherwise rich decides from
the terminal. Off means no escape codes at all: rich alone would keep bold and dim.
"""

from __future__ import annotations

import os

import click
from rich.console import Console


def use_color() -> bool | None:
    """True or False when the command line or ``NO_COLOR`` decides, None for automatic."""
    ctx = click.get_current_context(silent=True)
    color = ctx.color if ctx is not None else None
    if color is None and os.environ.get("NO_COLOR"):
        return False
    return color


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr) that follows `use_color`.

    Emoji codes are left as they are: rich would turn the model ``openai:x:`` of an
    error into "openai❌", and a log's text into pictures.
    """
    color = use_color()
    if color is False:
        return Console(stderr=stderr, color_system=None, emoji=False)
    return Console(stderr=stderr, force_terminal=True if color else None, emoji=False)
