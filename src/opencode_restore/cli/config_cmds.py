"""The ``config`` group: ``config show``."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from .exits import friendly_errors
from .options import provider_options


@click.group("config")
def config_group() -> None:
    """The configuration: packaged defaults < user file < OPENCODE_RESTORE_* env < flags."""


@config_group.command("show")
@provider_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@friendly_errors
def show(model: str | None, base_url: str | None, config_path: Path | None, fmt: str) -> None:
    """Print the effective configuration, each key with where its value came from
    (default, user file, --config file, env VARIABLE or flag)."""
    from ..config import effective_settings

    settings = effective_settings(
        config_path, overrides={"llm": {"model": model, "base_url": base_url}}
    )
    if fmt == "json":
        data = {s.key: {"value": s.value, "source": s.source} for s in settings}
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
        return
    shown = [(s.key, orjson.dumps(s.value).decode(), s.source) for s in settings]
    # Long values (the terminal reader's patterns) would push every comment off screen.
    width = min(max(len(key) + len(value) for key, value, _ in shown) + 3, 48)
    for key, value, source in shown:
        click.echo(f"{f'{key} = {value}':<{width}}  # {source}")
