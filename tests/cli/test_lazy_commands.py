"""The lazy group's table (`COMMANDS`) cannot drift from the command modules it stands for."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click
from click.shell_completion import CompletionItem
from click.testing import CliRunner

import opencode_restore.cli as cli_package
from opencode_restore.cli import COMMANDS, cli


def _defined_commands() -> dict[str, click.Command]:
    """Every top-level command the cli modules define: the click commands at module level
    that are not a subcommand of another one (``config show`` belongs to ``config``)."""
    found: dict[int, click.Command] = {}
    for info in pkgutil.iter_modules(cli_package.__path__):
        module = importlib.import_module(f"{cli_package.__name__}.{info.name}")
        found.update({id(v): v for v in vars(module).values() if isinstance(v, click.Command)})
    nested = {
        id(sub)
        for group in found.values()
        if isinstance(group, click.Group)
        for sub in group.commands.values()
    }
    return {c.name or "": c for key, c in found.items() if key not in nested}


def _eager() -> click.Group:
    """The group as click would build it from the real commands (what it was before)."""
    return click.Group("opencode-restore", commands=_defined_commands())


def test_the_table_lists_exactly_the_commands_the_modules_define() -> None:
    assert sorted(COMMANDS) == sorted(_defined_commands())


def test_each_entry_loads_its_command_and_holds_its_short_help() -> None:
    ctx = click.Context(cli)
    for name, entry in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is _defined_commands()[name]
        assert entry.help == command.get_short_help_str(limit=sys.maxsize)


def test_help_lists_the_commands_as_the_real_ones_would() -> None:
    def listing(group: click.Group) -> str:
        formatter = click.HelpFormatter(width=80)
        group.format_commands(click.Context(group), formatter)
        return formatter.getvalue()

    lazy = listing(cli)
    assert lazy == listing(_eager())
    assert "\n  export-branch  Write the path from the root to entry --leaf of FILE" in lazy


def test_completion_offers_the_commands_as_the_real_ones_would() -> None:
    def offered(group: click.Group, incomplete: str) -> list[tuple[str, str | None]]:
        # The group's own context settings, as click's completion builds it: a bare
        # Context makes click (8.2+) cache a help option without -h on the shared group.
        ctx = click.Context(group, **group.context_settings)
        items: list[CompletionItem] = group.shell_complete(ctx, incomplete)
        return [(item.value, item.help) for item in items]

    assert offered(cli, "") == offered(_eager(), "")
    assert [value for value, _ in offered(cli, "re")] == ["report", "restore"]
    assert ("--version", "Show the version and exit.") in offered(cli, "--")


def test_an_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["restor"])
    assert result.exit_code == 2
    assert "No such command 'restor'" in result.output
