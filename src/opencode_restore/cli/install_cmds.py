"""``install`` and ``uninstall``: the agents' hooks, the opencode plugin, the pi extension."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from .exits import friendly_errors

agent_argument = click.argument(
    "agent", type=click.Choice(["claude", "codex", "gemini", "opencode", "pi"])
)
mcp_option = click.option(
    "--mcp",
    is_flag=True,
    help="The MCP server (`opencode-restore mcp`) in the agent's MCP config, not the hooks.",
)
scope_option = click.option(
    "--project/--user",
    "project",
    default=False,
    help="The current project's settings (.claude/, .gemini/, .opencode/, .pi/; they run "
    "`opencode-restore` from PATH, so a team can commit them) or the user's (default; they "
    "name this installation).",
)
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Print the change as a diff; write nothing."
)


def _run(
    agent: str, project: bool, dry_run: bool, remove: bool, mcp: bool, memory: bool = False
) -> None:
    from ..config import load_config
    from ..errors import UsageError
    from ..integrations.install import (
        CODEX_TRUST_NOTE,
        PORTABLE_ARGV,
        companion_paths,
        companion_still_needed,
        default_project,
        install,
        target_path,
        uninstall,
    )
    from ..integrations.mcp_config import mcp_target

    if agent == "pi" and mcp:
        raise UsageError("pi reads no MCP config: `install pi` puts in its extension")
    scope = "project" if project else "user"
    where = mcp_target if mcp else target_path
    main = where(agent, scope, Path.home(), default_project())
    data_dir = load_config().data_dir
    paths = [main] + ([] if mcp else companion_paths(agent, main, Path.home()))
    # Taken out in the reverse order: the folders the first file's install made go last,
    # once the files put in them are gone.
    for path in reversed(paths) if remove else paths:
        if remove and path != main and companion_still_needed(path, Path.home(), data_dir, main):
            click.echo(f"{agent}: kept {path} (another opencode plugin of ours uses it)")
            continue
        if remove:
            change = uninstall(agent, path, data_dir, dry_run=dry_run, mcp=mcp, portable=project)
        else:
            change = install(
                agent, path, data_dir, dry_run=dry_run, mcp=mcp, portable=project, memory=memory
            )
        if dry_run:
            click.echo(change.diff() or f"{path}: no change", nl=False)
            if not change.diff():
                click.echo()
            continue
        what = "; ".join(change.notes)
        verb = ("removed from" if remove else "installed in") if change.changed else "unchanged:"
        click.echo(f"{agent}: {verb} {path}" + (f" ({what})" if what else ""))
        if agent == "codex" and not mcp and not remove:
            click.echo(f"codex: {CODEX_TRUST_NOTE}")
    if project and not remove and shutil.which(PORTABLE_ARGV[0]) is None:
        click.echo(
            f"{agent}: note: the project's files run `{PORTABLE_ARGV[0]}` from PATH (so they "
            "work for everyone who commits them), and this PATH has none: add ~/.local/bin "
            "to PATH (./install.sh links it there)"
        )


@click.command("install")
@agent_argument
@scope_option
@dry_run_option
@mcp_option
@click.option(
    "--memory",
    is_flag=True,
    help="claude / codex / gemini: start each fresh session with a digest of the project's "
    "recent sessions (from their saved restorations; installing without it turns it off).",
)
@friendly_errors
def install_cmd(agent: str, project: bool, dry_run: bool, mcp: bool, memory: bool) -> None:
    """Make AGENT hand its sessions to opencode-restore.

    claude / gemini: hook entries merged into settings.json (other entries untouched, a
    backup kept; SessionStart answers compact / clear / resume with the restoration).
    codex: the same hooks in $CODEX_HOME/hooks.json (Codex asks you to trust them once,
    with /hooks).
    opencode: the plugin copied into the plugins folder (and two lines in that config
    folder's .npmrc so an offline start does not wait on npm). pi: the extension copied
    into its extensions folder. With --mcp (codex too): the MCP server added to the
    agent's MCP config. Installing twice changes nothing.
    """
    _run(agent, project, dry_run, remove=False, mcp=mcp, memory=memory)


@click.command("uninstall")
@agent_argument
@scope_option
@dry_run_option
@mcp_option
@friendly_errors
def uninstall_cmd(agent: str, project: bool, dry_run: bool, mcp: bool) -> None:
    """Take out exactly what `install AGENT` added (the file's earlier bytes when unchanged),
    its backup and the folders it made."""
    _run(agent, project, dry_run, remove=True, mcp=mcp)
